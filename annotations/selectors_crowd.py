"""Crowd quality control, read: each participant's quality summary (attention checks, effort flags,
agreement with the others), their questionnaire answers, and the participants export's rows
(docs/quality.md, "Quality summary").

Agreement is metrics' output agreement (metrics.analysis.output_agreement, docs/agreement.md): over
the project's submitted human post-edits of non-practice items edited by two or more people (lab
annotators included), the symmetric compression distance of each pair of one item's post-edits;
a participant's figure is the mean over the pairs it is in, and `far` is that module's outlier flag.
"""

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from django.db.models import QuerySet

from annotations.models import Assignment, Participant, PostEdit, Project, Questionnaire, QuestionnaireAnswer
from annotations.services.participants_checks import CheckResults, check_results_by_user
from annotations.services.questionnaires import questions_of

AGREEMENT_METRIC = "compression"


@dataclass
class QualitySummary:
    checks: CheckResults
    allowed_failures: int = 0
    submitted: int = 0
    flagged_edits: int = 0
    flags: dict[str, int] = field(default_factory=dict)
    agreement_pairs: int = 0
    agreement_mean: float | None = None
    agreement_z: float | None = None
    far: bool = False

    @property
    def concerns(self) -> list[str]:
        """What speaks against approving the participant's work, for the person who pays."""
        found = []
        if self.checks.failed:
            found.append(f"failed {self.checks.failed} of {self.checks.total} attention check(s)")
        if self.flagged_edits:
            found.append(f"{self.flagged_edits} of {self.submitted} edit(s) flagged")
        if self.far:
            found.append("edits far from the others'")
        return found

    @property
    def verdict(self) -> str:
        if self.checks.failed > self.allowed_failures:
            return "reject"
        return "review" if self.concerns or self.checks.pending else "approve"


def _flags(user_ids: list[int], project: Project) -> dict[int, tuple[int, int, Counter]]:
    """Per user: submitted post-edits, flagged ones, and the flags' counts."""
    found: dict[int, tuple[int, int, Counter]] = {user_id: (0, 0, Counter()) for user_id in user_ids}
    rows = (
        PostEdit.objects.human()
        .filter(
            assignment__annotator_id__in=user_ids,
            assignment__item__project=project,
            assignment__status=Assignment.SUBMITTED,
            assignment__item__practice=False,
        )
        .values_list("assignment__annotator_id", "flags")
    )
    for user_id, flags in rows:
        submitted, flagged, counts = found[user_id]
        names = [str(flag) for flag in flags] if isinstance(flags, list) else []
        counts.update(names)
        found[user_id] = (submitted + 1, flagged + (1 if names else 0), counts)
    return found


def _agreement(project: Project, user_ids: list[int]) -> dict[str, Any]:
    """metrics' output agreement over the items participants edited, by editor (user id as text)."""
    from metrics.analysis.output_agreement import output_distances
    from metrics.text import METRICS

    edited = PostEdit.objects.human().filter(
        assignment__item__project=project,
        assignment__status=Assignment.SUBMITTED,
        assignment__item__practice=False,
    )
    items = edited.filter(assignment__annotator_id__in=user_ids).values("assignment__item_id")
    rows = list(
        edited.filter(assignment__item_id__in=items).values_list(
            "assignment__item_id", "assignment__annotator_id", "text"
        )
    )
    if len(rows) < 2:
        return {}
    metric = METRICS[AGREEMENT_METRIC]
    batch = metric.batch or (lambda pairs: [metric.func(a, b) for a, b in pairs])
    units, editors, texts = zip(*rows, strict=True)
    result = output_distances(
        [str(u) for u in units],
        [str(e) for e in editors],
        list(texts),
        distances={AGREEMENT_METRIC: batch},
        directions={AGREEMENT_METRIC: metric.direction},
    )[0]
    return {editor.editor: editor for editor in result.editors}


def quality_summaries(*, project: Project, participants: list[Participant]) -> dict[int, QualitySummary]:
    """Each participant's quality summary, by participant id."""
    user_ids = [participant.user_id for participant in participants]
    if not user_ids:
        return {}
    checks = check_results_by_user(user_ids=user_ids)
    flags = _flags(user_ids, project)
    agreement = _agreement(project, user_ids)
    summaries = {}
    for participant in participants:
        submitted, flagged, counts = flags[participant.user_id]
        summary = QualitySummary(
            checks=checks[participant.user_id],
            allowed_failures=participant.join_link.max_failed_checks if participant.join_link is not None else 0,
            submitted=submitted,
            flagged_edits=flagged,
            flags=dict(sorted(counts.items())),
        )
        distance = agreement.get(str(participant.user_id))
        if distance is not None:
            summary.agreement_pairs = distance.pairs
            summary.agreement_mean = distance.mean
            summary.agreement_z = distance.modified_z
            summary.far = distance.flagged
        summaries[participant.pk] = summary
    return summaries


def answers_by_user(*, project: Project, user_ids: list[int]) -> dict[int, dict[str, QuestionnaireAnswer]]:
    """Each user's answers by phase (consent, pre, post)."""
    found: dict[int, dict[str, QuestionnaireAnswer]] = {user_id: {} for user_id in user_ids}
    for answer in QuestionnaireAnswer.objects.filter(project=project, user_id__in=user_ids):
        found[answer.user_id][answer.phase] = answer
    return found


def quality_json(summary: QualitySummary) -> dict[str, Any]:
    """The summary as the API gives it (the export's column names)."""
    return {
        "checks_total": summary.checks.total,
        "checks_passed": summary.checks.passed,
        "checks_failed": summary.checks.failed,
        "checks_pending": summary.checks.pending,
        "flagged_edits": summary.flagged_edits,
        "flags": summary.flags,
        "agreement_pairs": summary.agreement_pairs,
        "agreement_mean_distance": summary.agreement_mean,
        "agreement_modified_z": summary.agreement_z,
        "agreement_far": summary.far,
        "verdict": summary.verdict,
        "concerns": summary.concerns,
    }


def answers_json(answers: dict[str, QuestionnaireAnswer]) -> dict[str, Any]:
    consent = answers.get(QuestionnaireAnswer.CONSENT)
    return {
        "consent": None if consent is None else ("agreed" if consent.consented else "declined"),
        "pre": answers["pre"].answers if "pre" in answers else None,
        "post": answers["post"].answers if "post" in answers else None,
    }


def export_columns(questionnaire: Questionnaire | None) -> list[str]:
    """The participants export's columns: the participant, its quality summary, its answers."""
    questions = [f"{phase}.{q.id}" for phase in ("pre", "post") for q in questions_of(questionnaire, phase)]
    return [*EXPORT_BASE, *questions]


EXPORT_BASE = [
    "slot",
    "platform_id",
    "study_id",
    "session_id",
    "outcome",
    "joined_at",
    "completed_at",
    "assigned",
    "submitted",
    "skipped",
    "checks_total",
    "checks_passed",
    "checks_failed",
    "checks_pending",
    "flagged_edits",
    "flags",
    "agreement_pairs",
    "agreement_mean_distance",
    "agreement_modified_z",
    "agreement_far",
    "verdict",
    "consent",
    "consent_at",
]


def export_rows(*, project: Project, participants: QuerySet) -> tuple[list[str], list[dict[str, Any]]]:
    """The participants export: one row per participant (project_participants' counts annotated)."""
    people = list(participants)
    questionnaire = Questionnaire.objects.filter(project=project).first()
    summaries = quality_summaries(project=project, participants=people)
    answers = answers_by_user(project=project, user_ids=[p.user_id for p in people])
    rows = []
    for participant in people:
        summary = summaries[participant.pk]
        mine = answers[participant.user_id]
        consent = mine.get(QuestionnaireAnswer.CONSENT)
        row: dict[str, Any] = {
            "slot": participant.slot,
            "platform_id": participant.platform_id,
            "study_id": participant.study_id,
            "session_id": participant.session_id,
            "outcome": participant.outcome or "working",
            "joined_at": participant.joined_at.isoformat(),
            "completed_at": participant.completed_at.isoformat() if participant.completed_at else "",
            "assigned": getattr(participant, "assigned", ""),
            "submitted": getattr(participant, "submitted", ""),
            "skipped": getattr(participant, "skipped", ""),
            "checks_total": summary.checks.total,
            "checks_passed": summary.checks.passed,
            "checks_failed": summary.checks.failed,
            "checks_pending": summary.checks.pending,
            "flagged_edits": summary.flagged_edits,
            "flags": ";".join(f"{name}={count}" for name, count in summary.flags.items()),
            "agreement_pairs": summary.agreement_pairs,
            "agreement_mean_distance": "" if summary.agreement_mean is None else round(summary.agreement_mean, 6),
            "agreement_modified_z": "" if summary.agreement_z is None else round(summary.agreement_z, 6),
            "agreement_far": summary.far,
            "verdict": summary.verdict,
            "consent": "" if consent is None else ("agreed" if consent.consented else "declined"),
            "consent_at": consent.answered_at.isoformat() if consent is not None else "",
        }
        for phase in ("pre", "post"):
            given = mine.get(phase)
            for question in questions_of(questionnaire, phase):
                row[f"{phase}.{question.id}"] = (given.answers or {}).get(question.id, "") if given else ""
        rows.append(row)
    return export_columns(questionnaire), rows
