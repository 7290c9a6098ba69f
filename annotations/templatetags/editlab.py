"""Template helpers shared by every editlab page: `{% load editlab %}`.

`markdown` renders admin-written guidelines, and nothing else: Markdown to HTML, then
sanitized with nh3 (ammonia), so no script, style, event handler or javascript: link
survives, whatever the source contains. Text that came from a data file (sources, model
outputs, instructions, references, a task's definition and examples) is shown as text,
escaped by the template: Markdown would eat its `**` and backslashes, and the sanitizer would
drop what looks like a tag (`Ask 'Where is <person_name>?'`).
"""

from typing import Any

import markdown as markdown_lib
import nh3
from django import template
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

# ammonia's defaults, minus what guidelines never need; images are allowed (http/https only).
_ALLOWED_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "div", "dl", "dt", "em", "h1", "h2", "h3",
    "h4", "h5", "h6", "hr", "i", "img", "ins", "kbd", "li", "mark", "ol", "p", "pre", "s", "span", "strong",
    "sub", "sup", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "u", "ul",
}  # fmt: skip
_ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title"},
    "abbr": {"title"},
    "th": {"align"},
    "td": {"align"},
    "code": {"class"},
}
_URL_SCHEMES = {"http", "https", "mailto"}


def render_markdown(text: str | None) -> SafeString:
    """Markdown source -> sanitized HTML, safe to insert into a page unescaped."""
    html = markdown_lib.markdown(text or "", extensions=["extra", "sane_lists"], output_format="html")
    cleaned = nh3.clean(
        html,
        tags=_ALLOWED_TAGS,
        attributes=_ALLOWED_ATTRIBUTES,
        url_schemes=_URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )
    return mark_safe(cleaned)  # noqa: S308 - sanitized by nh3 just above


@register.filter(name="markdown")
def markdown_filter(text: str | None) -> SafeString:
    return render_markdown(text)


@register.simple_tag
def task_examples(subject: Any) -> dict[str, Any] | None:
    """The positive/negative examples of a Super-NaturalInstructions task, for an item or a project.

    They are stored once on the project (`meta["natinst"]`). For an item, only when it came
    from that task: an item of another task imported into the same project does not get them.
    """
    project = getattr(subject, "project", subject)
    task = (project.meta or {}).get("natinst")
    if not isinstance(task, dict):
        return None
    if subject is not project and task.get("task") != (subject.meta or {}).get("natinst_task"):
        return None
    groups = [
        {"label": "Positive examples", "examples": task.get("positive_examples") or []},
        {"label": "Negative examples", "examples": task.get("negative_examples") or []},
    ]
    if not any(group["examples"] for group in groups):
        return None
    return {"task": task.get("task", ""), "groups": groups}


@register.filter(name="seconds")
def seconds_filter(ms: float | None) -> str:
    """Milliseconds as a short human duration: 12345 -> '12.3 s', 95000 -> '1 min 35 s'."""
    if ms is None:
        return "—"
    total = float(ms) / 1000
    if total < 60:
        return f"{total:.1f} s"
    minutes, rest = divmod(round(total), 60)
    return f"{minutes} min {rest} s"
