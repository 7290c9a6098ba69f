"""Starting a generation run, and storing what each call gave.

`generation_run_start` checks every setting (endpoint, template, parameters, items), and finds or makes
the run of that setting: the same setting asked again resumes its run (what it answered is kept and
skipped), a changed setting is a new run. A new run that would write an output name other texts
already fill (imported, or another run's) is refused: nothing is overwritten. `generation_records_store`
stores answers where the run puts them: `Item.outputs[name]`, or a synthetic edit
(annotations.services.simulated) for a simulation.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F

from annotations.models import Item, Project
from annotations.services.simulated import (
    SCENARIO_MAX,
    SimulatedEditRefused,
    SimulatedTextTooLong,
    post_edit_create_simulated,
)
from editlab import limits
from editlab.refusals import Refusal
from generation import client
from generation.models import GenerationRecord, GenerationRun
from generation.prompts import template_parse

TEMPERATURE_MAX = 2.0
MAX_TOKENS_MAX = 1_000_000
CONCURRENCY_MAX = 256
TIMEOUT_MAX_S = 3600.0
PROMPT_MAX_CHARS_DEFAULT = 100_000
ITEMS_MAX = 1_000_000


class GenerationRefused(Refusal):
    code = "generation_refused"


class OutputOccupied(GenerationRefused):
    code = "output_occupied"
    status = 409


def _check_number(name: str, value: Any, *, low: float, high: float, integer: bool = False) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (integer and not isinstance(value, int)):
        raise GenerationRefused(f"{name} must be {'an integer' if integer else 'a number'}; got {value!r}")
    if not math.isfinite(value) or not low <= value <= high:
        raise GenerationRefused(f"{name} must lie between {low:g} and {high:g}; got {value!r}")


def run_settings(run: GenerationRun) -> dict[str, Any]:
    """What makes the run, hashed into its settings_key (and given to each synthetic edit)."""
    return {
        "kind": run.kind,
        "name": run.name,
        "source_output": run.source_output,
        "endpoint": run.endpoint,
        "model": run.model,
        "temperature": run.params.get("temperature"),
        "max_tokens": run.params.get("max_tokens"),
        "seed": run.params.get("seed"),
        "template_sha256": run.template_sha256,
        "variables": run.variables,
    }


def _key(chosen: Mapping[str, Any]) -> str:
    canonical = json.dumps(chosen, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def _items_chosen(project: Project, external_ids: Sequence[str] | None) -> list[int]:
    if not external_ids:
        return []
    wanted = list(dict.fromkeys(str(e) for e in external_ids))
    if len(wanted) > ITEMS_MAX:
        raise GenerationRefused(f"at most {ITEMS_MAX:,} items may be named")
    found = dict(Item.objects.filter(project=project, external_id__in=wanted).values_list("external_id", "pk"))
    missing = [e for e in wanted if e not in found]
    if missing:
        raise GenerationRefused(
            f"project {project.name!r} has no item {missing[0]!r}"
            + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else "")
        )
    return sorted(found[e] for e in wanted)


def _outputs_occupied(run: GenerationRun) -> None:
    """Refuse a run writing outputs[name] where items hold a text this run did not write."""
    items = Item.objects.filter(project=run.project, outputs__has_key=run.name)
    if run.item_ids:
        items = items.filter(pk__in=run.item_ids)
    mine = set(
        GenerationRecord.objects.filter(run=run, status=GenerationRecord.GENERATED).values_list("item_id", flat=True)
    )
    taken = [(pk, ext) for pk, ext in items.values_list("pk", "external_id") if pk not in mine]
    if not taken:
        return
    other = (
        GenerationRun.objects.filter(project=run.project, kind=GenerationRun.OUTPUT, name=run.name)
        .exclude(pk=run.pk)
        .first()
    )
    made_by = f"run #{other.pk} (model {other.model!r}, other settings)" if other is not None else "an import"
    raise OutputOccupied(
        f"{len(taken)} item(s) of project {run.project.name!r} (e.g. {taken[0][1]!r}) already have an output "
        f"{run.name!r}, made by {made_by}; a changed setting is a new run and never overwrites: choose another "
        "--system name"
    )


def generation_run_start(
    *,
    project: Project,
    kind: str,
    name: str,
    endpoint: str,
    model: str,
    template_text: str,
    template_name: str,
    temperature: float | None = None,
    max_tokens: int | None = None,
    seed: int | None = None,
    timeout_s: float = 60.0,
    concurrency: int = 1,
    max_prompt_chars: int = PROMPT_MAX_CHARS_DEFAULT,
    variables: Mapping[str, str] | None = None,
    source_output: str = "",
    items: Sequence[str] | None = None,
    user=None,
) -> GenerationRun:
    """Check the request and queue its run: a new run for a new setting, the same run resumed for a
    setting already run (its answered items are skipped). Refused (a Refusal naming the problem) for a
    bad endpoint, template, parameter or item, or outputs a new run would overwrite."""
    if kind not in (GenerationRun.OUTPUT, GenerationRun.SIMULATION):
        raise GenerationRefused(f"unknown kind of run {kind!r}")
    what = "--system" if kind == GenerationRun.OUTPUT else "--scenario"
    if not name.strip() or len(name) > SCENARIO_MAX:
        raise GenerationRefused(f"{what} must be a name of 1 to {SCENARIO_MAX} characters")
    if not model.strip() or len(model) > 255:
        raise GenerationRefused("--model must be a model name of 1 to 255 characters")
    endpoint = client.endpoint_check(endpoint)
    _check_number("--temperature", temperature, low=0, high=TEMPERATURE_MAX)
    _check_number("--max-tokens", max_tokens, low=1, high=MAX_TOKENS_MAX, integer=True)
    _check_number("--seed", seed, low=limits.MIN_BIGINT, high=limits.MAX_BIGINT, integer=True)
    _check_number("--timeout", timeout_s, low=0.001, high=TIMEOUT_MAX_S)
    _check_number("--concurrency", concurrency, low=1, high=CONCURRENCY_MAX, integer=True)
    _check_number("--max-prompt-chars", max_prompt_chars, low=1, high=100_000_000, integer=True)
    variables = dict(variables or {})
    template = template_parse(template_text, name=template_name, variables=variables)
    if source_output and (kind != GenerationRun.SIMULATION or len(source_output) > SCENARIO_MAX):
        raise GenerationRefused("--output names the output a simulation edits (at most 100 characters)")
    run = GenerationRun(
        project=project,
        kind=kind,
        name=name,
        source_output=source_output,
        endpoint=endpoint,
        model=model,
        params={
            "temperature": temperature,
            "max_tokens": max_tokens,
            "seed": seed,
            "timeout_s": timeout_s,
            "max_prompt_chars": max_prompt_chars,
        },
        template_name=template_name[:255],
        template=template.text,
        template_sha256=template.sha256,
        variables=variables,
        concurrency=concurrency,
        item_ids=_items_chosen(project, items),
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )
    run.settings_key = _key(run_settings(run))
    with transaction.atomic():
        existing = (
            GenerationRun.objects.select_for_update()
            .filter(project=project, kind=kind, name=name, settings_key=run.settings_key)
            .first()
        )
        if existing is not None:
            existing.concurrency, existing.item_ids = concurrency, run.item_ids
            existing.params = run.params
            existing.save(update_fields=["concurrency", "item_ids", "params"])
            run = existing
        else:
            run.save()
        if kind == GenerationRun.OUTPUT:
            _outputs_occupied(run)  # refused: the transaction drops the new run
    from generation.jobs import generation_run_enqueue  # jobs stores through this module

    generation_run_enqueue(run)
    run.refresh_from_db()
    return run


# ------------------------------------------------------------------------------------ storing


@dataclass(frozen=True)
class Answered:
    """One item's answer as a chunk hands it over to be stored."""

    item: Item
    answer: client.Answer
    prompt_sha256: str = ""
    start_text: str | None = None  # a simulation's text to edit when it is not the model output


_STATUS = {
    client.OK: GenerationRecord.GENERATED,
    client.EMPTY: GenerationRecord.EMPTY,
    client.REFUSAL: GenerationRecord.MODEL_REFUSED,
    client.FAILED: GenerationRecord.FAILED,
}
_KEEPS_TEXT = (GenerationRecord.GENERATED, GenerationRecord.TOO_LONG)


def _store_simulated(run: GenerationRun, one: Answered, provenance: dict[str, Any]):
    try:
        post_edit = post_edit_create_simulated(
            item=one.item,
            scenario=run.name,
            text=one.answer.text,
            provenance={"settings": run_settings(run), **provenance},
            start_text=one.start_text,
        )
    except SimulatedTextTooLong as exc:
        return GenerationRecord.TOO_LONG, str(exc), None
    except SimulatedEditRefused as exc:
        return GenerationRecord.CONFLICT, str(exc), None
    return GenerationRecord.GENERATED, "", post_edit


def generation_records_store(*, run: GenerationRun, answered: Sequence[Answered]) -> list[GenerationRecord]:
    """Store some items' answers in one transaction (the caller's, which holds the chunk's claim): a record
    each, the texts where the run puts them (Item.outputs[name], never over another text, or a synthetic
    edit), and the counts and tokens added to the run. An answer over the text limit is stored as refused."""
    records: list[GenerationRecord] = []
    counts = {"generated": 0, "failed": 0, "refused": 0}
    tokens = {"prompt_tokens": 0, "completion_tokens": 0}
    with transaction.atomic():
        locked: dict[int, Item] = {}
        if run.kind == GenerationRun.OUTPUT:
            ids = [one.item.pk for one in answered if one.answer.status == client.OK]
            locked = {i.pk: i for i in Item.objects.select_for_update().filter(pk__in=ids).only("pk", "outputs")}
        changed: list[Item] = []
        for one in answered:
            answer = one.answer
            status, error, text, post_edit = _STATUS.get(answer.status, answer.status), answer.error, answer.text, None
            if status == GenerationRecord.GENERATED:
                problem = limits.text_size_problem(text, limit=settings.EDITLAB_TEXT_MAX_BYTES)
                if problem:
                    status, error = GenerationRecord.TOO_LONG, f"the answer was refused, not truncated: {problem}"
            provenance = {
                **answer.provenance,
                "run": run.pk,
                "template": run.template_name,
                "prompt_sha256": one.prompt_sha256,
            }
            if status == GenerationRecord.GENERATED and run.kind == GenerationRun.OUTPUT:
                item = locked[one.item.pk]
                outputs = item.outputs if isinstance(item.outputs, dict) else {}
                held = outputs.get(run.name)
                if held is None:
                    item.outputs = {**outputs, run.name: text}
                    changed.append(item)
                elif held != text:
                    status = GenerationRecord.CONFLICT
                    error = f"outputs[{run.name!r}] holds another text; nothing is overwritten"
            elif status == GenerationRecord.GENERATED:
                status, error, post_edit = _store_simulated(run, one, provenance)
            usage = answer.provenance.get("usage") or {}
            record = GenerationRecord(
                run=run,
                item=one.item,
                status=status,
                text=text if status in _KEEPS_TEXT else "",
                error=error[:5000],
                provenance=provenance,
                prompt_sha256=one.prompt_sha256,
                prompt_tokens=int(usage.get("prompt_tokens") or 0),
                completion_tokens=int(usage.get("completion_tokens") or 0),
                post_edit=post_edit,
            )
            records.append(record)
            counts[
                {GenerationRecord.GENERATED: "generated", GenerationRecord.FAILED: "failed"}.get(status, "refused")
            ] += 1
            tokens["prompt_tokens"] += record.prompt_tokens
            tokens["completion_tokens"] += record.completion_tokens
        if changed:
            Item.objects.bulk_update(changed, ["outputs"])
        # A failed call's record (tried again now) gives way to the new one.
        GenerationRecord.objects.filter(run=run, item__in=[one.item.pk for one in answered]).delete()
        GenerationRecord.objects.bulk_create(records)
        GenerationRun.objects.filter(pk=run.pk).update(
            done=F("done") + len(records),
            **{name: F(name) + n for name, n in (counts | tokens).items() if n},
        )
    return records
