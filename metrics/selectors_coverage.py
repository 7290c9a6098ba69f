"""How many of a project's submitted post-edits have a stored value of each metric in each variant:
the metrics page's table, read from the counts the database keeps as values, post-edits, assignments and
items change (metrics.coverage_kept; two small reads, whatever the project's size), or recounted from the
rows (metric_coverage_recounted, two queries that read every post-edit and value of the project).

The counts follow compute_plan's rules (metrics.services): a value is not applicable in the
`with_references` variant of an item without references nor, for a gold-based metric, in that variant
at all or on an item without gold edits (a value stored for such a post-edit counts as not applicable,
as the plan counts it). A stored value is up to date when the metric's current version computed it
and stale when an older version did. The texts' fingerprint (input_hash) is not compared here: that
needs every post-edit's texts; a computation compares it and recomputes the values whose texts
changed since.
"""

from collections.abc import Sequence

from django.db.models import BooleanField, Case, Count, F, IntegerField, Max, Q, QuerySet, Subquery, Value, When
from django.db.models.expressions import ExpressionWrapper

from annotations.models import Assignment, PostEdit, Project
from metrics import text as text_metrics
from metrics.models import CoveragePostEdits, CoverageValues, MetricValue
from metrics.selectors import VARIANTS, post_edit_queryset
from metrics.services import Coverage, resolve_metrics, resolve_variants

GOLD_FAMILY = "gold-based"
# The project's post-edits are dense among all when they are at least 1/_DENSE of the highest post-edit id.
_DENSE = 4

# JSON values that hold no document and no gold edit (reference_texts and the gold edits' reading give
# nothing for them); SQL NULL too.
_EMPTY: tuple[object, ...] = (None, "", [], {})
_NO_GOLD = (*_EMPTY, 0, False)


def _none_of(field: str, values: Sequence) -> Q:
    """`field` holds something: neither SQL NULL nor one of the JSON `values`."""
    empty = Q(**{f"{field}__isnull": True})
    for value in values:
        empty |= Q(**{field: value})  # None: JSON null
    return ~empty


def _holds(field: str, values: Sequence) -> Case:
    return Case(When(_none_of(field, values), then=Value(True)), default=Value(False), output_field=BooleanField())


def _applies(name: str, variant: str, *, references: bool, gold: bool) -> bool:
    """compute_plan's rule, for a post-edit whose item has (or has not) references and gold edits."""
    metric = text_metrics.METRICS[name]
    if variant == MetricValue.WITH_REFERENCES and (not references or metric.family == GOLD_FAMILY):
        return False
    return metric.applies_to(references=("",) if references else (), gold=("",) if gold else ())


def metric_coverage(
    *, project: Project, metrics: Sequence[str] | None = None, variants: Sequence[str] = VARIANTS
) -> tuple[int, dict[tuple[str, str], Coverage]]:
    """(post-edit count, coverage per (metric, variant)) of the project's submitted post-edits, simulated
    ones included (those compute_metrics computes), from the counts the database keeps as they change
    (metrics.coverage_kept): two reads of a few rows, whatever the project's size."""
    metric_names = resolve_metrics(metrics)
    variant_names = resolve_variants(variants)
    per_kind = {
        (row["has_references"], row["has_gold"]): row["n"]
        for row in CoveragePostEdits.objects.filter(project_id=project.pk, n__gt=0).values(
            "has_references", "has_gold", "n"
        )
    }
    stored = CoverageValues.objects.filter(
        project_id=project.pk, metric__in=metric_names, variant__in=variant_names, n__gt=0
    ).values("metric", "variant", "metric_version", "has_references", "has_gold", "n")
    return _cells(metric_names, variant_names, per_kind, stored)


def metric_coverage_recounted(
    *, project: Project, metrics: Sequence[str] | None = None, variants: Sequence[str] = VARIANTS
) -> tuple[int, dict[tuple[str, str], Coverage]]:
    """metric_coverage counted from the rows: the post-edits counted by kind in one aggregate, then
    the stored values grouped by metric, variant and version (and by kind, read from the items, unless all
    post-edits are of one kind). What the kept counts are checked against."""
    metric_names = resolve_metrics(metrics)
    variant_names = resolve_variants(variants)
    references = "assignment__item__references"
    gold = "assignment__item__gold_edits"
    post_edits = post_edit_queryset(project=project, include_simulated=True).order_by()
    with_references, with_gold = _none_of(references, _EMPTY), _none_of(gold, _NO_GOLD)
    counts = post_edits.aggregate(
        n=Count("id"),
        references=Count("id", filter=with_references),
        gold=Count("id", filter=with_gold),
        both=Count("id", filter=with_references & with_gold),
        # The highest post-edit id of any project (an uncorrelated subquery, read once): how dense the
        # project's post-edits are among all, for the choice below.
        highest=Max(Subquery(PostEdit.objects.order_by("-pk").values("pk")[:1])),
    )
    # (has references, has gold edits) -> post-edits, the kinds the project holds
    per_kind = {
        kind: n
        for kind, n in {
            (True, True): counts["both"],
            (True, False): counts["references"] - counts["both"],
            (False, True): counts["gold"] - counts["both"],
            (False, False): counts["n"] - counts["references"] - counts["gold"] + counts["both"],
        }.items()
        if n
    }
    values = MetricValue.objects.filter(
        post_edit__assignment__item__project=project,
        post_edit__assignment__status=Assignment.SUBMITTED,
        post_edit__assignment__reviews__isnull=True,  # first-pass work only, as the post-edits counted
        metric__in=metric_names,
        variant__in=variant_names,
    ).order_by()
    stored: QuerySet
    if len(per_kind) == 1:
        # Every post-edit is of one kind (commonly: no references, no gold edits): so is every value.
        (has_references, has_gold), _ = next(iter(per_kind.items()))
        if counts["n"] * _DENSE >= (counts["highest"] or 0):
            # Most post-edits are the project's: the values are read in the (metric, variant, version,
            # post-edit) index's order, each kept when its post-edit is one of the project's submitted ones
            # (their ids read once, compared through an expression no index answers, so that the database
            # scans the values in that order and groups them as they come, where a join reads every value's
            # row through its post-edit and sorts them all).
            kept = ExpressionWrapper(F("post_edit_id") + 0, output_field=IntegerField())
            values = MetricValue.objects.filter(metric__in=metric_names, variant__in=variant_names).order_by()
            values = values.alias(kept=kept).filter(kept__in=Subquery(post_edits.values("id")))
        stored = values.values("metric", "variant", "metric_version").annotate(
            n=Count("id"), has_references=Value(has_references), has_gold=Value(has_gold)
        )
    else:
        stored = values.values(
            "metric",
            "variant",
            "metric_version",
            has_references=_holds(f"post_edit__{references}", _EMPTY),
            has_gold=_holds(f"post_edit__{gold}", _NO_GOLD),
        ).annotate(n=Count("id"))
    return _cells(metric_names, variant_names, per_kind, stored)


def _cells(
    metric_names: Sequence[str], variant_names: Sequence[str], per_kind: dict[tuple[bool, bool], int], stored
) -> tuple[int, dict[tuple[str, str], Coverage]]:
    """The coverage table from the post-edits per kind and the stored values' rows (metric, variant,
    metric_version, has_references, has_gold, n)."""
    coverage = {(m, v): Coverage() for m in metric_names for v in variant_names}
    for (m, v), cell in coverage.items():
        for (has_references, has_gold), n in per_kind.items():
            if _applies(m, v, references=has_references, gold=has_gold):
                cell.missing += n
            else:
                cell.not_applicable += n
    for row in stored:
        cell = coverage[(row["metric"], row["variant"])]
        if not _applies(row["metric"], row["variant"], references=row["has_references"], gold=row["has_gold"]):
            continue  # counted as not applicable above
        cell.missing -= row["n"]
        if row["metric_version"] == str(text_metrics.METRICS[row["metric"]].version):
            cell.up_to_date += row["n"]
        else:
            cell.stale += row["n"]
    return sum(per_kind.values()), coverage
