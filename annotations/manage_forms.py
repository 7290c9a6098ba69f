"""Forms of the admin pages (annotations/views/manage.py). They only parse and check
input; the services do the work."""

from typing import Any

from django import forms
from django.db.models import QuerySet

from annotations.design import DESIGN_MAX_ANNOTATORS, DesignError
from annotations.models import Batch, Project
from annotations.selectors import annotator_queryset
from editlab.forms import RefusalForm
from editlab.limits import CONTEXT_WINDOW_MAX, CONTEXT_WINDOW_MIN, IDLE_THRESHOLD_MAX_S, MAX_SMALL, parse_id

INSTRUCTIONS_FILE_MAX_BYTES = 1024 * 1024


class ProjectForm(forms.Form):
    name = forms.CharField(max_length=200)
    guidelines = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 10, "cols": 80}),
        required=False,
        help_text="Markdown, shown to annotators beside the text (HTML is sanitized).",
    )
    task_type = forms.CharField(
        max_length=100, required=False, help_text="e.g. fluency, clarity, mt; picks the list in an instructions file."
    )
    instructions = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 6, "cols": 80}),
        required=False,
        help_text="One per line. With several, each item gets one drawn at random (seed recorded).",
    )
    instructions_file = forms.FileField(
        required=False,
        help_text='Or a JSON file mapping task types to instruction lists, e.g. {"instructions": {"fluency": [...]}}; '
        "replaces the typed instructions.",
    )
    idle_threshold_s = forms.FloatField(
        initial=30.0,
        min_value=0.5,
        max_value=IDLE_THRESHOLD_MAX_S,
        label="Idle threshold (s)",
        help_text="Longer gaps are idle, not active time (at most a day).",
    )
    # max: the column is a PositiveSmallIntegerField (a larger number would be a database error, a 500).
    overlap = forms.IntegerField(
        initial=1, min_value=1, max_value=MAX_SMALL, label="Overlap k", help_text="Annotators per item."
    )
    # The study settings. The service checks the tags (annotations.design.language_error) and the
    # range; a field the POST does not carry at all is kept as it is (views/manage.py).
    source_lang = forms.CharField(
        max_length=35,
        required=False,
        label="Source language",
        help_text="BCP 47 tag (en, de-CH, zh-Hant); empty: unknown (text direction auto).",
    )
    target_lang = forms.CharField(
        max_length=35,
        required=False,
        label="Target language",
        help_text="BCP 47 tag of the post-edits; sets the editor's direction and spellcheck language.",
    )
    context = forms.ChoiceField(
        choices=Project.CONTEXT_CHOICES,
        initial=Project.CONTEXT_NONE,
        required=False,
        widget=forms.RadioSelect,
        label="Document context",
        help_text="What the editor shows around a segment of a document (read-only).",
    )
    context_window = forms.IntegerField(
        min_value=CONTEXT_WINDOW_MIN,
        max_value=CONTEXT_WINDOW_MAX,
        initial=2,
        required=False,
        label="Context window N",
        help_text=f"With N segments before and after: N ({CONTEXT_WINDOW_MIN}-{CONTEXT_WINDOW_MAX}).",
    )

    STUDY_FIELDS = ("source_lang", "target_lang", "context", "context_window")

    def basic_fields(self) -> list:
        return [field for field in self if field.name not in self.STUDY_FIELDS]

    def study_fields(self) -> list:
        return [self[name] for name in self.STUDY_FIELDS]

    def clean_instructions_file(self):
        upload = self.cleaned_data.get("instructions_file")
        if upload is None:
            return None
        if upload.size > INSTRUCTIONS_FILE_MAX_BYTES:
            raise forms.ValidationError(
                f"{upload.name}: {upload.size} bytes, over the limit of {INSTRUCTIONS_FILE_MAX_BYTES} bytes."
            )
        return upload

    @classmethod
    def initial_for(cls, project: Project) -> dict:
        return {
            "name": project.name,
            "guidelines": project.guidelines,
            "task_type": project.task_type,
            "instructions": "\n".join(project.instructions),
            "idle_threshold_s": project.idle_threshold_s,
            "overlap": project.overlap,
            "source_lang": project.source_lang,
            "target_lang": project.target_lang,
            "context": project.context,
            "context_window": project.context_window,
        }


class ConditionForm(forms.Form):
    """One declared condition; annotations.design.parse_conditions (in the service) checks the list."""

    name = forms.CharField(max_length=100, required=False)
    output = forms.CharField(
        max_length=100,
        required=False,
        label="Editor starts with output",
        help_text="A system name of the items' outputs (listed under What the conditions need); empty: an empty "
        "editor (translating from scratch).",
    )
    highlights = forms.BooleanField(required=False, label="Show error highlights")


MAX_CONDITION_ROWS = 100  # the service's MAX_CONDITIONS
BLANK_CONDITION_ROWS = 3  # beside the declared ones; "Add a condition" offers one more without saving


class _ConditionRows(forms.BaseFormSet):
    def clean(self) -> None:
        # Django reads a negative row count as none: the list would be emptied by a forged count.
        if (self.management_form.cleaned_data.get("TOTAL_FORMS") or 0) < 0:
            raise forms.ValidationError("The number of condition rows sent is negative; reload the page.")


ConditionFormSet = forms.formset_factory(
    ConditionForm,
    formset=_ConditionRows,
    extra=BLANK_CONDITION_ROWS,
    can_delete=True,
    max_num=MAX_CONDITION_ROWS,
    validate_max=True,
    absolute_max=MAX_CONDITION_ROWS,
)
CONDITIONS_PREFIX = "conditions"


def condition_formset(data=None, *, project: Project | None = None, more_rows: int = 0):
    """The conditions' rows: bound to a POST (with `more_rows` blank rows added), or showing the
    project's declared conditions and BLANK_CONDITION_ROWS blank ones."""
    if data is not None:
        if more_rows:
            data = data.copy()
            key = f"{CONDITIONS_PREFIX}-TOTAL_FORMS"
            total = parse_id(str(data.get(key, ""))) or 0
            data[key] = str(min(total + more_rows, MAX_CONDITION_ROWS))
        return ConditionFormSet(data, prefix=CONDITIONS_PREFIX)
    initial = []
    if project is not None and isinstance(project.conditions, list):
        for entry in project.conditions:
            if isinstance(entry, dict):
                initial.append(
                    {
                        "name": entry.get("name") if isinstance(entry.get("name"), str) else "",
                        "output": entry.get("output") if isinstance(entry.get("output"), str) else "",
                        "highlights": entry.get("highlights") is True,
                    }
                )
    return ConditionFormSet(initial=initial, prefix=CONDITIONS_PREFIX)


def conditions_from_formset(formset) -> tuple[list[dict], list[int]]:
    """The conditions the rows declare as parse_conditions reads them, and which row each came from
    (deleted and untouched blank rows are no condition)."""
    conditions, rows = [], []
    for index, form in enumerate(formset.forms):
        data = form.cleaned_data
        if not data or data.get("DELETE"):
            continue
        name, output, highlights = data.get("name", ""), data.get("output", ""), bool(data.get("highlights"))
        if not name and not output and not highlights:
            continue
        conditions.append({"name": name, "output": output or None, "highlights": highlights})
        rows.append(index)
    return conditions, rows


class MakeBatchesForm(RefusalForm):
    size = forms.IntegerField(min_value=1, initial=20, help_text="Items per batch; the last may be smaller.")
    shuffle_seed = forms.IntegerField(
        required=False, label="Shuffle seed", help_text="Empty: import order. A number: that seeded random order."
    )


def _ids_in_range(values) -> None:
    """Choices are ids: beyond the column's range the database errs on the lookup (a 500, not a message)."""
    for value in values:
        text = str(value)
        if text not in ("", "None") and parse_id(text) is None:
            raise forms.ValidationError(f"{text[:40]!r} is not an id.", code="invalid_pk_value")


class _AnnotatorChoice(forms.ModelChoiceField):
    def to_python(self, value):
        _ids_in_range([value] if value not in self.empty_values else [])
        return super().to_python(value)

    def label_from_instance(self, obj) -> str:
        return obj.username


class _BoundedMultipleChoice(forms.ModelMultipleChoiceField):
    def clean(self, value: Any) -> QuerySet:
        if isinstance(value, list | tuple):  # anything else: the parent names the problem
            _ids_in_range(value)
        return super().clean(value)


def _model_choices(form: forms.Form, name: str) -> forms.ModelChoiceField:
    """The form's (per-instance) model choice field `name`, whose queryset is set per project."""
    field = form.fields[name]
    if not isinstance(field, forms.ModelChoiceField):
        raise TypeError(f"{type(form).__name__}.{name} is not a model choice field")
    return field


class _AnnotatorsChoice(_BoundedMultipleChoice):
    def label_from_instance(self, obj) -> str:
        return obj.username


class _BatchesChoice(_BoundedMultipleChoice):
    def label_from_instance(self, obj) -> str:
        return obj.name


class AssignForm(RefusalForm):
    annotators = _AnnotatorsChoice(queryset=annotator_queryset(), widget=forms.CheckboxSelectMultiple)
    overlap = forms.IntegerField(min_value=1, label="Overlap k")
    batches = _BatchesChoice(
        queryset=Batch.objects.none(), required=False, help_text="None selected: every batch of the project."
    )

    def __init__(self, *args, project: Project, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        _model_choices(self, "annotators").queryset = annotator_queryset()
        _model_choices(self, "batches").queryset = project.batches.order_by("id")
        self.fields["overlap"].initial = project.overlap

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data
        annotators, overlap = cleaned.get("annotators"), cleaned.get("overlap")
        if annotators is not None and overlap is not None and overlap > len(annotators):
            self.add_error(
                "overlap",
                f"Each item needs {overlap} distinct annotators but only {len(annotators)} are selected.",
            )
        return cleaned


class MoveForm(RefusalForm):
    WITHDRAW = "withdraw"
    REASSIGN = "reassign"

    action = forms.ChoiceField(choices=[(WITHDRAW, "withdraw"), (REASSIGN, "reassign to")])
    from_annotator = _AnnotatorChoice(queryset=annotator_queryset(), label="From")
    to_annotator = _AnnotatorChoice(queryset=annotator_queryset(), required=False, label="To")
    batches = _BatchesChoice(
        queryset=Batch.objects.none(), required=False, help_text="None selected: every batch of the project."
    )
    force = forms.BooleanField(required=False, label="Include in-progress work (discards its draft)")

    def __init__(self, *args, project: Project, **kwargs) -> None:
        # Ids of its own: the Assign form on the same page has a "batches" field too, and a second
        # id_batches would leave this one's label pointing at the other's list.
        kwargs.setdefault("auto_id", "id_move_%s")
        super().__init__(*args, **kwargs)
        _model_choices(self, "from_annotator").queryset = annotator_queryset()
        _model_choices(self, "to_annotator").queryset = annotator_queryset()
        _model_choices(self, "batches").queryset = project.batches.order_by("id")

    def clean(self) -> dict[str, Any]:
        super().clean()
        cleaned = self.cleaned_data
        if cleaned.get("action") == self.REASSIGN:
            target = cleaned.get("to_annotator")
            if target is None:
                self.add_error("to_annotator", "Choose who takes the assignments.")
            elif target == cleaned.get("from_annotator"):
                self.add_error("to_annotator", "Choose a different annotator.")
        return cleaned


class JoinLinkForm(RefusalForm):
    """A participation link's settings (annotations/services/participants.py checks them)."""

    completion_code = forms.CharField(
        max_length=200,
        required=False,
        help_text="The code the platform gave you, shown to each participant at the end.",
    )
    completion_url = forms.CharField(
        max_length=2000,
        required=False,
        label="Completion URL",
        help_text="Where participants are sent at the end (http/https), e.g. Prolific's "
        "https://app.prolific.com/submissions/complete?cc=C1234ABC; {code} in it is replaced by the code.",
    )
    max_participants = forms.IntegerField(
        min_value=1, max_value=1_000_000, required=False, help_text="Empty: as many as the design takes."
    )
    max_skips = forms.IntegerField(
        min_value=0,
        max_value=1_000_000,
        required=False,
        initial=0,
        label="Skips that still earn the code",
        help_text="0: the code needs every non-practice item submitted. Who skips more gets no code.",
    )
    idle_minutes = forms.IntegerField(
        min_value=0,
        max_value=7 * 24 * 60,
        required=False,
        initial=30,
        label="Release an idle slot after (minutes)",
        help_text="A participant inactive this long loses the slot to the next newcomer; 0: never.",
    )
    participant_param = forms.CharField(
        max_length=64, initial="PROLIFIC_PID", label="Participant id parameter", help_text="Prolific: PROLIFIC_PID."
    )
    study_param = forms.CharField(
        max_length=64, initial="STUDY_ID", required=False, label="Study id parameter", help_text="Empty: not read."
    )
    session_param = forms.CharField(
        max_length=64, initial="SESSION_ID", required=False, label="Session id parameter", help_text="Empty: not read."
    )
    max_failed_checks = forms.IntegerField(
        min_value=0, max_value=1_000_000, required=False, initial=0, label="Attention checks that may fail"
    )
    failed_code = forms.CharField(max_length=200, required=False, help_text="The platform's failed-attention code.")
    failed_url = forms.CharField(max_length=2000, required=False, label="Failed-attention URL")

    FIELDS_OF_SERVICE = {
        "params.participant": "participant_param",
        "params.study": "study_param",
        "params.session": "session_param",
    }


class LatinSquareForm(RefusalForm):
    """The Latin-square design's choices: who, and which of the project's declared conditions. Shown
    as a plan first (a GET), then applied with the digest of the plan that was shown (a POST)."""

    annotators = _AnnotatorsChoice(
        queryset=annotator_queryset(),
        widget=forms.CheckboxSelectMultiple,
        help_text="Each edits every document once; at least as many annotators as conditions.",
        error_messages={
            "required": "Choose at least as many annotators as conditions.",
            "invalid_choice": "%(value)s is not an active annotator: choose among the annotators listed "
            "(roles are given in the admin site or with the add_user command).",
        },
    )
    conditions = forms.MultipleChoiceField(
        choices=[],
        widget=forms.CheckboxSelectMultiple,
        help_text="Counterbalanced across annotators and documents (declared in the project's settings).",
    )
    plan_digest = forms.CharField(required=False, max_length=64, widget=forms.HiddenInput)

    def __init__(self, *args, project: Project, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.declared_error = ""
        try:
            declared = [condition.name for condition in project.declared_conditions()]
        except DesignError as exc:
            declared, self.declared_error = [], str(exc)
        self.declared = declared
        _model_choices(self, "annotators").queryset = annotator_queryset()
        conditions = self.fields["conditions"]
        if not isinstance(conditions, forms.MultipleChoiceField):
            raise TypeError("LatinSquareForm.conditions is not a multiple choice field")
        conditions.choices = [(name, name) for name in declared]
        conditions.initial = declared
        available = ", ".join(declared) or "none yet (declare them in the settings)"
        conditions.error_messages = {
            "required": f"Choose at least one condition; the project declares {available}.",
            "invalid_choice": f"%(value)s is not a condition of this project; it declares {available}.",
        }

    def clean_annotators(self):
        annotators = self.cleaned_data["annotators"]
        if len(annotators) > DESIGN_MAX_ANNOTATORS:
            raise forms.ValidationError(
                f"At most {DESIGN_MAX_ANNOTATORS:,} annotators in one plan, {len(annotators):,} are ticked: "
                "assign the study in parts of at most that many."
            )
        return annotators

    def clean_conditions(self) -> list[str]:
        chosen = set(self.cleaned_data["conditions"])
        return [name for name in self.declared if name in chosen]  # the declared order, whatever the POST's
