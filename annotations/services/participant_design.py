"""Crowd participants' design: how a project gives work to its participants, slot by slot.

- Latin-square projects (project.design == "latin-square"): slot s gets the Latin-square row s
  (annotations/design.py) over the project's documents and conditions (those of the project's
  last Latin-square assignment, or every declared one). The slots after those of the annotators
  named in that assignment are the participants', so lab and crowd together stay balanced.
- Simple projects: slot s gets batch s mod B (the batches holding non-practice items, in the
  order they were made), or every non-practice item when the project has no such batch; each
  batch goes to `overlap` participants, so the study is full after B x overlap.
"""

from dataclasses import dataclass, field

from annotations.design import DesignError, latin_square_row
from annotations.models import Project
from annotations.selectors import Document, project_documents
from annotations.services.errors import ServiceError
from annotations.services.studies import study_queue


@dataclass(frozen=True)
class SlotDesign:
    """How a project gives work to its participants: slot -> queue of (item id, condition)."""

    kind: str
    first_slot: int
    capacity: int | None  # how many slots the design has (None: no end)
    practice_ids: tuple[int, ...]
    documents: tuple[Document, ...] = ()  # latin-square
    conditions: tuple[str, ...] = ()  # latin-square
    units: tuple[tuple[int, ...], ...] = field(default_factory=tuple)  # simple: what each slot may get

    def queue(self, slot: int) -> list[tuple[int, str]]:
        if self.kind == Project.DESIGN_LATIN_SQUARE:
            row = latin_square_row(slot, documents=[d.key for d in self.documents], conditions=self.conditions)
            items_of = {document.key: document.item_ids for document in self.documents}
            return study_queue(practice_ids=self.practice_ids, items_of=items_of, row=row)
        practice = set(self.practice_ids)
        unit = self.units[(slot - self.first_slot) % len(self.units)]
        return [(item_id, "") for item_id in (*self.practice_ids, *(i for i in unit if i not in practice))]

    def slot_for(self, taken: set[int]) -> int | None:
        """The first free slot, or None when the design has none left."""
        slot = self.first_slot
        while slot in taken:
            slot += 1
        if self.capacity is not None and slot >= self.first_slot + self.capacity:
            return None
        return slot


def _last_latin_square(project: Project) -> dict:
    designs = project.meta.get("designs") if isinstance(project.meta, dict) else None
    if not isinstance(designs, list):
        return {}
    latin = [d for d in designs if isinstance(d, dict) and d.get("design") == Project.DESIGN_LATIN_SQUARE]
    return latin[-1] if latin else {}


def participant_design(*, project: Project) -> SlotDesign:
    """What the project's participants get, slot by slot; ServiceError saying what is missing."""
    practice_ids = tuple(
        item_id for document in project_documents(project=project, practice=True) for item_id in document.item_ids
    )
    if project.design == Project.DESIGN_LATIN_SQUARE:
        return _latin_square_design(project, practice_ids)
    batches = [
        tuple(batch.items.filter(practice=False).order_by("batch_position", "id").values_list("id", flat=True))
        for batch in project.batches.order_by("id")
    ]
    units = tuple(unit for unit in batches if unit)
    if not units:
        everything = tuple(item_id for document in project_documents(project=project) for item_id in document.item_ids)
        if not everything:
            raise ServiceError("design: the project has no items to edit besides practice items; import some first")
        units = (everything,)
    return SlotDesign(
        kind=Project.DESIGN_SIMPLE,
        first_slot=0,
        capacity=len(units) * project.overlap,
        practice_ids=practice_ids,
        units=units,
    )


def _latin_square_design(project: Project, practice_ids: tuple[int, ...]) -> SlotDesign:
    try:
        declared = [condition.name for condition in project.declared_conditions()]
    except DesignError as exc:
        raise ServiceError(str(exc)) from None
    last = _last_latin_square(project)
    chosen = [name for name in last.get("conditions") or [] if isinstance(name, str)] or declared
    unknown = [name for name in chosen if name not in declared]
    if unknown:
        raise ServiceError(
            f"conditions: the last Latin-square assignment used {', '.join(map(repr, unknown))}, which the project "
            "no longer declares; declare it again or assign the design anew"
        )
    if not chosen:
        raise ServiceError("conditions: a Latin-square project needs conditions; declare them on the project first")
    documents = tuple(project_documents(project=project))
    if not documents:
        raise ServiceError("documents: the project has no documents to edit besides practice items; import some first")
    if len(documents) < len(chosen):
        raise ServiceError(
            f"documents: {len(documents)} document(s) for {len(chosen)} conditions: for every participant to meet "
            f"every condition, at least {len(chosen)} documents are needed; import more or use fewer conditions"
        )
    annotators = last.get("annotators")
    return SlotDesign(
        kind=Project.DESIGN_LATIN_SQUARE,
        first_slot=len(annotators) if isinstance(annotators, list) else 0,
        capacity=None,
        practice_ids=practice_ids,
        documents=documents,
        conditions=tuple(chosen),
    )
