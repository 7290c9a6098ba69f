"""Reads for the editor page's place in the work: the segment list of the current document (or
batch), the previous and next segments, and the progress counter.

A lab annotator sees the document's (or batch's) own counter and the items' ids; a crowd
participant sees only the study: segments numbered across their whole queue ("Segment 4 of 10")
and progress across the study ("4 of 10 done"), never an item's id.
"""

from dataclasses import dataclass

from django.urls import reverse

from annotations.models import Assignment


@dataclass(frozen=True)
class SegmentLink:
    """One of the annotator's assignments as the segment list shows it."""

    assignment_id: int
    number: int  # 1-based, in the annotator's queue of the project
    external_id: str
    status: str
    status_label: str
    current: bool
    is_open: bool

    @property
    def url(self) -> str:
        """The editor of an open segment, the changes of a closed one."""
        name = "editor" if self.is_open else "editor_diff"
        return reverse(name, args=[self.assignment_id])


@dataclass(frozen=True)
class EditorPlace:
    """Where the current assignment lies in the annotator's work."""

    segments: list[SegmentLink]  # the current document's (or batch's) segments, in queue order
    current: SegmentLink
    previous: SegmentLink | None  # the neighbours in the annotator's queue of the project
    next: SegmentLink | None
    done: int  # closed, of `total`: the document (or batch) for lab annotators, the study for participants
    total: int
    queue_total: int  # every assignment of the annotator in the project


_STATUS_LABELS = dict(Assignment.STATUS_CHOICES)


def editor_place(*, assignment: Assignment, participant: bool) -> EditorPlace:
    """The segment list, neighbours and counter of `assignment` (one query: the annotator's
    assignments in the item's project, in queue order)."""
    item = assignment.item
    rows = list(
        Assignment.objects.filter(annotator_id=assignment.annotator_id, item__project_id=item.project_id).values_list(
            "pk", "status", "item__external_id", "item__document", "item__batch_id"
        )
    )
    links: list[SegmentLink] = []
    group: list[SegmentLink] = []
    for number, (pk, status, external_id, document, batch_id) in enumerate(rows, start=1):
        link = SegmentLink(
            assignment_id=pk,
            number=number,
            external_id=external_id,
            status=status,
            status_label=_STATUS_LABELS.get(status, status),
            current=pk == assignment.pk,
            is_open=status in Assignment.OPEN,
        )
        links.append(link)
        same = document == item.document if item.document else batch_id == item.batch_id and not document
        if same:
            group.append(link)
    index = next(k for k, link in enumerate(links) if link.current)
    counted = links if participant else group
    return EditorPlace(
        segments=group,
        current=links[index],
        previous=links[index - 1] if index > 0 else None,
        next=links[index + 1] if index + 1 < len(links) else None,
        done=sum(1 for link in counted if not link.is_open),
        total=len(counted),
        queue_total=len(links),
    )
