"""After the one writer stored an IDFX plan's items and post-edits: their event logs and the effort.

Runs in the import's transaction (annotations.importers.import_items), so a log that does not replay
leaves nothing stored. A post-edit that already has events (the same file imported again) keeps them.
The effort is derived from the log as for a live edit (annotations.effort.derive_effort, the project's
idle threshold, no server bound: the file's clock is all there is).
"""

from annotations.editing.event_store import event_extra
from annotations.editing.lifecycle import FLAG_KEY_RATE, FLAG_KEYS_UNCORROBORATED
from annotations.effort import derive_effort
from annotations.importers.base import ImportDataError
from annotations.importers.idfx import IdfxPlan
from annotations.models import DEFINITION_VERSION, EFFORT_FIELDS, EditEvent, PostEdit, Project
from annotations.replay import replay

BULK_SIZE = 2000


def logs_store(*, project: Project, plan: IdfxPlan) -> None:
    for (external_id, annotator), log in plan.logs.items():
        post_edit = (
            PostEdit.objects.select_related("assignment__item")
            .filter(
                assignment__item__project=project,
                assignment__item__external_id=external_id,
                assignment__annotator__username=annotator,
            )
            .first()
        )
        if post_edit is None or post_edit.events.exists():
            continue
        result = replay(post_edit.start_text, log, final_text=post_edit.text)
        if not result.ok:
            raise ImportDataError(
                f"the log of item {external_id!r} does not replay onto its start text: {result.divergence}",
                file=str(post_edit.origin_detail.get("file", "-")),
            )
        EditEvent.objects.bulk_create(
            [
                EditEvent(
                    post_edit=post_edit,
                    seq=event.seq,
                    t_ms=event.t_ms,
                    kind=event.kind,
                    key=event.key,
                    code=event.code,
                    modifiers=event.modifiers,
                    input_type=event.input_type,
                    sel_start=event.sel_start,
                    sel_end=event.sel_end,
                    data=event.data,
                    length_after=event.length_after,
                    extra=event_extra(event),
                )
                for event in log
            ],
            batch_size=BULK_SIZE,
        )
        effort = derive_effort(
            log,
            idle_threshold_ms=project.idle_threshold_ms,
            committed_compositions=result.committed_compositions,
            noop_inputs=result.noop_inputs,
        )
        for name in EFFORT_FIELDS:
            setattr(post_edit, name, getattr(effort, name))
        post_edit.uncorroborated_keys = effort.uncorroborated_keys
        if effort.uncorroborated_keys > effort.rate_excess_keys:
            post_edit.add_flag(FLAG_KEYS_UNCORROBORATED)
        if effort.rate_excess_keys or effort.fast_compositions:
            post_edit.add_flag(FLAG_KEY_RATE)
        post_edit.replay_ok = True
        post_edit.definition_version = DEFINITION_VERSION
        post_edit.save()
