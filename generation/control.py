"""Who may start and stop generation runs, stopping one, the project's policy, and the template a page
or API request names.

- Admins start and stop any run. Researchers start and stop synthetic-edit runs (simulations) of a
  project whose GenerationPolicy allows it (`researchers_simulate`, off by default); never outputs.
  Everyone else is refused (GenerationForbidden, 403).
- Stopping a run: the run is `stopped`, its chunks not done are failed with "stopped", so a worker
  holding one loses its claim and stores nothing more (answers in flight are dropped, never stored
  twice). What the run stored stays; the same settings started again resume it.
- A template is one of the shipped prompts (generation/prompts/*.txt, by stem) or a text given whole
  (a page's upload, the API's `template_text`), at most TEMPLATE_MAX_BYTES of UTF-8.
"""

from __future__ import annotations

from pathlib import Path

from django.db import transaction
from django.utils import timezone

from annotations.models import Project
from annotations.roles import is_admin, is_researcher
from editlab.refusals import Refusal
from generation.models import GenerationChunk, GenerationPolicy, GenerationRun

PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"
TEMPLATE_MAX_BYTES = 1024 * 1024


class GenerationForbidden(Refusal):
    status = 403
    code = "permission_denied"


class TemplateChoiceRefused(Refusal):
    code = "template_refused"


def shipped_templates() -> dict[str, Path]:
    """The shipped prompts by name: answer (the seed study's answer prompt), normal, similar, fast."""
    return {path.stem: path for path in sorted(PROMPTS_DIR.glob("*.txt"))}


def template_chosen(*, shipped: str = "", text: str | bytes | None = None, filename: str = "") -> tuple[str, str]:
    """(template text, its name for provenance) of a request: a shipped prompt's name, or a text given
    whole (bytes as uploaded: UTF-8 only). Exactly one of the two."""
    if bool(shipped) == (text is not None):
        raise TemplateChoiceRefused("give either a shipped template's name or a template text (an upload), not both")
    if shipped:
        known = shipped_templates()
        if shipped not in known:
            raise TemplateChoiceRefused(f"unknown template {shipped!r}: choose one of {', '.join(known)}")
        return known[shipped].read_text(encoding="utf-8"), known[shipped].name
    name = (filename or "uploaded template")[:255]
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text or b"")
    if len(data) > TEMPLATE_MAX_BYTES:
        raise TemplateChoiceRefused(f"the template {name} is larger than {TEMPLATE_MAX_BYTES:,} bytes")
    try:
        decoded = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise TemplateChoiceRefused(f"the template {name}, line {line}: not UTF-8 ({exc.reason})") from None
    return decoded, name


def researchers_simulate(project: Project) -> bool:
    policy = GenerationPolicy.objects.filter(project=project).first()
    return bool(policy and policy.researchers_simulate)


def may_run(user, project: Project, kind: str) -> bool:
    """Whether `user` may start or stop runs of `kind` on `project`."""
    if is_admin(user):
        return True
    return kind == GenerationRun.SIMULATION and is_researcher(user) and researchers_simulate(project)


def generation_permission_check(*, user, project: Project, kind: str) -> None:
    if may_run(user, project, kind):
        return
    if kind == GenerationRun.SIMULATION and is_researcher(user):
        raise GenerationForbidden(
            f"Project {project.name!r} does not let researchers run synthetic edits; an admin can allow it "
            "on the project's Generation page."
        )
    raise GenerationForbidden("Only admins may generate outputs (researchers may run synthetic edits if allowed).")


def generation_run_stop(*, run: GenerationRun, user) -> GenerationRun:
    """Stop a queued or running run (refused for one that is not going); what it stored stays."""
    generation_permission_check(user=user, project=run.project, kind=run.kind)
    now = timezone.now()
    with transaction.atomic():
        locked = GenerationRun.objects.select_for_update().get(pk=run.pk)
        if locked.status not in GenerationRun.GOING:
            raise GenerationStopRefused(
                f"run #{run.pk} is {locked.status}, not queued or running: there is nothing to stop"
            )
        locked.chunks.exclude(status=GenerationChunk.DONE).update(
            status=GenerationChunk.FAILED, error="stopped", finished=now
        )
        GenerationRun.objects.filter(pk=run.pk).update(
            status=GenerationRun.STOPPED,
            finished=now,
            error=f"stopped by {getattr(user, 'username', '') or 'someone'}",
            stopped_by=user if getattr(user, "is_authenticated", False) else None,
        )
    run.refresh_from_db()
    return run


class GenerationStopRefused(Refusal):
    code = "not_running"
    status = 409


def generation_policy_set(*, project: Project, researchers_simulate: bool, user) -> GenerationPolicy:
    if not is_admin(user):
        raise GenerationForbidden("Only admins may change who runs synthetic edits.")
    with transaction.atomic():
        policy, _ = GenerationPolicy.objects.select_for_update().get_or_create(project=project)
        policy.researchers_simulate = bool(researchers_simulate)
        policy.updated_by = user if getattr(user, "is_authenticated", False) else None
        policy.save()
    return policy


def generation_start_requested(*, project: Project, user, kind: str, template: str = "", **settings) -> GenerationRun:
    """A run started from the page or the API: the user's permission checked first, then the template
    chosen (`template`, a shipped prompt's name, or `template_text` with `template_filename`), then every
    setting (generation.services.generation_run_start)."""
    from generation.services import generation_run_start  # it imports the jobs, which import the tasks

    generation_permission_check(user=user, project=project, kind=kind)
    text = settings.pop("template_text", None)
    filename = settings.pop("template_filename", "")
    template_text, template_name = template_chosen(shipped=template, text=text, filename=filename)
    return generation_run_start(
        project=project, kind=kind, template_text=template_text, template_name=template_name, user=user, **settings
    )
