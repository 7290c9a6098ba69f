"""The Generation page's forms: parse and check shapes only (generation.control and generation.services
check the settings themselves and name what they refuse)."""

from __future__ import annotations

from typing import Any

from django import forms

from editlab import limits
from editlab.forms import RefusalForm
from generation.control import TEMPLATE_MAX_BYTES, shipped_templates
from generation.models import GenerationRun
from generation.prompts import TemplateRefused, variables_parse
from generation.services import (
    CONCURRENCY_MAX,
    ITEMS_MAX,
    MAX_TOKENS_MAX,
    PROMPT_MAX_CHARS_DEFAULT,
    TEMPERATURE_MAX,
    TIMEOUT_MAX_S,
)

UPLOAD = ""


def _template_choices() -> list[tuple[str, str]]:
    return [(UPLOAD, "my upload (below)")] + [(name, f"{name} (shipped)") for name in shipped_templates()]


class RunStartForm(RefusalForm):
    kind = forms.ChoiceField(choices=GenerationRun.KIND_CHOICES, initial=GenerationRun.SIMULATION)
    name = forms.CharField(
        max_length=100, help_text="The system (its output is Item.outputs[name]) or the scenario's name."
    )
    endpoint = forms.CharField(
        max_length=2000, help_text="Base URL of the OpenAI-compatible API, e.g. http://127.0.0.1:8000/v1."
    )
    model = forms.CharField(max_length=255, help_text="The model's name as the server serves it.")
    template = forms.ChoiceField(choices=_template_choices, required=False)
    template_file = forms.FileField(
        required=False, help_text=f"A prompt template, UTF-8, at most {TEMPLATE_MAX_BYTES:,} bytes."
    )
    temperature = forms.FloatField(required=False, min_value=0, max_value=TEMPERATURE_MAX)
    max_tokens = forms.IntegerField(required=False, min_value=1, max_value=MAX_TOKENS_MAX)
    seed = forms.IntegerField(required=False, min_value=limits.MIN_BIGINT, max_value=limits.MAX_BIGINT)
    concurrency = forms.IntegerField(initial=1, min_value=1, max_value=CONCURRENCY_MAX)
    timeout_s = forms.FloatField(initial=60.0, min_value=0.001, max_value=TIMEOUT_MAX_S, label="Timeout (s)")
    max_prompt_chars = forms.IntegerField(initial=PROMPT_MAX_CHARS_DEFAULT, min_value=1, max_value=100_000_000)
    source_output = forms.CharField(
        max_length=100, required=False, help_text="A simulation edits this output (empty: the model output)."
    )
    items = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        required=False,
        help_text="Only these items: external ids, one a line (empty: every item).",
    )
    variables = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        required=False,
        help_text="Template variables, name=value, one a line (e.g. the seed study's domain words).",
    )

    def clean_items(self) -> list[str]:
        ids = [line.strip() for line in self.cleaned_data["items"].splitlines() if line.strip()]
        if len(ids) > ITEMS_MAX:
            raise forms.ValidationError(f"at most {ITEMS_MAX:,} items")
        too_long = next((i for i in ids if len(i) > 255), None)
        if too_long is not None:
            raise forms.ValidationError(f"the item id {too_long[:40]!r}… is longer than 255 characters")
        return ids

    def clean_variables(self) -> dict[str, str]:
        lines = [line for line in self.cleaned_data["variables"].splitlines() if line.strip()]
        try:
            return variables_parse(lines)
        except TemplateRefused as exc:  # it names the pair
            raise forms.ValidationError(str(exc).replace("--var", "variable")) from None

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        upload = data.get("template_file")
        if not data.get("template") and upload is None and "template" not in self.errors:
            self.add_error("template_file", "choose a shipped template or upload one")
        if upload is not None and upload.size > TEMPLATE_MAX_BYTES:
            self.add_error("template_file", f"the template is larger than {TEMPLATE_MAX_BYTES:,} bytes")
        return data

    def start_settings(self) -> dict[str, Any]:
        """The keyword arguments of generation.control.generation_start_requested."""
        data = self.cleaned_data
        out: dict[str, Any] = {
            "kind": data["kind"],
            "name": data["name"],
            "endpoint": data["endpoint"],
            "model": data["model"],
            "temperature": data["temperature"],
            "max_tokens": data["max_tokens"],
            "seed": data["seed"],
            "concurrency": data["concurrency"],
            "timeout_s": data["timeout_s"],
            "max_prompt_chars": data["max_prompt_chars"],
            "variables": data["variables"],
            "items": data["items"] or None,
            "source_output": data["source_output"] if data["kind"] == GenerationRun.SIMULATION else "",
        }
        upload = data.get("template_file")
        if upload is not None:
            out |= {"template_text": upload.read(TEMPLATE_MAX_BYTES + 1), "template_filename": upload.name}
        else:
            out["template"] = data["template"]
        return out


class PolicyForm(forms.Form):
    researchers_simulate = forms.BooleanField(required=False)
