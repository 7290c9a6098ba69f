import re
from pathlib import Path

import pytest
from django.template import Context, Template

from annotations.templatetags.editlab import render_markdown, seconds_filter


def test_markdown_renders_formatting_lists_and_tables():
    html = render_markdown("# Title\n\n* **bold** and *em*\n* `code`\n\n| a | b |\n|---|---|\n| 1 | 2 |")
    assert "<h1>Title</h1>" in html
    assert "<li><strong>bold</strong> and <em>em</em></li>" in html
    assert "<code>code</code>" in html
    assert "<td>1</td>" in html


@pytest.mark.parametrize(
    "source",
    [
        "<script>alert(1)</script>",
        "[x](javascript:alert(1))",
        '<a href="http://e.org" onclick="alert(1)">e</a>',
        '<img src="x" onerror="alert(1)">',
        "<iframe src='http://e.org'></iframe>",
        "<style>body{display:none}</style>",
        '<a href="JaVaScRiPt:alert(1)">x</a>',
        "[x](data:text/html;base64,PHNjcmlwdD4=)",
    ],
)
def test_markdown_strips_scripts_handlers_and_dangerous_links(source):
    html = render_markdown(source).lower()
    for bad in ("<script", "onclick", "onerror", "javascript:", "<iframe", "<style", "data:text", "alert(1)</"):
        assert bad not in html


def test_links_keep_http_and_get_a_safe_rel():
    html = render_markdown("[site](https://example.org)")
    assert html == '<p><a href="https://example.org" rel="noopener noreferrer nofollow">site</a></p>'


def test_the_filter_is_usable_from_templates():
    rendered = Template("{% load editlab %}{{ text|markdown }}").render(
        Context({"text": "*hi* <b onmouseover=x>b</b>"})
    )
    assert rendered == "<p><em>hi</em> <b>b</b></p>"
    assert render_markdown(None) == ""


@pytest.mark.parametrize(("ms", "text"), [(None, "—"), (0, "0.0 s"), (12345, "12.3 s"), (95000, "1 min 35 s")])
def test_seconds_filter(ms, text):
    assert seconds_filter(ms) == text


ADMIN_MARKDOWN = {"project.guidelines", "questionnaire.consent"}  # texts admins write on the project's pages


def test_only_what_admins_write_is_rendered_as_markdown_anywhere():
    # The guidelines and the consent text; everything else on a page came from a data file or a participant and is
    # shown as text (escaped by the template).
    roots = [Path(__file__).resolve().parents[2] / app for app in ("annotations", "metrics", "templates")]
    uses = [
        (path.name, line.strip())
        for root in roots
        for path in root.rglob("*.html")
        for line in path.read_text(encoding="utf-8").splitlines()
        if "|markdown" in line
    ]

    assert uses  # the editor and the project page render them
    for name, line in uses:
        rendered = re.findall(r"\{\{\s*([\w.]+)\|markdown\s*\}\}", line)
        assert len(rendered) == 1 and rendered[0] in ADMIN_MARKDOWN, (name, line)


def test_admin_markdown_keeps_backslash_escapes_and_drops_unknown_tags():
    # What an admin writes is Markdown: `\*` is a literal star; an unknown tag is dropped by the sanitiser,
    # which the project page's preview shows before annotators see it.
    assert render_markdown(r"Keep \*stars\* and **bold**") == "<p>Keep *stars* and <strong>bold</strong></p>"
    assert render_markdown("Ask 'Where is <person_name>?'") == "<p>Ask 'Where is ?'</p>"
