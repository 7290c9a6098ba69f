"""Computing and storing metric values: incremental, chunked, safe to interrupt.

A stored value is up to date when it was computed by the metric's current version from
the post-edit's current texts; input_hash fingerprints those texts (original, edited,
references for the with_references variant, gold edits for gold-based metrics). Anything
else is missing or stale and gets (re)computed; nothing up to date is touched.

Not applicable, hence not stored (and removed if stored earlier):
- the `with_references` variant of an item without references: the variant would be the
  plain one under another name, and mixing the two would blur the comparison;
- gold-based metrics (needs "gold") for items without gold edits, and in the
  `with_references` variant at all (they judge the output against gold edits; references
  do not enter them, so that variant would repeat the plain value).
"""

import hashlib
import json
import logging
import math
from array import array
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import cast

from django.conf import settings
from django.db import connection, models, transaction
from django.db.models import QuerySet, TextField
from django.db.models.functions import Cast
from django.utils import timezone

from annotations.models import PostEdit, Project, start_text_of_post_edit
from annotations.references import reference_texts
from editlab.db import refresh_planner_statistics
from editlab.refusals import Refusal
from metrics import text as text_metrics
from metrics.models import MetricValue
from metrics.selectors import VARIANTS, post_edit_queryset

logger = logging.getLogger(__name__)

_PLAN_CHUNK = 2000
_GOLD_FAMILY = "gold-based"

ProgressCallback = Callable[[int, int], None]


@dataclass
class ComputeReport:
    """Counts are of (post-edit, metric, variant) values."""

    metrics: list[str]
    variants: list[str]
    computed: int = 0
    up_to_date: int = 0
    skipped: int = 0  # not applicable: no references / no gold edits
    removed: int = 0  # stored earlier, no longer applicable
    post_edits: int = 0

    def as_dict(self) -> dict:
        return {
            "metrics": self.metrics,
            "variants": self.variants,
            "post_edits": self.post_edits,
            "computed": self.computed,
            "up_to_date": self.up_to_date,
            "skipped": self.skipped,
            "removed": self.removed,
        }


class ComputeError(Refusal, ValueError):
    """A request that cannot be computed (unknown metric or variant, missing extra)."""


@dataclass
class Coverage:
    """How many post-edits of a selection have an up-to-date value of one metric in one variant."""

    up_to_date: int = 0
    stale: int = 0  # stored, but the texts or the metric's version changed since
    missing: int = 0
    not_applicable: int = 0  # no references (with_references) or no gold edits (gold-based)


@dataclass
class ComputePlan:
    """Which values a run must compute, decided before any scoring."""

    # (variant, metric names) -> post-edit ids needing those metrics in that variant
    groups: dict[tuple[str, tuple[str, ...]], array] = field(default_factory=lambda: defaultdict(lambda: array("q")))
    stale_inapplicable: list[int] = field(default_factory=list)
    coverage: dict[tuple[str, str], Coverage] = field(default_factory=lambda: defaultdict(Coverage))

    @property
    def total(self) -> int:
        return sum(len(ids) * len(names) for (_, names), ids in self.groups.items())

    def batches(self, size: int) -> Iterator[tuple[str, tuple[str, ...], list[int]]]:
        """(variant, metric names, up to `size` post-edit ids): the chunks of the run, in a stable order."""
        for (variant, names), ids in self.groups.items():
            for id_chunk in _chunks(ids, size):
                yield variant, names, list(id_chunk)


def resolve_metrics(metrics: Sequence[str] | None) -> list[str]:
    """Every available metric when None; otherwise the names, checked."""
    if metrics is None:
        return [name for name, metric in text_metrics.METRICS.items() if metric.available()]
    names = list(dict.fromkeys(metrics))
    unknown = [name for name in names if name not in text_metrics.METRICS]
    if unknown:
        raise ComputeError(f"unknown metric(s): {', '.join(unknown)}; known metrics: {', '.join(text_metrics.METRICS)}")
    for name in names:
        reason = text_metrics.METRICS[name].unavailable_reason()
        if reason is not None:
            raise ComputeError(f"metric {name} is not available here: {reason}")
    return names


def resolve_variants(variants: Sequence[str]) -> list[str]:
    names = list(dict.fromkeys(variants))
    unknown = [v for v in names if v not in VARIANTS]
    if unknown or not names:
        raise ComputeError(
            f"unknown variant(s): {', '.join(unknown) or '(none given)'}; choose from {', '.join(VARIANTS)}"
        )
    return names


_HASH_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def input_hash(*, original: str, edited: str, references: Sequence[str], gold: Sequence[str]) -> str:
    """Fingerprint of exactly the texts a value depends on (pass () for what it does not use)."""
    payload = _HASH_JSON([original, edited, list(references), list(gold)])
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class _Row:
    """A post-edit's texts; the item's references and gold edits stay JSON text until a metric, a hash or
    an applicability rule reads them (most runs of the usual metrics never do)."""

    id: int
    original: str
    edited: str
    references_json: str | None = field(default=None, repr=False)
    gold_json: str | None = field(default=None, repr=False)
    # input hashes by (references enter, gold enters): a row has at most four, each computed once
    _hashes: dict[tuple[bool, bool], str] = field(default_factory=dict, compare=False, repr=False)

    def hash_for(self, *, variant: str, needs_gold: bool) -> str:
        with_references = variant == MetricValue.WITH_REFERENCES and bool(self.references)
        with_gold = needs_gold and bool(self.gold)
        key = (with_references, with_gold)
        digest = self._hashes.get(key)
        if digest is None:
            digest = self._hashes[key] = input_hash(
                original=self.original,
                edited=self.edited,
                references=self.references if with_references else (),
                gold=self.gold if with_gold else (),
            )
        return digest

    @cached_property
    def references(self) -> tuple[str, ...]:
        return reference_texts(_decode(self.references_json))

    @cached_property
    def gold(self) -> tuple[str, ...]:
        return _texts(_decode(self.gold_json))


def _decode(raw: str | None):
    return None if raw is None else json.loads(raw)


def _texts(value) -> tuple[str, ...]:
    if not value:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(str(v) for v in value)


def _rows(post_edits: QuerySet[PostEdit]) -> Iterator[_Row]:
    values = post_edits.annotate(
        start_texts=start_text_of_post_edit(),
        references_json=Cast("assignment__item__references", TextField()),
        gold_json=Cast("assignment__item__gold_edits", TextField()),
    ).values_list("id", "start_texts", "text", "references_json", "gold_json")
    for pk, original, edited, references, gold in values.iterator(chunk_size=_PLAN_CHUNK):
        yield _Row(pk, original or "", edited or "", references, gold)


def _chunks(iterable, size: int) -> Iterator[list]:
    chunk: list = []
    for item in iterable:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def compute_plan(
    post_edits: QuerySet[PostEdit], metric_names: list[str], variants: list[str], report: ComputeReport
) -> ComputePlan:
    """Decide, without scoring anything, which values are missing or stale."""
    plan = ComputePlan()
    versions = {name: str(text_metrics.METRICS[name].version) for name in metric_names}
    needs_gold = {name: "gold" in text_metrics.METRICS[name].needs for name in metric_names}
    for rows in _chunks(_rows(post_edits), _PLAN_CHUNK):
        report.post_edits += len(rows)
        stored = {
            (pe, metric, variant): (pk, version, digest)
            for pk, pe, metric, variant, version, digest in MetricValue.objects.filter(
                post_edit_id__in=[row.id for row in rows], metric__in=metric_names, variant__in=variants
            ).values_list("id", "post_edit_id", "metric", "variant", "metric_version", "input_hash")
        }
        for row in rows:
            for variant in variants:
                todo: list[str] = []
                for name in metric_names:
                    key = (row.id, name, variant)
                    if not _applies(name, variant, row):
                        plan.coverage[(name, variant)].not_applicable += 1
                        report.skipped += 1
                        if key in stored:
                            plan.stale_inapplicable.append(stored[key][0])
                        continue
                    current = stored.get(key)
                    if current is None:
                        plan.coverage[(name, variant)].missing += 1
                        todo.append(name)
                    elif current[1:] != (versions[name], row.hash_for(variant=variant, needs_gold=needs_gold[name])):
                        plan.coverage[(name, variant)].stale += 1
                        todo.append(name)
                    else:
                        plan.coverage[(name, variant)].up_to_date += 1
                        report.up_to_date += 1
                if todo:
                    plan.groups[(variant, tuple(todo))].append(row.id)
    return plan


def _applies(name: str, variant: str, row: _Row) -> bool:
    metric = text_metrics.METRICS[name]
    if variant == MetricValue.WITH_REFERENCES and (metric.family == _GOLD_FAMILY or not row.references):
        return False
    return metric.applies_to(
        references=row.references if "references" in metric.needs else (),
        gold=row.gold if "gold" in metric.needs else (),
    )


def _pairs(rows: list[_Row], variant: str, names: Sequence[str]) -> list["text_metrics.Pair"]:
    """The pairs score_pairs gets: references and gold edits only when the variant or a metric reads them."""
    needs = set().union(*(text_metrics.METRICS[name].needs for name in names))
    references, gold = variant == MetricValue.WITH_REFERENCES or "references" in needs, "gold" in needs
    Pair = text_metrics.Pair
    return [Pair(r.original, r.edited, r.references if references else (), r.gold if gold else ()) for r in rows]


def _clean(value: float | None) -> float | None:
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) or math.isinf(value) else value


@transaction.atomic
def _store(rows: list[_Row], variant: str, names: tuple[str, ...], scores: dict[str, list]) -> int:
    """Upsert the chunk's values with one executemany: no model instance per value."""
    versions = {name: str(text_metrics.METRICS[name].version) for name in names}
    needs_gold = {name: "gold" in text_metrics.METRICS[name].needs for name in names}
    computed_at = MetricValue._meta.get_field("computed_at").get_db_prep_save(timezone.now(), connection)
    params = [
        (
            row.id,
            name,
            variant,
            _clean(scores[name][i]),
            versions[name],
            row.hash_for(variant=variant, needs_gold=needs_gold[name]),
            computed_at,
        )
        for name in names
        for i, row in enumerate(rows)
    ]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # One statement whose seven parameters are arrays: one round trip and one plan per chunk,
            # where executemany runs the statement once per value.
            cursor.execute(_upsert_sql(_UNNEST), [list(column) for column in zip(*params, strict=True)])
        else:
            cursor.executemany(_upsert_sql(f"VALUES ({', '.join(['%s'] * len(_STORED))})"), params)
    return len(params)


_STORED = ("post_edit", "metric", "variant", "value", "metric_version", "input_hash", "computed_at")
_UNNEST = (
    "SELECT * FROM unnest(%s::bigint[], %s::varchar[], %s::varchar[], %s::double precision[], %s::varchar[], "
    "%s::varchar[], %s::timestamptz[])"
)


def _upsert_sql(rows: str) -> str:
    """INSERT of the `rows` (VALUES or a SELECT), or, on a value's key (post-edit, metric, variant), UPDATE."""
    quote, meta = connection.ops.quote_name, MetricValue._meta
    columns = [quote(str(cast(models.Field, meta.get_field(name)).column)) for name in _STORED]
    return (
        f"INSERT INTO {quote(meta.db_table)} ({', '.join(columns)}) {rows} "
        f"ON CONFLICT ({', '.join(columns[:3])}) DO UPDATE SET {', '.join(f'{c} = EXCLUDED.{c}' for c in columns[3:])}"
    )


def _delete_inapplicable(pks: list[int]) -> int:
    removed = 0
    for chunk in _chunks(pks, _PLAN_CHUNK):
        with transaction.atomic():
            removed += MetricValue.objects.filter(pk__in=chunk).delete()[0]
    return removed


@dataclass(frozen=True)
class ScoredChunk:
    """A chunk's values, scored and not stored yet (metric_values_store writes them)."""

    rows: list[_Row]
    variant: str
    names: tuple[str, ...]
    scores: dict[str, list]


def compute_prepare(
    *,
    project: Project,
    metrics: Sequence[str] | None = None,
    variants: Sequence[str] = VARIANTS,
    post_edits: QuerySet[PostEdit] | None = None,
) -> tuple[ComputePlan, ComputeReport]:
    """Plan a run (no metric work) and remove the values that no longer apply."""
    metric_names = resolve_metrics(metrics)
    variant_names = resolve_variants(variants)
    selection = post_edit_queryset(project=project, include_simulated=True)
    if post_edits is not None:
        selection = selection.filter(pk__in=post_edits.values("pk"))
    report = ComputeReport(metrics=metric_names, variants=variant_names)
    plan = compute_plan(selection, metric_names, variant_names, report)
    report.removed = _delete_inapplicable(plan.stale_inapplicable)
    return plan, report


def metric_values_score(
    *,
    post_edit_ids: Sequence[int],
    variant: str,
    names: Sequence[str],
    processes: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> ScoredChunk:
    """Score one chunk from the texts stored now (a post-edit deleted since planning is left out).

    A metric failing on a pair raises ComputeError naming the post-edit; `progress(n)` reports n more
    values scored."""
    rows = list(_rows(PostEdit.objects.filter(pk__in=list(post_edit_ids)).order_by("pk")))
    scores: dict[str, list] = {}
    if rows:
        try:
            pairs = _pairs(rows, variant, names)
            scores = text_metrics.score_pairs(
                pairs, list(names), variant=variant, processes=processes, progress=progress
            )
        except text_metrics.MetricFailed as exc:
            # The chunk's index means nothing to a researcher; the post-edit's id does.
            raise ComputeError(
                f"{exc.metric} ({variant}) failed on post-edit #{rows[exc.pair_index].id}: {exc.detail}; "
                "the values of the chunks that finished are stored"
            ) from exc
    return ScoredChunk(rows=rows, variant=variant, names=tuple(names), scores=scores)


def metric_values_store(*, scored: ScoredChunk) -> int:
    """Upsert a scored chunk's values in one transaction (the caller's, when it has one); returns how many."""
    if not scored.rows:
        return 0
    return _store(scored.rows, scored.variant, scored.names, scored.scores)


def metric_values_compute(
    *,
    project: Project,
    metrics: Sequence[str] | None = None,
    variants: Sequence[str] = VARIANTS,
    post_edits: QuerySet[PostEdit] | None = None,
    progress: ProgressCallback | None = None,
    chunk_size: int | None = None,
    processes: int | None = None,
) -> ComputeReport:
    """Compute the missing and stale metric values of the project's submitted post-edits, in this process.

    Each chunk of post-edits is scored outside any transaction, then written in one
    transaction (bulk upsert): an interruption loses at most the chunk in flight, and the
    next run continues from there. `progress(done, total)` counts values; total is known
    after a planning pass that does no metric work. (A MetricJob spreads the same chunks
    over the task engine's workers: metrics.jobs.)
    """
    chunk_size = chunk_size or settings.EDITLAB_METRIC_CHUNK_SIZE
    plan, report = compute_prepare(project=project, metrics=metrics, variants=variants, post_edits=post_edits)
    total = plan.total
    if progress is not None:
        progress(0, total)
    ticker = _Ticker(total=total, progress=progress)
    for variant, names, ids in plan.batches(chunk_size):
        scored = metric_values_score(
            post_edit_ids=ids, variant=variant, names=names, processes=processes, progress=ticker.within
        )
        report.computed += metric_values_store(scored=scored)
        ticker.chunk_done(len(ids) * len(names))
    if report.computed:
        refresh_planner_statistics(MetricValue._meta.db_table)
    return report


class _Ticker:
    """Progress in values: exact after each stored chunk, estimates inside one."""

    def __init__(self, *, total: int, progress: ProgressCallback | None) -> None:
        self.total, self.progress = total, progress
        self.done = 0  # stored
        self.inside = 0  # scored in the current chunk, not stored yet

    def within(self, n: int) -> None:
        self.inside += n
        if self.progress is not None:
            self.progress(min(self.done + self.inside, self.total), self.total)

    def chunk_done(self, n: int) -> None:
        self.done += n
        self.inside = 0
        if self.progress is not None:
            self.progress(self.done, self.total)
