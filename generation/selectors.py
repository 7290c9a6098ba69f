"""Reads of generation runs the page and the API share: a project's runs with their chunks' progress,
an item's provenance (what made each of its generated outputs and synthetic edits), and the same
provenance as the post-edit export's columns, a page of rows at a time."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db.models import Count, Q, QuerySet

from annotations.design import DesignError
from annotations.models import Item, PostEdit, Project
from generation.models import GenerationChunk, GenerationRecord, GenerationRun

RUNS_SHOWN = 50


def runs_with_progress(project: Project) -> QuerySet[GenerationRun]:
    """The project's runs, newest first, each with `chunks_total`, `chunks_done`, `chunks_running`,
    `chunks_queued` and `chunks_failed`."""
    return (
        GenerationRun.objects.filter(project=project)
        .select_related("project", "created_by", "stopped_by")
        .annotate(
            chunks_total=Count("chunks"),
            **{
                f"chunks_{status}": Count("chunks", filter=Q(chunks__status=status))
                for status in (
                    GenerationChunk.DONE,
                    GenerationChunk.RUNNING,
                    GenerationChunk.QUEUED,
                    GenerationChunk.FAILED,
                )
            },
        )
        .order_by("-created", "-id")
    )


def run_with_progress(run_id: int) -> GenerationRun | None:
    run = GenerationRun.objects.filter(pk=run_id).select_related("project").first()
    if run is None:
        return None
    return runs_with_progress(run.project).get(pk=run_id)


def item_provenance(item: Item) -> list[dict[str, Any]]:
    """One entry per run that answered `item`: what it made (an output of a system, a synthetic edit),
    its status, and the call's provenance (endpoint without credentials, model as the server named it,
    the request's parameters, the template and the prompt's hash, response id, created, finish reason,
    tokens, latency). No API key is ever stored, so none is here."""
    records = GenerationRecord.objects.filter(item=item).select_related("run").order_by("run__created", "run_id")
    return [
        {
            "run": record.run_id,
            "kind": record.run.kind,
            "name": record.run.name,
            "status": record.status,
            "error": record.error,
            "post_edit": record.post_edit_id,
            "template": record.run.template_name,
            "template_sha256": record.run.template_sha256,
            "prompt_sha256": record.prompt_sha256,
            "prompt_tokens": record.prompt_tokens,
            "completion_tokens": record.completion_tokens,
            "created": record.created,
            "provenance": record.provenance,
        }
        for record in records
    ]


# ------------------------------------------------------------------------ export columns

# The post-edit export's provenance columns (metrics.exports; docs/json.md), named after item_provenance's
# keys: what made the text a row is about. For a synthetic edit, the call that made the edit; for a
# person's post-edit made under a condition whose output a generation run wrote, the call that made that
# output (the text the edit started from). Empty for everything else (imported outputs, the model output).
PROVENANCE_INT_COLUMNS = ("gen_run", "gen_prompt_tokens", "gen_completion_tokens")
PROVENANCE_FLOAT_COLUMNS = ("gen_latency_ms",)
PROVENANCE_COLUMNS = (
    "gen_run",
    "gen_kind",
    "gen_name",
    "gen_endpoint",
    "gen_model",
    "gen_requested_model",
    "gen_params",
    "gen_template",
    "gen_template_sha256",
    "gen_prompt_sha256",
    "gen_response_id",
    "gen_created",
    "gen_finish_reason",
    "gen_prompt_tokens",
    "gen_completion_tokens",
    "gen_latency_ms",
)
PROVENANCE_TEXT_COLUMNS = tuple(
    c for c in PROVENANCE_COLUMNS if c not in PROVENANCE_INT_COLUMNS + PROVENANCE_FLOAT_COLUMNS
)
EMPTY_PROVENANCE: dict[str, Any] = dict.fromkeys(PROVENANCE_COLUMNS)


@dataclass(frozen=True)
class ProvenanceSource:
    """What an export needs to find its rows' provenance, read once before the first page: the output a
    generation run wrote behind each condition (condition name -> system), and whether any run made
    synthetic edits. None from `export_provenance_source` when the project has no generation run."""

    outputs: Mapping[str, str]
    simulations: bool


def export_provenance_source(project: Project) -> ProvenanceSource | None:
    runs = set(GenerationRun.objects.filter(project=project).values_list("kind", "name"))
    if not runs:
        return None
    systems = {name for kind, name in runs if kind == GenerationRun.OUTPUT}
    try:
        conditions = project.declared_conditions()
    except DesignError:
        conditions = []  # refused where the design is edited; an export still goes out, without these
    return ProvenanceSource(
        outputs={c.name: c.output for c in conditions if c.output is not None and c.output in systems},
        simulations=any(kind == GenerationRun.SIMULATION for kind, _ in runs),
    )


def export_provenance(source: ProvenanceSource | None, page: Sequence[Mapping[str, Any]]) -> dict[int, dict]:
    """The provenance columns of a page of export rows (each with `id`, `item`, `origin`, `condition` and
    `original`, the text the edit started from), keyed by post-edit id; rows without provenance are left
    out. One query for the page. A person's post-edit gets an output's provenance only when it started
    from the very text the run generated (not from an imported text under the same name)."""
    if source is None or not page:
        return {}
    simulated = [row["id"] for row in page if row["origin"] == PostEdit.SIMULATED] if source.simulations else []
    started: dict[tuple[int, str], list[Mapping[str, Any]]] = {}
    for row in page:
        if row["origin"] != PostEdit.SIMULATED and row["condition"] in source.outputs:
            started.setdefault((row["item"], source.outputs[row["condition"]]), []).append(row)
    if not simulated and not started:
        return {}
    wanted = Q(post_edit_id__in=simulated, run__kind=GenerationRun.SIMULATION)
    if started:
        wanted |= Q(
            run__kind=GenerationRun.OUTPUT,
            run__name__in={name for _, name in started},
            item_id__in={item for item, _ in started},
        )
    records = (
        GenerationRecord.objects.filter(wanted, status=GenerationRecord.GENERATED)
        .order_by("run__created", "run_id")
        .values(
            "run_id",
            "run__kind",
            "run__name",
            "run__endpoint",
            "run__template_name",
            "run__template_sha256",
            "item_id",
            "post_edit_id",
            "text",
            "prompt_sha256",
            "prompt_tokens",
            "completion_tokens",
            "provenance",
        )
    )
    found: dict[int, dict] = {}
    for record in records:
        if record["run__kind"] == GenerationRun.SIMULATION:
            found[record["post_edit_id"]] = _provenance_columns(record)
            continue
        for row in started.get((record["item_id"], record["run__name"]), ()):
            if row["original"] == record["text"]:
                found[row["id"]] = _provenance_columns(record)
    return found


def _provenance_columns(record: Mapping[str, Any]) -> dict[str, Any]:
    made: Mapping[str, Any] = record["provenance"] if isinstance(record["provenance"], Mapping) else {}
    params = made.get("params")
    created = made.get("created")
    latency = made.get("latency_ms")
    return {
        "gen_run": record["run_id"],
        "gen_kind": record["run__kind"],
        "gen_name": record["run__name"],
        "gen_endpoint": _text(made.get("endpoint")) or record["run__endpoint"],
        "gen_model": _text(made.get("model")),
        "gen_requested_model": _text(made.get("requested_model")),
        "gen_params": (
            json.dumps(params, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
            if isinstance(params, Mapping)
            else None
        ),
        "gen_template": record["run__template_name"],
        "gen_template_sha256": record["run__template_sha256"],
        "gen_prompt_sha256": record["prompt_sha256"] or None,
        "gen_response_id": _text(made.get("response_id")),
        "gen_created": _unix_time(created),
        "gen_finish_reason": _text(made.get("finish_reason")),
        "gen_prompt_tokens": record["prompt_tokens"],
        "gen_completion_tokens": record["completion_tokens"],
        "gen_latency_ms": float(latency) if latency is not None and _is_number(latency) else None,
    }


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _unix_time(value: Any) -> str | None:
    """The response's `created` (Unix seconds, as the server sent it) as an ISO 8601 UTC time."""
    if not _is_number(value):
        return None
    try:
        return datetime.fromtimestamp(value, tz=UTC).isoformat().replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return None
