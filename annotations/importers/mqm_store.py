"""After the one writer stored an MQM plan's items: its finished evaluations and their error spans.

Runs in the import's transaction (annotations.importers.import_items), so a category outside the
project's typology, or an output that differs from the one the project holds, leaves nothing stored.
A rating the project already holds (the same file imported again) is skipped and counted.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.utils import timezone

from annotations.importers.base import ImportDataError, Origin, fail, shown
from annotations.importers.existing import chunks
from annotations.importers.mqm import MqmPlan
from annotations.importers.store import ImportReport
from annotations.models import ErrorSpan, Evaluation, Item, PostEdit, Project
from annotations.roles import ANNOTATOR, is_annotator, set_role
from annotations.typology import TypologyError

BULK_SIZE = 2000


def evaluations_store(*, project: Project, plan: MqmPlan, report: ImportReport) -> None:
    try:
        typology = project.typology()
    except TypologyError as exc:
        raise ImportDataError(
            f"the project's typology is malformed: {exc.message}", file="-", field=exc.field
        ) from None
    for rating in plan.evaluations:
        for error in rating.errors:
            try:
                typology.check_category(error.category)
            except TypologyError as exc:
                raise fail(
                    f"{exc.message} (set the project's categories to import it)", error.origin, "category"
                ) from None
    items = _items(project, plan)
    raters = _raters(plan, report)
    stored = _stored(items, raters)
    now = timezone.now()
    new = [r for r in plan.evaluations if (items[r.seg_id][0], raters[r.rater].pk, r.system) not in stored]
    report.evaluations_skipped = len(plan.evaluations) - len(new)
    for low in range(0, len(new), BULK_SIZE):
        chunk = new[low : low + BULK_SIZE]
        evaluations = Evaluation.objects.bulk_create(
            [
                Evaluation(
                    item_id=items[row.seg_id][0],
                    rater=raters[row.rater],
                    system=row.system,
                    text=row.text,
                    status=Evaluation.SUBMITTED,
                    origin=PostEdit.IMPORTED,
                    origin_detail={"format": plan.fmt, "file": row.origin.file, "line": row.origin.line},
                    submitted_at=now,
                )
                for row in chunk
            ]
        )
        ErrorSpan.objects.bulk_create(
            [
                ErrorSpan(
                    evaluation=evaluation,
                    position=n,
                    side=error.side,
                    start=error.start,
                    end=error.end,
                    open_end=error.open_end,
                    category=error.category,
                    severity=error.severity,
                    comment=error.comment,
                )
                for evaluation, row in zip(evaluations, chunk, strict=True)
                for n, error in enumerate(row.errors)
            ],
            batch_size=BULK_SIZE,
        )
    report.evaluations_created = len(new)
    report.error_spans_created = sum(len(row.errors) for row in new)


def _items(project: Project, plan: MqmPlan) -> dict[str, tuple[int, dict]]:
    """seg_id -> (item id, outputs); an output the project holds must be the file's."""
    items = {
        external_id: (pk, outputs)
        for ids in chunks([row.external_id for row in plan.items])
        for external_id, pk, outputs in Item.objects.filter(project=project, external_id__in=ids).values_list(
            "external_id", "pk", "outputs"
        )
    }
    for rating in plan.evaluations:
        outputs = items[rating.seg_id][1]
        held = outputs.get(rating.system) if isinstance(outputs, dict) else None
        if held != rating.text:
            what = "has no output" if held is None else "holds a different output"
            raise fail(
                f"the project's item {shown(rating.seg_id)} {what} for system {shown(rating.system)}",
                rating.origin,
                "target",
            )
    return items


def _raters(plan: MqmPlan, report: ImportReport) -> dict:
    """Every rater's account: an existing annotator, or a new inactive one (it only owns imported work)."""
    first: dict[str, Origin] = {}
    for rating in plan.evaluations:
        first.setdefault(rating.rater, rating.origin)
    User = get_user_model()
    users = {user.username: user for user in User.objects.filter(username__in=list(first))}
    for name, user in users.items():
        if not is_annotator(user):
            raise fail(
                f"user {shown(name)} exists and is not an annotator; ratings are only attached to "
                "annotator accounts (use --annotator-prefix)",
                first[name],
                "rater",
            )
    for name in first:
        if name not in users:
            user = User(username=name, is_active=False)
            user.set_unusable_password()
            user.save()
            set_role(user, ANNOTATOR)
            report.annotators_created.append(name)
            users[name] = user
    return users


def _stored(items: dict[str, tuple[int, dict]], raters: dict) -> set[tuple[int, int, str]]:
    ids = [pk for pk, _ in items.values()]
    return {
        found
        for chunk in chunks(ids)
        for found in Evaluation.objects.filter(
            item_id__in=chunk, rater__in=list(raters.values()), post_edit__isnull=True
        ).values_list("item_id", "rater_id", "system")
    }
