"""The post-edit export's provenance columns (gen_*): how an LLM made a row's text, in CSV, JSON Lines
and Parquet; empty for a person's edit of an imported output or of the model output; the API key never."""

import csv
import hashlib
import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotations.models import Item, PostEdit
from generation.models import GenerationRecord, GenerationRun
from generation.prompts import prompt_sha256
from generation.selectors import PROVENANCE_COLUMNS
from generation.services import generation_run_start
from metrics.exports import export_spec, export_stream
from tests.factories import SubmittedPostEditFactory, UserFactory

KEY = "sk-export-secret-0123456789"
OUTPUT_TEMPLATE = "system:\nYou answer questions.\n---\nQuestion: {question}"
EDIT_TEMPLATE = "Question: {question}\nAnswer to edit:\n{answer}"
FAKE_CREATED = "2023-11-14T22:13:20Z"  # the fake server's `created`, 1,700,000,000 s after the epoch


def response_id(body) -> str:
    """The fake server's response id: a hash of the request body (generation.fakeserver)."""
    return "chatcmpl-" + hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:24]


def words(messages) -> int:
    return sum(len(str(m.get("content", "")).split()) for m in messages)


@pytest.fixture
def world(project, server, settings):
    """Outputs of system `llm` generated for every item, synthetic edits under `fast`, and people's
    post-edits under a generated output, an imported output, no condition, and a changed start text."""
    settings.EDITLAB_LLM_API_KEY = KEY
    project.conditions = [
        {"name": "shown-llm", "output": "llm", "highlights": False},
        {"name": "shown-imported", "output": "imported", "highlights": False},
    ]
    project.save()
    for item in Item.objects.filter(project=project):
        item.outputs = {"imported": f"An imported answer to {item.external_id}."}
        item.save()
    made = generation_run_start(
        project=project,
        kind="output",
        name="llm",
        endpoint=server.base_url,
        model="m",
        template_text=OUTPUT_TEMPLATE,
        template_name="answer.txt",
        temperature=0.5,
        max_tokens=64,
        seed=7,
    )
    asked = len(server.requests)
    simulation = generation_run_start(
        project=project,
        kind="simulation",
        name="fast",
        endpoint=server.base_url,
        model="m-edit",
        template_text=EDIT_TEMPLATE,
        template_name="fast.txt",
        seed=3,
    )
    assert (made.status, made.generated, simulation.status, simulation.generated) == ("done", 5, "done", 5)
    items = {i.external_id: i for i in Item.objects.filter(project=project)}
    anna, bob = UserFactory(username="anna"), UserFactory(username="bob")
    human = {
        "generated": SubmittedPostEditFactory(
            assignment__item=items["q0"],
            assignment__annotator=anna,
            condition="shown-llm",
            start_override=items["q0"].outputs["llm"],
        ),
        "imported": SubmittedPostEditFactory(
            assignment__item=items["q1"],
            assignment__annotator=anna,
            condition="shown-imported",
            start_override=items["q1"].outputs["imported"],
        ),
        "model_output": SubmittedPostEditFactory(assignment__item=items["q2"], assignment__annotator=anna),
        "other_start": SubmittedPostEditFactory(
            assignment__item=items["q3"],
            assignment__annotator=anna,
            origin=PostEdit.IMPORTED,
            condition="shown-llm",
            start_override="A text another tool wrote.",
        ),
        "generated_too": SubmittedPostEditFactory(
            assignment__item=items["q0"],
            assignment__annotator=bob,
            condition="shown-llm",
            start_override=items["q0"].outputs["llm"],
        ),
    }
    return {
        "run": made,
        "simulation": simulation,
        "output_requests": server.requests[:asked],
        "edit_requests": server.requests[asked:],
        "human": human,
        "server": server,
    }


def expected_output_provenance(world, external_id: str) -> dict:
    run = GenerationRun.objects.get(pk=world["run"].pk)
    [body] = [b for b in world["output_requests"] if f"rule number {external_id[1:]}?" in b["messages"][-1]["content"]]
    record = GenerationRecord.objects.get(run=run, item__external_id=external_id)
    return {
        "gen_run": run.pk,
        "gen_kind": "output",
        "gen_name": "llm",
        "gen_endpoint": world["server"].base_url,
        "gen_model": "fake-model-1",
        "gen_requested_model": "m",
        "gen_params": '{"max_tokens":64,"seed":7,"temperature":0.5,"timeout_s":60.0}',
        "gen_template": "answer.txt",
        "gen_template_sha256": hashlib.sha256(OUTPUT_TEMPLATE.encode()).hexdigest(),
        "gen_prompt_sha256": prompt_sha256(body["messages"]),
        "gen_response_id": response_id(body),
        "gen_created": FAKE_CREATED,
        "gen_finish_reason": "stop",
        "gen_prompt_tokens": words(body["messages"]),
        "gen_completion_tokens": 1,  # "ANSWER:<hash>"
        "gen_latency_ms": record.provenance["latency_ms"],  # measured: read back, never a figure here
    }


def rows_by_who(rows) -> dict[tuple[str, str], dict]:
    return {(row["external_id"], row["annotator"]): row for row in rows}


def read(project, fmt: str, **options) -> bytes:
    spec = export_spec(project=project, include_simulated=True, **options)
    return b"".join(export_stream(spec, fmt, page_size=2))


def jsonl_rows(project) -> list[dict]:
    return [json.loads(line) for line in read(project, "jsonl").decode().splitlines()]


def test_the_columns_follow_the_quality_columns_before_the_metrics(project):
    columns = export_spec(project=project).columns
    at = columns.index("definition_version") + 1
    assert columns[at : at + len(PROVENANCE_COLUMNS)] == list(PROVENANCE_COLUMNS)
    assert columns[-1] == "gen_latency_ms"  # no metric values stored in this project


def test_jsonl_carries_the_provenance_of_generated_starts_and_synthetic_edits(project, world):
    rows = rows_by_who(jsonl_rows(project))
    assert len(rows) == 10  # 5 people's post-edits and 5 synthetic edits
    for who in (("q0", "anna"), ("q0", "bob")):
        assert {c: rows[who][c] for c in PROVENANCE_COLUMNS} == expected_output_provenance(world, "q0")
    empty = dict.fromkeys(PROVENANCE_COLUMNS)
    for who in (("q1", "anna"), ("q2", "anna"), ("q3", "anna")):
        assert {c: rows[who][c] for c in PROVENANCE_COLUMNS} == empty

    simulation = GenerationRun.objects.get(pk=world["simulation"].pk)
    synthetic = {k: r for k, r in rows.items() if r["origin"] == "simulated"}
    assert sorted(k[0] for k in synthetic) == ["q0", "q1", "q2", "q3", "q4"]
    for (external_id, _), row in synthetic.items():
        [body] = [
            b for b in world["edit_requests"] if f"rule number {external_id[1:]}?" in b["messages"][-1]["content"]
        ]
        record = GenerationRecord.objects.get(run=simulation, item__external_id=external_id)
        assert record.post_edit is not None and row["edited"] == record.post_edit.text
        assert {c: row[c] for c in PROVENANCE_COLUMNS} == {
            "gen_run": simulation.pk,
            "gen_kind": "simulation",
            "gen_name": "fast",
            "gen_endpoint": world["server"].base_url,
            "gen_model": "fake-model-1",
            "gen_requested_model": "m-edit",
            "gen_params": '{"max_tokens":null,"seed":3,"temperature":null,"timeout_s":60.0}',
            "gen_template": "fast.txt",
            "gen_template_sha256": hashlib.sha256(EDIT_TEMPLATE.encode()).hexdigest(),
            "gen_prompt_sha256": prompt_sha256(body["messages"]),
            "gen_response_id": response_id(body),
            "gen_created": FAKE_CREATED,
            "gen_finish_reason": "stop",
            "gen_prompt_tokens": words(body["messages"]),
            "gen_completion_tokens": 1,
            "gen_latency_ms": record.provenance["latency_ms"],
        }


def test_csv_carries_the_same_values_as_text(project, world):
    table = list(csv.DictReader(io.StringIO(read(project, "csv").decode())))
    rows = rows_by_who(table)
    expected = expected_output_provenance(world, "q0")
    assert {c: rows[("q0", "anna")][c] for c in PROVENANCE_COLUMNS} == {
        c: ("" if v is None else str(v)) for c, v in expected.items()
    }
    assert {c: rows[("q2", "anna")][c] for c in PROVENANCE_COLUMNS} == dict.fromkeys(PROVENANCE_COLUMNS, "")


def test_parquet_has_typed_provenance_columns(project, world):
    table = pq.read_table(io.BytesIO(read(project, "parquet")))
    types = {name: table.schema.field(name).type for name in PROVENANCE_COLUMNS}
    assert {n for n, t in types.items() if t == pa.int64()} == {"gen_run", "gen_prompt_tokens", "gen_completion_tokens"}
    assert {n for n, t in types.items() if t == pa.float64()} == {"gen_latency_ms"}
    assert {n for n, t in types.items() if t == pa.string()} == set(PROVENANCE_COLUMNS) - {
        "gen_run",
        "gen_prompt_tokens",
        "gen_completion_tokens",
        "gen_latency_ms",
    }
    rows = rows_by_who(table.to_pylist())
    assert {c: rows[("q0", "bob")][c] for c in PROVENANCE_COLUMNS} == expected_output_provenance(world, "q0")
    assert {c: rows[("q1", "anna")][c] for c in PROVENANCE_COLUMNS} == dict.fromkeys(PROVENANCE_COLUMNS)


def test_the_api_key_is_in_no_export(project, world):
    assert world["server"].authorizations[0] == f"Bearer {KEY}"  # it was sent with every call
    for fmt in ("csv", "jsonl", "parquet"):
        out = read(project, fmt)
        assert b"fake-model-1" in out or fmt == "parquet"
        assert KEY.encode() not in out and b"sk-export" not in out


def test_human_exports_leave_synthetic_edits_out_but_keep_generated_starts(project, world):
    spec = export_spec(project=project)
    rows = [json.loads(line) for line in b"".join(export_stream(spec, "jsonl")).decode().splitlines()]
    assert sorted((r["external_id"], r["annotator"], r["gen_kind"]) for r in rows) == [
        ("q0", "anna", "output"),
        ("q0", "bob", "output"),
        ("q1", "anna", None),
        ("q2", "anna", None),
        ("q3", "anna", None),
    ]


def test_one_provenance_query_per_page(project, world):
    spec = export_spec(project=project, include_simulated=True)
    with CaptureQueriesContext(connection) as queries:
        pages = list(export_stream(spec, "jsonl", page_size=3))
    reads = [q["sql"] for q in queries.captured_queries if 'FROM "generation_generationrecord"' in q["sql"]]
    assert len(pages) == 4 and len(reads) == 4  # 10 rows in pages of 3


def test_a_project_without_generation_runs_asks_nothing_of_them(project):
    SubmittedPostEditFactory(assignment__item=Item.objects.filter(project=project).first())
    spec = export_spec(project=project)
    with CaptureQueriesContext(connection) as queries:
        [row] = [json.loads(line) for line in b"".join(export_stream(spec, "jsonl")).decode().splitlines()]
    assert not [q for q in queries.captured_queries if "generation_" in q["sql"]]
    assert {c: row[c] for c in PROVENANCE_COLUMNS} == dict.fromkeys(PROVENANCE_COLUMNS)


def test_a_model_name_that_starts_a_formula_is_neutralised_in_csv(project, server):
    server.model_name = '=HYPERLINK("http://x")'
    generation_run_start(
        project=project,
        kind="simulation",
        name="fast",
        endpoint=server.base_url,
        model="m",
        template_text=EDIT_TEMPLATE,
        template_name="fast.txt",
    )
    table = list(csv.DictReader(io.StringIO(read(project, "csv").decode())))
    assert [row["gen_model"] for row in table] == ['\'=HYPERLINK("http://x")'] * 5
    assert {row["gen_prompt_tokens"] for row in table} != {""}  # numbers stay numbers
    jsonl = [json.loads(line) for line in read(project, "jsonl").decode().splitlines()]
    assert [row["gen_model"] for row in jsonl] == ['=HYPERLINK("http://x")'] * 5


def test_the_api_and_the_export_page_carry_the_columns(project, world, client_as):
    api = client_as("researcher").get(f"/api/projects/{project.pk}/export/?format=jsonl")
    page = client_as("researcher").get(f"/research/{project.pk}/metrics/export/?format=jsonl&include_simulated=1")
    assert (api.status_code, page.status_code) == (200, 200)
    from_api = rows_by_who(json.loads(line) for line in b"".join(api.streaming_content).decode().splitlines())
    from_page = rows_by_who(json.loads(line) for line in b"".join(page.streaming_content).decode().splitlines())
    expected = expected_output_provenance(world, "q0")
    for rows in (from_api, from_page):
        assert {c: rows[("q0", "bob")][c] for c in PROVENANCE_COLUMNS} == expected
    assert (
        sorted(r["gen_kind"] or "" for r in from_page.values()) == ["", "", "", "output", "output"] + ["simulation"] * 5
    )
