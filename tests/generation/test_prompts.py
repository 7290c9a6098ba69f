"""Prompt templates: fields from the item, refusals naming the field and line, the size limit."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from editlab.refusals import Refusal
from generation.prompts import (
    FIELDS,
    PromptTooLarge,
    TemplateRefused,
    item_fields,
    prompt_render,
    template_parse,
    variables_parse,
)
from tests.factories import ItemFactory, ProjectFactory


@pytest.fixture
def item(db):
    project = ProjectFactory(instructions=["Answer as an accountant."])
    return ItemFactory(
        project=project,
        external_id="q1",
        source="What is a ledger?",
        model_output="A book.",
        references=["Ledgers record transactions.", {"title": "Glossary", "text": "Ledger: the book of accounts."}],
    )


def test_fields_come_from_the_item(item):
    values = item_fields(item)
    assert values["question"] == values["source"] == "What is a ledger?"
    assert values["instruction"] == "Answer as an accountant."
    assert (
        values["references"]
        == values["knowledge"]
        == ("Ledgers record transactions.\n\nGlossary\nLedger: the book of accounts.")
    )
    assert values["answer"] == values["model_output"] == "A book."
    assert item_fields(item, answer="Another text.")["answer"] == "Another text."
    assert set(values) == set(FIELDS)


def test_a_template_with_a_system_message_renders_two_messages(item):
    template = template_parse(
        "system:\nYou are an {domain} expert.\n---\nQ: {question}\nKnowledge:\n{knowledge}\n{{literal}}",
        name="t.txt",
        variables={"domain": "accounting"},
    )
    messages = prompt_render(template, {"domain": "accounting", **item_fields(item)}, max_chars=10_000)
    assert messages == [
        {"role": "system", "content": "You are an accounting expert."},
        {
            "role": "user",
            "content": "Q: What is a ledger?\nKnowledge:\nLedgers record transactions.\n\nGlossary\n"
            "Ledger: the book of accounts.\n{literal}",
        },
    ]


def test_an_unknown_field_is_refused_naming_it_and_its_line():
    with pytest.raises(TemplateRefused, match=r"t.txt, line 2: unknown field \{expertise\}"):
        template_parse("Q: {question}\nUse {expertise}.", name="t.txt")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("{question.__class__}", "is not a field"),
        ("{0}", "is not a field"),
        ("{}", "is not a field"),
        ("{question!r}", "no format spec or conversion"),
        ("{question:>10}", "no format spec or conversion"),
        ("unbalanced {question", "literal braces"),
        ("unbalanced }", "literal braces"),
        ("system:\nno end", "no line '---'"),
        ("system:\nhi\n---\n  ", "no user message"),
        ("a\x00b", "NUL"),
    ],
)
def test_malformed_templates_are_refused(text, says):
    with pytest.raises(TemplateRefused, match=says):
        template_parse(text, name="t.txt")


def test_an_oversized_prompt_is_refused_before_any_call(item):
    template = template_parse("{references}", name="t.txt")
    with pytest.raises(PromptTooLarge, match=r"item 'q1' is 68 characters, over the limit of 20"):
        prompt_render(template, item_fields(item), max_chars=20, item_name="item 'q1'")


def test_variables():
    assert variables_parse(["domain=accounting", "expert = an accountant"]) == {
        "domain": "accounting",
        "expert": " an accountant",
    }
    for bad in ["novalue", "1x=2", "question=x"]:
        with pytest.raises(TemplateRefused, match="--var"):
            variables_parse([bad])


class Plain:
    """An item-like object for the property test (no database)."""

    def __init__(self, source, output, refs):
        self.source, self.model_output, self.references = source, output, refs
        self.external_id, self.task_type = "x", ""


@given(
    template=st.text(max_size=200),
    source=st.text(max_size=100),
    refs=st.lists(
        st.one_of(st.text(max_size=50), st.dictionaries(st.text(max_size=5), st.text(max_size=20))), max_size=3
    ),
    limit=st.integers(min_value=1, max_value=500),
)
def test_rendering_raises_nothing_but_a_refusal(template, source, refs, limit):
    try:
        parsed = template_parse(template, name="gen.txt")
        messages = prompt_render(parsed, item_fields(Plain(source, "out", refs)), max_chars=limit)
    except Refusal as exc:
        assert str(exc)
        return
    assert sum(len(m["content"]) for m in messages) <= limit
    assert messages[-1]["role"] == "user"


@given(st.lists(st.sampled_from(sorted(FIELDS)), min_size=1, max_size=5), st.text(max_size=40))
def test_every_field_is_replaced_by_its_value(names, filler):
    text = " ".join("{" + n + "}" for n in names)
    values = {n: f"<{n}:{filler}>" for n in FIELDS}
    (message,) = prompt_render(template_parse(text), values, max_chars=10**6)
    assert message["content"] == " ".join(values[n] for n in names)
