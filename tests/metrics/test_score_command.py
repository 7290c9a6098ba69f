"""python manage.py score: the happy path in both output formats, and every kind of bad input."""

import csv
import importlib.util
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from metrics.text import METRICS
from tests.metrics.editeval_expected import EXPECTED

CASES = json.loads((Path(__file__).parent / "data" / "editeval_cases.json").read_text("utf-8"))


def write_jsonl(path: Path, lines: list) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines), "utf-8")
    return path


GOOD = [
    {"id": 1, "original": "vwxyz", "edited": "zyxwv"},
    {"id": "b", "original": "Ça va", "edited": "Ça va bien", "references": ["bien"], "gold": ["Ça va bien"]},
]


def test_it_writes_a_csv_with_one_column_per_metric(tmp_path, capsys):
    source = write_jsonl(tmp_path / "in.jsonl", GOOD)
    out = tmp_path / "scores.csv"
    call_command("score", str(source), metrics="compression,levenshtein,exact_match", output=str(out))
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert rows == [
        {"id": "1", "compression": "5.0", "levenshtein": "4.0", "exact_match": ""},
        # "Ça va" copied, " " copied, then b, i, e, n: 6 phrases; 5 characters inserted.
        {"id": "b", "compression": "6.0", "levenshtein": "5.0", "exact_match": "1.0"},
    ]
    assert "scored 2 pairs with compression, levenshtein, exact_match" in capsys.readouterr().out


def test_it_writes_jsonl_and_applies_the_references_variant(tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", GOOD)
    out = tmp_path / "scores.jsonl"
    call_command("score", str(source), metrics="compression", output=str(out), variant="with_references")
    rows = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    # "Ça va\n\nbien" -> "Ça va bien": "Ça va", " ", "bien", all copied: 3 phrases (plain: 6).
    assert rows == [{"id": 1, "compression": 5.0}, {"id": "b", "compression": 3.0}]


def test_all_means_every_available_metric_and_gold_ones_only_with_gold(tmp_path, monkeypatch):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real_find_spec(name, *a)
    )
    without_gold = write_jsonl(tmp_path / "plain.jsonl", [GOOD[0]])
    out = tmp_path / "all.csv"
    call_command("score", str(without_gold), metrics="all", output=str(out))
    header = out.read_text("utf-8").splitlines()[0].split(",")
    expected = [n for n, m in METRICS.items() if m.family != "gold-based" and n != "bertscore"]
    assert header == ["id", *expected]
    call_command("score", str(write_jsonl(tmp_path / "gold.jsonl", GOOD)), metrics="all", output=str(out))
    header = out.read_text("utf-8").splitlines()[0].split(",")
    assert header == ["id", *[n for n in METRICS if n != "bertscore"]]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"id": 2, "original": "a", "edited": ', "line 2: invalid JSON"),
        ('["a", "b"]', "line 2: expected a JSON object, got list"),
        ({"original": "a", "edited": "b"}, "line 2: missing field 'id'"),
        ({"id": 2, "edited": "b"}, "line 2: missing field 'original'"),
        ({"id": 2, "original": "a"}, "line 2: missing field 'edited'"),
        ({"id": True, "original": "a", "edited": "b"}, "line 2: field 'id' must be a string or an integer"),
        ({"id": 2, "original": 7, "edited": "b"}, "line 2: field 'original' must be a string"),
        ({"id": 2, "original": "a", "edited": None}, "line 2: field 'edited' must be a string"),
        (
            {"id": 2, "original": "a", "edited": "b", "references": "doc"},
            "line 2: field 'references' must be a list of strings",
        ),
        (
            {"id": 2, "original": "a", "edited": "b", "gold": ["ok", 3]},
            "line 2: field 'gold' must be a list of strings",
        ),
        ({"id": 1, "original": "a", "edited": "b"}, "line 2: field 'id': 1 repeats line 1"),
    ],
)
def test_a_bad_line_stops_with_its_number_and_field_and_writes_nothing(tmp_path, line, message):
    source = write_jsonl(tmp_path / "in.jsonl", [GOOD[0], line])
    out = tmp_path / "scores.csv"
    with pytest.raises(CommandError, match=message):
        call_command("score", str(source), metrics="compression", output=str(out))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]  # no output, no temporary file


def test_a_failed_run_keeps_the_previous_output(tmp_path):
    out = tmp_path / "scores.csv"
    out.write_text("id,compression\n1,5.0\n", "utf-8")
    source = write_jsonl(tmp_path / "in.jsonl", ["not json"])
    with pytest.raises(CommandError, match="line 1: invalid JSON"):
        call_command("score", str(source), metrics="compression", output=str(out))
    assert out.read_text("utf-8") == "id,compression\n1,5.0\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "scores.csv"]


def test_it_rejects_text_that_is_not_utf8(tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_bytes('{"id": 1, "original": "caf\xe9", "edited": "x"}\n'.encode("latin-1"))
    with pytest.raises(CommandError, match="not UTF-8 text"):
        call_command("score", str(source), metrics="compression", output=str(tmp_path / "o.csv"))


def test_blank_lines_are_skipped_but_counted(tmp_path):
    source = write_jsonl(tmp_path / "in.jsonl", [GOOD[0], "", "{"])
    with pytest.raises(CommandError, match="line 3: invalid JSON"):
        call_command("score", str(source), metrics="compression", output=str(tmp_path / "o.csv"))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"metrics": "compression,nope"}, "unknown metric\\(s\\) nope; known: compression, "),
        ({"metrics": " , "}, "give 'all' or metric names"),
        ({"metrics": "compression", "output_name": "scores.xlsx"}, "must end in .csv or .jsonl"),
        ({"metrics": "compression", "output_name": "missing/scores.csv"}, "folder .*missing does not exist"),
        ({"metrics": "compression", "input_name": "absent.jsonl"}, "absent.jsonl: no such file"),
        ({"metrics": "compression", "processes": 0}, "--processes must be at least 1"),
    ],
)
def test_bad_options_are_refused_clearly(tmp_path, options, message):
    write_jsonl(tmp_path / "in.jsonl", GOOD)
    source = tmp_path / options.pop("input_name", "in.jsonl")
    out = tmp_path / options.pop("output_name", "scores.csv")
    with pytest.raises(CommandError, match=message):
        call_command("score", str(source), output=str(out), **options)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


def test_an_unavailable_metric_names_the_missing_extra(tmp_path, monkeypatch):
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real_find_spec(name, *a)
    )
    source = write_jsonl(tmp_path / "in.jsonl", GOOD)
    with pytest.raises(CommandError, match=r"bertscore needs the optional extra editlab\[semantic\]"):
        call_command("score", str(source), metrics="bertscore", output=str(tmp_path / "o.csv"))


def test_a_metric_failing_on_a_pair_names_its_id_and_writes_nothing(tmp_path, register_test_metric):
    def fragile(original: str, edited: str, **_: object) -> float:
        return 1 / (len(edited) - 10)

    register_test_metric("boom", fragile, description="fails on a 10-character post-edit")
    source = write_jsonl(tmp_path / "in.jsonl", GOOD)  # line 2's post-edit "Ça va bien" has 10 characters
    with pytest.raises(CommandError, match="boom failed on the pair with id 'b': ZeroDivisionError"):
        call_command("score", str(source), metrics="boom", output=str(tmp_path / "o.csv"), processes=1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


# --- --corpus: EditEval's corpus figures beside editlab's means -----------------------------------------------

GOLD_METRICS = "sari,gleu,ibleu,exact_match,em_diff,update_rouge"


def jfleg_like_lines() -> list[dict]:
    return [{"id": f"j{i}", **case} for i, case in enumerate(CASES["jfleg_like"], start=1)]


def test_corpus_prints_and_writes_editevals_figures_beside_editlabs_means(tmp_path, capsys):
    lines = [*jfleg_like_lines(), {"id": "no-gold", "original": "a b", "edited": "a c"}]
    source = write_jsonl(tmp_path / "in.jsonl", lines)
    out, table = tmp_path / "scores.jsonl", tmp_path / "corpus.json"
    call_command("score", str(source), metrics=GOLD_METRICS, output=str(out), corpus=True, corpus_output=str(table))
    per_line = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    written = json.loads(table.read_text("utf-8"))
    assert written["lines_without_gold"] == 1
    expected = EXPECTED["jfleg_like"]["corpus"]
    for row in written["metrics"]:
        name = row["metric"]
        values = [line[name] for line in per_line if line["id"] != "no-gold"]
        assert row["n"] == 10
        assert row["mean"] == pytest.approx(sum(values) / 10, rel=1e-12)
        assert row["editeval"] == pytest.approx(expected[name], rel=1e-12)
        assert row["editeval_undefined"] == ""
    assert [row["metric"] for row in written["metrics"]] == GOLD_METRICS.split(",")
    printed = capsys.readouterr().out
    assert f"sari               10{written['metrics'][0]['mean']:>17.4f}{expected['sari']:>12.4f}" in printed
    assert "1 line(s) without gold edits left out" in printed
    assert "cite it beside published EditEval results" in printed


def test_corpus_alone_needs_no_output_file_and_writes_csv(tmp_path, capsys):
    source = write_jsonl(tmp_path / "in.jsonl", jfleg_like_lines())
    table = tmp_path / "corpus.csv"
    call_command("score", str(source), metrics="compression,sari", corpus=True, corpus_output=str(table))
    rows = list(csv.DictReader(table.open(encoding="utf-8")))
    assert [r["metric"] for r in rows] == ["sari"]  # only gold-based metrics have corpus figures
    assert float(rows[0]["editeval"]) == pytest.approx(EXPECTED["jfleg_like"]["corpus"]["sari"], rel=1e-12)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus.csv", "in.jsonl"]
    assert "scored 10 pairs with compression, sari\n" in capsys.readouterr().out


def test_corpus_says_which_figures_editeval_cannot_compute(tmp_path, capsys):
    lines = [{"id": i, **case} for i, case in enumerate(CASES["fewer_golds_later"], start=1)]
    table = tmp_path / "corpus.json"
    call_command(
        "score",
        str(write_jsonl(tmp_path / "in.jsonl", lines)),
        metrics="gleu,sari",
        corpus=True,
        corpus_output=str(table),
    )
    gleu, sari = json.loads(table.read_text("utf-8"))["metrics"]
    assert gleu["editeval"] is None and "fewer than the first example's 3" in gleu["editeval_undefined"]
    assert sari["editeval"] == pytest.approx(EXPECTED["fewer_golds_later"]["corpus"]["sari"], rel=1e-12)
    assert "no editeval figure for gleu: gleu: example 2 has 2 gold edit(s)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("lines", "options", "message"),
    [
        (GOOD, {"metrics": "compression"}, "give --output, --corpus, or both"),
        (
            GOOD,
            {"metrics": "sari", "output_name": "o.csv", "corpus_output_name": "c.json"},
            "--corpus-output needs --corpus",
        ),
        (
            GOOD,
            {"metrics": "compression", "corpus": True},
            "none of the chosen metrics is gold-based; choose from sari",
        ),
        ([GOOD[0]], {"metrics": "sari", "corpus": True}, "--corpus: no line has gold edits"),
        (GOOD, {"metrics": "sari", "corpus": True, "corpus_output_name": "c.xlsx"}, "must end in .json or .csv"),
        (
            GOOD,
            {"metrics": "sari", "corpus": True, "corpus_output_name": "nope/c.json"},
            "folder .*nope does not exist",
        ),
    ],
)
def test_bad_corpus_requests_are_refused_clearly(tmp_path, lines, options, message):
    source = write_jsonl(tmp_path / "in.jsonl", lines)
    for option in ("output", "corpus_output"):
        name = options.pop(f"{option}_name", None)
        if name:
            options[option] = str(tmp_path / name)
    with pytest.raises(CommandError, match=message):
        call_command("score", str(source), **options)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("[" * 100_000 + "]" * 100_000, "line 2: JSON nested too deeply"),
        ('{"id": 2, "original": "\\ud800", "edited": "b"}', "line 2: field 'original' holds an unpaired surrogate"),
        ('{"id": "\\udfff", "original": "a", "edited": "b"}', "line 2: field 'id' holds an unpaired surrogate"),
        ('{"id": 2, "original": "a", "edited": "b", "gold": ["\\ud83d"]}', "line 2: field 'gold' holds an unpaired"),
        ('{"id": NaN, "original": "a", "edited": "b"}', "line 2: field 'id' must be a string or an integer"),
        ('{"id": 1e999, "original": "a", "edited": "b"}', "line 2: field 'id' must be a string or an integer"),
    ],
)
def test_hostile_lines_are_refused_with_their_number_and_field(tmp_path, line, message):
    source = write_jsonl(tmp_path / "in.jsonl", [GOOD[1], line])
    with pytest.raises(CommandError, match=message):
        call_command("score", str(source), metrics="sari", output=str(tmp_path / "o.csv"), corpus=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl"]


def test_corpus_scores_odd_unicode_and_huge_ids(tmp_path):
    lines = [
        {"id": 10**40, "original": "e\u0301te\u0301 \u202eRTL\u202c", "edited": "été", "gold": ["été", "\u200b"]},
        {"id": "\U0001f600", "original": "", "edited": "", "gold": [""]},
    ]
    table = tmp_path / "c.json"
    out = tmp_path / "o.csv"
    call_command(
        "score",
        str(write_jsonl(tmp_path / "in.jsonl", lines)),
        metrics=GOLD_METRICS,
        output=str(out),
        corpus=True,
        corpus_output=str(table),
    )
    assert [r["id"] for r in csv.DictReader(out.open(encoding="utf-8"))] == [str(10**40), "\U0001f600"]
    figures = {row["metric"]: row for row in json.loads(table.read_text("utf-8"))["metrics"]}
    # Both outputs equal a gold edit; EM-Diff gives the unchanged (empty) one 0, as EditEval does.
    assert figures["exact_match"]["editeval"] == 1.0
    assert figures["em_diff"]["editeval"] == 0.5
    # One output token, "été", and no 2-gram anywhere: unsmoothed BLEU 0 on both sides.
    assert figures["ibleu"]["editeval"] == 0.0
    # The second line has fewer gold edits than the first: EditEval's GLEU and update-ROUGE fail on that.
    assert figures["gleu"]["editeval"] is None and figures["update_rouge"]["editeval"] is None
