"""Prompt templates: a text with `{field}` places filled from an item's fields.

A template is plain text; `{name}` is replaced by the item's field `name`, `{{` and `}}` are literal
braces. Only plain names are places: no attribute access, index, conversion or format spec (a template
is input, and `str.format` would let it read any attribute of what it is given). A template naming a
field that does not exist is refused naming the field and the line; a rendered prompt over the size
limit is refused before any call. The fields (`FIELDS`) are the item's: its source (the question), its
instruction, its references (the expert knowledge), its model output (the answer, for an edit), plus
the variables a run is given (`--var name=value`, e.g. the domain words of the seed study's prompts).

A template file may start with a system message: its lines up to a line `---` (only when the file's
first line is `system:`) are the system message, the rest the user message.

Pure: nothing here touches Django.
"""

from __future__ import annotations

import hashlib
import re
import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from annotations.references import references_shown
from editlab.refusals import Refusal

# Field name -> what it holds (shown in the refusal naming an unknown field, and in the README).
FIELDS: dict[str, str] = {
    "source": "the item's source (the question, the source sentence)",
    "question": "the item's source (the same as source)",
    "instruction": "the item's instruction, else the project's",
    "references": "the item's reference documents, one after the other (the expert knowledge)",
    "knowledge": "the same as references",
    "model_output": "the item's model output",
    "answer": "the text to edit: the model output, or the output named by --output",
    "external_id": "the item's id in the project",
    "task_type": "the item's task type",
}
VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}\Z")
_SYSTEM_HEAD = "system:"
_SEPARATOR = "---"


class TemplateRefused(Refusal):
    code = "template_refused"


class PromptTooLarge(Refusal):
    code = "prompt_too_large"


@dataclass(frozen=True)
class Template:
    name: str  # the file's name, for messages and provenance
    system: str  # "" when the file has no system message
    user: str

    @property
    def text(self) -> str:
        return f"{_SYSTEM_HEAD}\n{self.system}\n{_SEPARATOR}\n{self.user}" if self.system else self.user

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8", "surrogatepass")).hexdigest()

    def fields(self) -> set[str]:
        return _places(self.system, self.name) | _places(self.user, self.name)


def _line_of(text: str, needle: str) -> int:
    at = text.find(needle)
    return text.count("\n", 0, at) + 1 if at >= 0 else 1


def _places(text: str, name: str) -> set[str]:
    """The field names `text` asks for; refused for anything but plain names."""
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as exc:
        raise TemplateRefused(
            f"template {name}: {exc} (write {{{{ and }}}} for literal braces, {{field}} for a field)"
        ) from None
    places: set[str] = set()
    for _literal, field_name, spec, conversion in parsed:
        if field_name is None:
            continue
        shown = "{" + field_name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
        line = _line_of(text, shown)
        if not VAR_NAME.match(field_name):
            raise TemplateRefused(
                f"template {name}, line {line}: {shown!r} is not a field; a field is a plain name such as "
                "{source} (write {{ and }} for literal braces)"
            )
        if spec or conversion:
            raise TemplateRefused(f"template {name}, line {line}: {shown!r}: fields take no format spec or conversion")
        places.add(field_name)
    return places


def template_parse(text: object, *, name: str = "template", variables: Mapping[str, str] | None = None) -> Template:
    """A template from a file's text; refused (TemplateRefused) for a malformed place or a field that is
    neither an item field nor one of `variables`."""
    if not isinstance(text, str):
        raise TemplateRefused(f"template {name} is not text")
    if "\x00" in text:
        raise TemplateRefused(f"template {name} holds a NUL character")
    system, user = "", text
    lines = text.split("\n")
    if lines and lines[0].strip().lower() == _SYSTEM_HEAD:
        try:
            end = next(i for i, line in enumerate(lines) if i > 0 and line.strip() == _SEPARATOR)
        except StopIteration:
            raise TemplateRefused(
                f"template {name}: it starts with 'system:' but has no line '---' ending the system message"
            ) from None
        system, user = "\n".join(lines[1:end]), "\n".join(lines[end + 1 :])
    if not user.strip():
        raise TemplateRefused(f"template {name} has no user message")
    template = Template(name=name, system=system, user=user)
    known = set(FIELDS) | set(variables or {})
    unknown = sorted(template.fields() - known)
    if unknown:
        field_name = unknown[0]
        line = _line_of(text, "{" + field_name + "}")
        raise TemplateRefused(
            f"template {name}, line {line}: unknown field {{{field_name}}}; the fields are "
            f"{', '.join(sorted(FIELDS))}, and the variables given with --var name=value"
            + (f" ({', '.join(sorted(variables))})" if variables else "")
        )
    return template


def variables_parse(pairs: list[str] | None) -> dict[str, str]:
    """`name=value` pairs (the --var option) as a dict; refused naming a malformed pair."""
    out: dict[str, str] = {}
    for pair in pairs or []:
        name, sep, value = pair.partition("=")
        name = name.strip()
        if not sep or not VAR_NAME.match(name):
            raise TemplateRefused(f"--var {pair!r}: write name=value, the name a plain identifier")
        if name in FIELDS:
            raise TemplateRefused(f"--var {name}: {name} is an item field, not a variable")
        out[name] = value
    return out


def item_fields(item: Any, *, answer: str | None = None) -> dict[str, str]:
    """The fields of `item` (an annotations Item, or anything with its attributes) a template may use."""
    references = "\n\n".join(ref.metric_text for ref in references_shown(getattr(item, "references", None)))
    source = str(getattr(item, "source", "") or "")
    model_output = str(getattr(item, "model_output", "") or "")
    instruction = getattr(item, "effective_instruction", "")
    return {
        "source": source,
        "question": source,
        "instruction": str(instruction or ""),
        "references": references,
        "knowledge": references,
        "model_output": model_output,
        "answer": model_output if answer is None else answer,
        "external_id": str(getattr(item, "external_id", "") or ""),
        "task_type": str(getattr(item, "task_type", "") or ""),
    }


def _fill(text: str, values: Mapping[str, str]) -> str:
    return "".join(
        literal + (values[field_name] if field_name is not None else "")
        for literal, field_name, _spec, _conv in string.Formatter().parse(text)
    )


def prompt_render(
    template: Template, values: Mapping[str, str], *, max_chars: int, item_name: str = "the item"
) -> list[dict[str, str]]:
    """The chat messages for one item; refused (PromptTooLarge) over `max_chars` characters in all, and
    (TemplateRefused) when a field has no value."""
    missing = sorted(template.fields() - set(values))
    if missing:
        raise TemplateRefused(f"template {template.name}: no value for field {{{missing[0]}}} for {item_name}")
    messages = []
    if template.system:
        messages.append({"role": "system", "content": _fill(template.system, values)})
    messages.append({"role": "user", "content": _fill(template.user, values)})
    size = sum(len(m["content"]) for m in messages)
    if size > max_chars:
        raise PromptTooLarge(
            f"the prompt for {item_name} is {size:,} characters, over the limit of {max_chars:,} "
            "(--max-prompt-chars); nothing was sent"
        )
    return messages


def prompt_sha256(messages: list[dict[str, str]]) -> str:
    joined = "\x1e".join(f"{m['role']}\x1f{m['content']}" for m in messages)
    return hashlib.sha256(joined.encode("utf-8", "surrogatepass")).hexdigest()
