"""Reads of generation runs the page and the API share: a project's runs with their chunks' progress,
and an item's provenance (what made each of its generated outputs and synthetic edits)."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q, QuerySet

from annotations.models import Item, Project
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
