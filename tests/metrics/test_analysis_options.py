"""The one front door for analysis options: the report page, the analysis API and the analyze command
accept and refuse the same values, with the same defaults (metrics/analysis_options.py)."""

from urllib.parse import urlencode

import pytest
from django.core.management.base import CommandError
from django.http import QueryDict
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.exceptions import ValidationError

from editlab.api import validated
from metrics.analysis import Settings
from metrics.analysis_options import (
    FLAG_VALUES,
    AnalysisOptionsSerializer,
    SelectionError,
    analysis_options_check,
    analysis_request_build,
    analysis_request_from_query,
)
from metrics.management.commands.analyze import Command, command_options
from tests.factories import ProjectFactory

pytestmark = pytest.mark.django_db

FLAGS = ("exclude_flagged", "log_time", "include_practice", "mixed_models")
FLAG_TEXTS = ["1", "0", "true", "FALSE", " on ", "off", "", "yes", "2", "t", "\u202etrue"]
VALUES = {
    "variant": st.sampled_from(["plain", "with_references", "both", ""]),
    "annotators": st.sampled_from(["", "nobody"]),
    "task_type": st.one_of(st.text(max_size=4), st.just("x" * 101)),
    "origin": st.sampled_from(["", "live", "imported", "elsewhere"]),
    "k": st.sampled_from(["1", "5", "100", "101", "0", "-1", "1.0", "x", " 7"]),
    "test_size": st.sampled_from(["0.05", "0.2", "0.95", "0.96", "0.01", "nan", "x", "1"]),
    "seed": st.sampled_from(["0", "42", str(2**32 - 1), str(2**32), "-1"]),
    "cv_repeats": st.sampled_from(["1", "10", "50", "51", "0"]),
    "idle_threshold": st.sampled_from(["10", "0", "-1", "nan", "86400", "86401", "abc", ""]),
    "baseline": st.sampled_from(["", "x" * 201, "b\x00", "base"]),
    **{name: st.sampled_from(FLAG_TEXTS) for name in FLAGS},
}
TARGETS = st.sampled_from(["wall_time", "active_time", "keystrokes", "allkeys", "minutes", "KEYSTROKES"])
NUMBER_FLAGS = {"k": "--k", "test_size": "--test-size", "seed": "--seed", "cv_repeats": "--cv-repeats"}
TEXT_FLAGS = {
    "target": "--target",
    "variant": "--variant",
    "annotators": "--annotators",
    "task_type": "--task-type",
    "origin": "--origin",
    "idle_threshold": "--idle-threshold",
    "baseline": "--baseline",
}
SWITCHES = {"exclude_flagged": "--exclude-flagged", "log_time": "--log-time", "include_practice": "--include-practice"}


@pytest.fixture
def project():
    return ProjectFactory(name="options")


def page(project, data: dict):
    try:
        return analysis_request_from_query(project=project, query=QueryDict(urlencode(data)))
    except SelectionError:
        return None


def api(project, data: dict):
    try:
        return analysis_request_build(
            project=project, params=validated(AnalysisOptionsSerializer, QueryDict(urlencode(data)))
        )
    except (ValidationError, SelectionError):
        return None


def command(project, data: dict):
    """The command's options for `data`; its flags are switches, so they carry only a valid value."""
    argv = ["--project", project.name]
    for name, value in data.items():
        flag = {**NUMBER_FLAGS, **TEXT_FLAGS}.get(name)
        if flag:
            argv += [f"{flag}={value}"]
        elif name == "mixed_models" and not FLAG_VALUES[value.strip().lower()] and value.strip():
            argv.append("--no-mixed")
        elif name in SWITCHES and FLAG_VALUES[value.strip().lower()]:
            argv.append(SWITCHES[name])
    try:
        options = vars(Command().create_parser("manage.py", "analyze").parse_args(argv))
        return analysis_request_build(project=project, params=analysis_options_check(command_options(options)))
    except (CommandError, SelectionError):
        return None


def _flags_valid(data: dict) -> bool:
    return all(data[name].strip().lower() in FLAG_VALUES for name in FLAGS if name in data)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(target=TARGETS, data=st.fixed_dictionaries({}, optional=VALUES))
def test_the_page_the_api_and_the_command_accept_and_refuse_the_same_values(project, target, data):
    data = {"target": target, **data}
    on_page, on_api = page(project, data), api(project, data)
    assert on_page == on_api, data
    # An empty value on the page and in the API means "the default"; the command does not take one.
    if _flags_valid(data) and all(value != "" for value in data.values()):
        assert command(project, data) == on_page, data


def test_the_three_have_the_same_defaults(project):
    expected = page(project, {"target": "keystrokes"})
    assert expected is not None
    selection, options, baseline = expected
    assert options == Settings() and baseline is None
    assert (selection.variant, selection.annotators, selection.origin) == ("plain", (), "")
    assert not selection.exclude_flagged and not selection.include_practice and selection.idle_threshold_s is None
    assert api(project, {"target": "keystrokes"}) == expected == command(project, {"target": "keystrokes"})


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("k=101", "k: Ensure this value is less than or equal to 100."),
        ("cv_repeats=0", "cv_repeats: Ensure this value is greater than or equal to 1."),
        ("test_size=0.99", "test_size must be between 0 and 1, at most 0.95"),
        ("include_practice=perhaps", "include_practice: Must be a valid boolean: 'perhaps' is not one of"),
        ("mixed_models=maybe", "mixed_models: Must be a valid boolean"),
    ],
)
def test_the_page_names_a_bad_option_instead_of_ignoring_it(researcher_client, project, query, message):
    from django.urls import reverse

    response = researcher_client.get(reverse("metrics-report", kwargs={"project_id": project.pk}) + "?" + query)
    assert response.status_code == 400
    assert message in response.content.decode().replace("&#x27;", "'")


def test_the_page_and_the_export_read_include_practice_alike(researcher_client, project):
    from django.urls import reverse

    for value in ("yes", "2", "t"):
        page_answer = researcher_client.get(
            reverse("metrics-report", kwargs={"project_id": project.pk}), {"include_practice": value}
        )
        export = researcher_client.get(
            reverse("metrics-export", kwargs={"project_id": project.pk}), {"include_practice": value}
        )
        assert (page_answer.status_code, export.status_code) == (400, 400)
    for value in ("1", "TRUE", " on "):
        page_answer = researcher_client.get(
            reverse("metrics-report", kwargs={"project_id": project.pk}), {"include_practice": value}
        )
        assert page_answer.status_code == 200 and page_answer.context["selection"].include_practice is True
