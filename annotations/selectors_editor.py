"""Reads for the editor page's place in the work: the segment list of the current document (or
batch), the previous and next segments, and the progress counter.

A lab annotator sees the document's (or batch's) own counter and the items' ids; a crowd
participant sees only the study: segments numbered across their whole queue ("Segment 4 of 10")
and progress across the study ("4 of 10 done"), never an item's id.
"""

from dataclasses import dataclass

from django.urls import reverse

from annotations.models import Assignment

# The segment list shows at most this many segments before and after the current one (a batch may
# hold thousands; the page says how many are left out on either side).
SEGMENT_WINDOW = 20


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
    url: str  # the editor of an open segment, the changes of a closed one; "" for a closed one under another condition


@dataclass(frozen=True)
class EditorPlace:
    """Where the current assignment lies in the annotator's work."""

    segments: list[SegmentLink]  # the current document's (or batch's) segments, in queue order (a window)
    hidden_before: int  # the document's (or batch's) segments left out of `segments` before it and after it
    hidden_after: int
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
    # Two reversals for the whole list: a page with thousands of segments reverses no URL per segment.
    marker = 999999999
    patterns = {
        True: reverse("editor", args=[marker]).replace(str(marker), "{}"),
        False: reverse("editor_diff", args=[marker]).replace(str(marker), "{}"),
    }
    rows = list(
        # A review lists the reviewer's reviews, post-editing work the rest of their work.
        Assignment.objects.filter(
            annotator_id=assignment.annotator_id,
            item__project_id=item.project_id,
            reviews__isnull=assignment.reviews_id is None,
        ).values_list("pk", "status", "item__external_id", "item__document", "item__batch_id", "condition")
    )
    links: list[SegmentLink] = []
    group: list[SegmentLink] = []
    for number, (pk, status, external_id, document, batch_id, condition) in enumerate(rows, start=1):
        is_open = status in Assignment.OPEN
        # A closed segment's changes show the text of its condition: offered only under the same condition
        # (the rule of the editor's previous edit), so that no page shows what another condition showed.
        url = patterns[is_open].format(pk) if is_open or condition == assignment.condition else ""
        link = SegmentLink(
            assignment_id=pk,
            number=number,
            external_id=external_id,
            status=status,
            status_label=_STATUS_LABELS.get(status, status),
            current=pk == assignment.pk,
            is_open=is_open,
            url=url,
        )
        links.append(link)
        same = document == item.document if item.document else batch_id == item.batch_id and not document
        if same:
            group.append(link)
    index = next(k for k, link in enumerate(links) if link.current)
    counted = links if participant else group
    here = next(k for k, link in enumerate(group) if link.current)
    first, last = max(0, here - SEGMENT_WINDOW), min(len(group), here + SEGMENT_WINDOW + 1)
    return EditorPlace(
        segments=group[first:last],
        hidden_before=first,
        hidden_after=len(group) - last,
        current=links[index],
        previous=links[index - 1] if index > 0 else None,
        next=links[index + 1] if index + 1 < len(links) else None,
        done=sum(1 for link in counted if not link.is_open),
        total=len(counted),
        queue_total=len(links),
    )
