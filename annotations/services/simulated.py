"""Storing an LLM's synthetic edit of an item (issue 21 §2, the seed study's synthetic-edit design).

A synthetic edit is a post-edit with `origin = "simulated"`: submitted, with its text and the text it
started from, and nothing a person's edit has: no time, no keys, no events, no visits. Its scenario
(normal, similar, fast or a project's own) is its condition, on the post-edit and on its assignment,
so selectors and analyses group it like any condition; its provenance (endpoint, model, request
parameters, template, response) is its `origin_detail`.

A PostEdit hangs on an Assignment, and an item has one assignment per account: each scenario under
each settings gets its own inactive account (nobody logs in as it), named for the scenario and a hash
of the settings. The same item, scenario and settings store once: a resumed job finds the stored edit
and gets it back unchanged (the same text) or is refused (a different text: nothing is overwritten).
"""

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from annotations.models import Assignment, Item, PostEdit
from annotations.roles import ANNOTATOR, set_role
from editlab import limits
from editlab.refusals import Refusal

# Provenance keys that differ between two calls with the same settings: not part of what makes a run.
VOLATILE_KEYS = frozenset(
    {"response_id", "created", "finish_reason", "usage", "tokens", "latency_ms", "latency_s", "attempts", "rendered"}
)
SCENARIO_MAX = 100  # the length of PostEdit.condition / Assignment.condition
_USERNAME_UNSAFE = re.compile(r"[^\w.+-]", re.ASCII)


class SimulatedEditRefused(Refusal):
    code = "simulated_edit_refused"


class SimulatedTextTooLong(SimulatedEditRefused):
    code = "text_too_long"


def settings_key(provenance: Mapping[str, Any]) -> str:
    """The hash of what makes a run: the provenance's `settings` when given, else the provenance
    without the keys that differ between calls (response id, times, token counts, latency)."""
    chosen = provenance.get("settings")
    if not isinstance(chosen, Mapping):
        chosen = {key: value for key, value in provenance.items() if key not in VOLATILE_KEYS}
    canonical = json.dumps(chosen, sort_keys=True, ensure_ascii=False, default=str, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def simulated_username(scenario: str, key: str) -> str:
    """The inactive account that owns one scenario's edits under one settings."""
    safe = _USERNAME_UNSAFE.sub("_", scenario)[:100] or "_"
    return f"llm.{safe}.{key[:16]}"


def _check(scenario: object, text: object) -> None:
    if not isinstance(scenario, str) or not scenario.strip():
        raise SimulatedEditRefused("a synthetic edit needs a scenario (its condition); got none")
    if len(scenario) > SCENARIO_MAX:
        raise SimulatedEditRefused(f"scenario name is longer than {SCENARIO_MAX} characters")
    if not isinstance(text, str):
        raise SimulatedEditRefused("a synthetic edit's text must be a string")
    problem = limits.text_size_problem(text, limit=settings.EDITLAB_TEXT_MAX_BYTES)
    if problem:
        raise SimulatedTextTooLong(f"the synthetic edit was refused: {problem}")


def post_edit_create_simulated(
    *, item: Item, scenario: str, text: str, provenance: Mapping[str, Any], start_text: str | None = None
) -> PostEdit:
    """Store `text` as the synthetic edit of `item` under `scenario`, once per item, scenario and
    settings (`start_text`: the text the LLM edited, None for the item's model output); refused (SimulatedEditRefused) for a text over the editor's limit, a bad scenario, or a
    different text where one is already stored."""
    _check(scenario, text)
    key = settings_key(provenance)
    username = simulated_username(scenario, key)
    with transaction.atomic():
        User = get_user_model()
        user, created = User.objects.get_or_create(username=username, defaults={"is_active": False})
        if created:
            user.set_unusable_password()
            user.save(update_fields=["password"])
            set_role(user, ANNOTATOR)
        existing = (
            PostEdit.objects.select_for_update()
            .filter(assignment__item=item, assignment__annotator=user)
            .select_related("assignment")
            .first()
        )
        if existing is not None:
            if existing.origin == PostEdit.SIMULATED and existing.text == text and existing.condition == scenario:
                return existing
            raise SimulatedEditRefused(
                f"item {item.external_id!r} already has a different synthetic edit under scenario {scenario!r} "
                "with these settings; nothing is overwritten (change a setting for a new run)"
            )
        now = timezone.now()
        assignment = Assignment.objects.create(
            item=item, annotator=user, status=Assignment.SUBMITTED, finished=now, condition=scenario
        )
        return PostEdit.objects.create(
            assignment=assignment,
            text=text,
            draft_text=text,
            origin=PostEdit.SIMULATED,
            origin_detail={"scenario": scenario, "settings_key": key, **dict(provenance)},
            condition=scenario,
            start_override=start_text,
            submitted_at=now,
        )
