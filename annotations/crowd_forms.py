"""The Participants page's crowd quality forms: the consent text and questionnaires, and marking an
item as an attention check (parse and check shapes only; annotations/services/questionnaires.py and
participants_checks.py check the content)."""

from typing import Any

from django import forms

from editlab import safe_json
from editlab.forms import RefusalForm
from editlab.refusals import Refusal

QUESTIONS_HELP = (
    'A JSON list: [{"id": "age", "type": "choice", "text": "Your age?", "choices": ["18-30", "31+"]}, '
    '{"id": "effort", "type": "scale", "text": "How hard was it?", "min": 1, "max": 5}, '
    '{"id": "remarks", "type": "text", "text": "Anything else?", "required": false}]. Empty: none.'
)
QUESTIONS_MAX_BYTES = 200_000


class _QuestionsField(forms.CharField):
    def clean(self, value: Any) -> Any:
        text = super().clean(value)
        if not text or not text.strip():
            return []
        try:
            return safe_json.loads(text, max_depth=5, max_bytes=QUESTIONS_MAX_BYTES)
        except ValueError as exc:
            raise forms.ValidationError(f"not valid JSON: {exc}") from None


class QuestionnaireForm(RefusalForm):
    consent = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 5}),
        required=False,
        max_length=20_000,
        help_text="Markdown shown before the first item with I agree / I do not agree. Empty: no consent page.",
    )
    pre = _QuestionsField(
        widget=forms.Textarea(attrs={"rows": 4}),
        required=False,
        label="Questions before the items",
        help_text=QUESTIONS_HELP,
    )
    post = _QuestionsField(
        widget=forms.Textarea(attrs={"rows": 4}),
        required=False,
        label="Questions after the items",
        help_text="The same shape; asked after the last item, before the completion code.",
    )
    for_lab = forms.BooleanField(required=False, label="Ask lab annotators too")

    def add_refusal(self, refusal: Refusal) -> None:
        """A refusal ("pre[2].type: ...") whole under the field it names (the path says which question)."""
        name = str(refusal).split(":", 1)[0].split("[", 1)[0].split(".", 1)[0]
        self.add_error(name if name in self.fields else None, str(refusal))


class AttentionCheckForm(RefusalForm):
    external_id = forms.CharField(max_length=255, label="Item id", help_text="The item's external id.")
    kind = forms.ChoiceField(
        choices=[("planted", "planted error"), ("gold", "gold edit"), ("none", "not a check (unmark)")]
    )
    planted = forms.CharField(
        max_length=10_000,
        required=False,
        label="Planted error",
        help_text="Planted error: the erroneous text as it stands in the model output (once); passes when changed.",
    )
    gold = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}),
        max_length=100_000,
        required=False,
        help_text="Gold edit: the expected text (empty: the item's first gold edit).",
    )
    max_distance = forms.IntegerField(
        min_value=0,
        max_value=1000,
        required=False,
        initial=0,
        label="Largest distance that passes",
        help_text="Gold edit: Levenshtein distance in characters, whitespace runs counted as one space.",
    )

    FIELDS_OF_SERVICE = {"end": "planted"}
