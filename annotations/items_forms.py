"""The items browser's filters (GET parameters), parsed and checked only: what the page's form offers
and what a pushed or typed URL may carry.

A value the form does not offer (an annotator who holds no work here, a status or flag that does not
exist, a page marker that is no id) is not an error page: the filter is dropped, the page says which
one and why, and the rows are shown as if it were not set.
"""

from dataclasses import dataclass, field

from django import forms
from django.contrib.auth import get_user_model
from django.db.models import Exists, OuterRef

from annotations.design import DesignError, parse_conditions
from annotations.editing.lifecycle import (
    FLAG_CONDITION_OUTPUT_MISSING,
    FLAG_CONDITION_UNKNOWN,
    FLAG_EVENT_GAP,
    FLAG_KEY_RATE,
    FLAG_KEYS_UNCORROBORATED,
    FLAG_REPLAY_MISMATCH,
    FLAG_WALL_CLIPPED,
)
from annotations.models import Assignment, Project
from editlab.limits import parse_id

VIEW_ITEMS = "items"
VIEW_POST_EDITS = "post-edits"
NO_CONDITION = "(none)"  # no condition name can start with "(" (annotations.design.CONDITION_NAME)
ANY_FLAG = "(any)"
NO_FLAG = "(none)"
# The flags a post-edit can carry (annotations/editing/lifecycle.py, README "Replay and flags").
FLAGS = (
    FLAG_WALL_CLIPPED,
    FLAG_KEYS_UNCORROBORATED,
    FLAG_KEY_RATE,
    FLAG_REPLAY_MISMATCH,
    FLAG_EVENT_GAP,
    FLAG_CONDITION_UNKNOWN,
    FLAG_CONDITION_OUTPUT_MISSING,
)
SEARCH_MAX = 255  # Item.external_id's length


def project_annotators(project: Project) -> list[str]:
    """The usernames of everyone holding work in the project, by name (one query: an EXISTS per user
    on the assignments' (item, annotator) index, never a scan of the project's assignments)."""
    held = Assignment.objects.filter(annotator=OuterRef("pk"), item__project=project)
    users = get_user_model().objects.filter(Exists(held)).order_by("username")
    return list(users.values_list("username", flat=True))


def declared_condition_names(project: Project) -> list[str]:
    try:
        return [condition.name for condition in parse_conditions(project.conditions)]
    except DesignError:
        return []  # the Settings page says why


class ItemFilterForm(forms.Form):
    view = forms.ChoiceField(
        label="Show",
        choices=[(VIEW_ITEMS, "items"), (VIEW_POST_EDITS, "post-edits")],
        required=False,
        error_messages={"invalid_choice": f"not a view (one of: {VIEW_ITEMS}, {VIEW_POST_EDITS})"},
    )
    q = forms.CharField(label="Item id contains", required=False, max_length=SEARCH_MAX, strip=True)
    annotator = forms.ChoiceField(
        label="Annotator", required=False, error_messages={"invalid_choice": "nobody of that name holds work here"}
    )
    status = forms.ChoiceField(
        label="Status",
        required=False,
        error_messages={"invalid_choice": "not a status (one of: " + ", ".join(v for v, _ in Assignment.STATUS_CHOICES) + ")"},
        choices=[
            ("", "any"),
            *((value, "not started (pending)" if value == Assignment.PENDING else label)
              for value, label in Assignment.STATUS_CHOICES),
        ],
    )  # fmt: skip
    condition = forms.ChoiceField(
        label="Condition", required=False, error_messages={"invalid_choice": "the project declares no such condition"}
    )
    flag = forms.ChoiceField(
        label="Flag",
        required=False,
        error_messages={"invalid_choice": f"not a flag (one of: {', '.join(FLAGS)}, {ANY_FLAG}, {NO_FLAG})"},
        choices=[("", "any or none"), (ANY_FLAG, "any flag"), (NO_FLAG, "no flag"), *((f, f) for f in FLAGS)],
    )

    def __init__(self, data, *, project: Project, annotators: list[str]) -> None:
        super().__init__(data)
        self._choice("annotator").choices = [("", "anyone"), *((name, name) for name in annotators)]
        conditions = declared_condition_names(project)
        self._choice("condition").choices = [
            ("", "any"),
            *((name, name) for name in conditions),
            (NO_CONDITION, "no condition (practice, or a study without conditions)"),
        ]

    def _choice(self, name: str) -> forms.ChoiceField:
        field = self.fields[name]
        if not isinstance(field, forms.ChoiceField):
            raise TypeError(f"ItemFilterForm.{name} is not a choice field")
        return field


@dataclass
class ItemFilters:
    """The filters in force, each a value the page offers ("" = not set), and what was dropped and why."""

    view: str = VIEW_ITEMS
    q: str = ""
    annotator: str = ""
    status: str = ""
    condition: str = ""
    flag: str = ""
    after: int | None = None
    before: int | None = None
    dropped: list[str] = field(default_factory=list)

    @property
    def selects_post_edits(self) -> bool:
        """Whether a filter on the post-edits is set (the items view then lists only items holding one)."""
        return bool(self.annotator or self.status or self.condition or self.flag)

    def query(self, **changes: str | int | None) -> dict[str, str]:
        """The GET parameters of these filters (without page markers), with `changes` applied; empty ones left out."""
        values = {
            "view": self.view,
            "q": self.q,
            "annotator": self.annotator,
            "status": self.status,
            "condition": self.condition,
            "flag": self.flag,
        }
        values.update({key: "" if value is None else str(value) for key, value in changes.items()})
        return {key: value for key, value in values.items() if value}


def item_filters(query, *, project: Project, annotators: list[str]) -> tuple[ItemFilterForm, ItemFilters]:
    """The bound form and the filters it yields from a GET QueryDict; a field the form refuses is dropped
    (named in `dropped` with the form's message), the others stay in force."""
    form = ItemFilterForm(query, project=project, annotators=annotators)
    form.is_valid()
    filters = ItemFilters()
    for name in ("view", "q", "annotator", "status", "condition", "flag"):
        if name in form.errors:
            shown = str(query.get(name, ""))[:60]
            filters.dropped.append(
                f"{form.fields[name].label} {shown!r} ignored: {' '.join(str(error) for error in form.errors[name])}"
            )
        else:
            setattr(filters, name, form.cleaned_data.get(name) or "")
    filters.view = filters.view or VIEW_ITEMS
    for name in ("after", "before"):
        text = query.get(name)
        if text in (None, ""):
            continue
        marker = parse_id(text)
        if marker is None:
            filters.dropped.append(f"page marker {name}={str(text)[:30]!r} ignored: not an id; showing the first page")
        else:
            setattr(filters, name, marker)
    if filters.after is not None and filters.before is not None:
        filters.dropped.append("page markers after and before both given: showing the page after")
        filters.before = None
    return form, filters
