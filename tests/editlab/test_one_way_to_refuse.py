"""One way to refuse (docs/layout.md): every refusal is an editlab.refusals.Refusal; a page shows one in place
only through `attempt` or a RefusalForm's `submit`; no view catches one itself; a refusal of who asks
(401, 403, 404) is never shown in place of a form."""

import ast
import builtins
import importlib
from pathlib import Path

import pytest
from django import forms
from hypothesis import given
from hypothesis import strategies as st

from editlab.forms import RefusalForm
from editlab.refusals import NOT_ABOUT_THE_INPUT, Outcome, Refusal, attempt

ROOT = Path(__file__).resolve().parents[2]
# Every module that answers a request: pages and API views.
VIEW_MODULES = sorted(
    [
        *ROOT.glob("annotations/views/*.py"),
        *ROOT.glob("annotations/api/views*.py"),
        *ROOT.glob("metrics/views/*.py"),
        *ROOT.glob("metrics/api/views*.py"),
        *ROOT.glob("generation/views*.py"),
        ROOT / "editlab/views.py",
    ]
)


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def _caught(handler: ast.ExceptHandler) -> list[ast.expr]:
    if handler.type is None:
        return []
    return list(handler.type.elts) if isinstance(handler.type, ast.Tuple) else [handler.type]


def _resolve(module, node: ast.expr):
    if isinstance(node, ast.Name):
        return getattr(module, node.id, None) or getattr(builtins, node.id, None)
    if isinstance(node, ast.Attribute):
        owner = _resolve(module, node.value)
        return getattr(owner, node.attr, None) if owner is not None else None
    return None


def test_the_view_modules_are_found():
    assert len(VIEW_MODULES) >= 20
    assert ROOT / "annotations/views/manage.py" in VIEW_MODULES


@pytest.mark.parametrize("path", VIEW_MODULES, ids=_module_name)
def test_no_view_catches_a_refusal_itself(path):
    module = importlib.import_module(_module_name(path))
    catches = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ExceptHandler):
            for caught in _caught(node):
                cls = _resolve(module, caught)
                assert isinstance(cls, type), f"{path.name}:{node.lineno}: cannot tell what {ast.unparse(caught)} is"
                if issubclass(cls, Refusal):
                    catches.append(f"{path.name}:{node.lineno} catches {cls.__name__}")
    assert catches == []


class Refused(Refusal):
    code = "refused"


def _status_of(status: int):
    return type(f"Refusal{status}", (Refusal,), {"status": status, "code": f"s{status}"})


@given(st.sampled_from([400, 401, 403, 404, 409, 410, 413, 422, 429, 503]), st.text(max_size=40))
def test_attempt_keeps_a_refusal_of_the_input_and_lets_one_of_who_asks_through(status, message):
    error = _status_of(status)(message)

    def service(**kwargs):
        raise error

    if status in NOT_ABOUT_THE_INPUT:
        with pytest.raises(type(error)):
            attempt(service, a=1)
    else:
        outcome = attempt(service, a=1)
        assert not outcome and outcome.refusal is error and outcome.value is None


@given(st.dictionaries(st.text(min_size=1, max_size=5), st.integers(), max_size=4), st.none() | st.integers())
def test_attempt_returns_what_the_service_returns_with_the_arguments_given(kwargs, value):
    seen = {}

    def service(**given_kwargs):
        seen.update(given_kwargs)
        return value

    assert attempt(service, **kwargs) == Outcome(value)
    assert bool(attempt(service, **kwargs)) and seen == kwargs


def test_attempt_lets_any_other_exception_through():
    def broken():
        raise KeyError("a bug, not a refusal")

    with pytest.raises(KeyError):
        attempt(broken)


class _Form(RefusalForm):
    name = forms.CharField()
    size = forms.IntegerField()
    FIELDS_OF_SERVICE = {"target_name": "name"}


@given(
    st.sampled_from(["name", "size", "target_name", "other", "", "name.x"]),
    st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters=":"), min_size=1, max_size=30),
)
def test_a_refusal_goes_under_the_field_it_names_else_above_the_form(field, text):
    form = _Form({"name": "n", "size": "1"})
    assert form.is_valid()
    message = f"{field}: {text}" if field else text

    def service():
        raise Refused(message)

    outcome = form.submit(service)
    assert not outcome and form.refusal is outcome.refusal
    named = {"name": "name", "size": "size", "target_name": "name"}.get(field)
    if named is not None:
        assert form.errors == {named: [text]}
    else:
        assert form.errors == {"__all__": [message]}


def test_a_forbidden_refusal_is_not_put_on_the_form():
    form = _Form({"name": "n", "size": "1"})
    assert form.is_valid()

    def service():
        raise _status_of(403)("Only admins may.")

    with pytest.raises(Refusal):
        form.submit(service)
    assert form.refusal is None and form.errors == {}
