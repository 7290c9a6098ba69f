"""Items carry their study design through every importer: documents and positions, outputs by
system, highlight spans, practice; finished studies their conditions. Bad input names file, line
and field, and a refused import stores nothing."""

import json
import statistics
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from annotations.importers import ImportDataError, import_items
from annotations.models import Assignment, Item, PostEdit
from tests.factories import ItemFactory, ProjectFactory

DIVEMT = Path(__file__).parent / "data" / "divemt_ita_excerpt.tsv"
DIVEMT_MAPPING = {
    "external_id": "item_id",
    "document": "doc_id",
    "position": "flores_id",
    "source": "src_text",
    "annotator": "subject_id",
    "condition": "task_type",
    "start_text": "mt_text",
    "edited": "tgt_text",
    "wall_s": "edit_time",
    "allkeys": "k_total",
    "letters": "k_letter",
    "digits": "k_digit",
    "spaces": "k_white",
    "symbols": "k_symbol",
    "navigation": "k_nav",
    "erase": "k_erase",
    "copy": "k_copy",
    "cut": "k_cut",
    "paste": "k_paste",
    "undo_redo": "k_do",
}


@pytest.fixture
def project(db):
    return ProjectFactory(name="study")


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def jsonl(tmp_path, *records: dict, name: str = "items.jsonl") -> str:
    return write(tmp_path, name, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))


def nothing_stored(project) -> bool:
    return not project.items.exists() and not PostEdit.objects.exists()


# A QE4PE-like item table: two systems' outputs, error spans over one of them, a practice item.
WIDE_CSV = (
    "id,doc,seg,src,google,mbart,qe_google,warmup\n"
    'p1,,,"Hello.","Ciao.","Salve.",,yes\n'
    'd1-1,news-7,1,"The cat sleeps.","Il gatto dorme.","Il gatto riposa.","[[4, 9, ""minor""]]",no\n'
    'd1-2,news-7,2,"It is late.","È tardi.","Si è fatto tardi.",,\n'
    'd2-1,news-9,1,"Rain again.","Ancora pioggia.",,"[[0, 6, ""major""], [7, 15, """"]]",0\n'
)
WIDE_MAPPING = {
    "external_id": "id",
    "document": "doc",
    "position": "seg",
    "source": "src",
    "output:google": "google",
    "output:mbart": "mbart",
    "highlights:google": "qe_google",
    "practice": "warmup",
}


@pytest.mark.django_db
def test_a_table_maps_documents_positions_outputs_highlights_and_practice(tmp_path, project):
    report = import_items(project=project, fmt="table", path=write(tmp_path, "qe.csv", WIDE_CSV), mapping=WIDE_MAPPING)

    assert report.items_created == 4
    items = {item.external_id: item for item in project.items.all()}
    practice = items["p1"]
    assert (practice.practice, practice.document, practice.document_position) == (True, "", None)
    first = items["d1-1"]
    assert (first.document, first.document_position, first.practice) == ("news-7", 1, False)
    assert first.outputs == {"google": "Il gatto dorme.", "mbart": "Il gatto riposa."}
    assert first.model_output == "Il gatto dorme."  # no model_output column: the first output
    assert first.highlights == {"google": [[4, 9, "minor"]]}
    assert first.meta == {}  # every column was mapped
    assert items["d1-2"].document_position == 2 and items["d1-2"].highlights == {}
    # An empty cell: the item has no output of that system; spans are stored sorted, labels may be empty.
    assert items["d2-1"].outputs == {"google": "Ancora pioggia."}
    assert items["d2-1"].highlights == {"google": [[0, 6, "major"], [7, 15, ""]]}


@pytest.mark.django_db
def test_jsonl_keys_named_like_the_targets_need_no_mapping(tmp_path, project):
    path = jsonl(
        tmp_path,
        {
            "external_id": "s1",
            "source": "مرحبا",
            "outputs": {"sysA": "Hello", "sysB": "Hi there"},
            "highlights": {"sysB": [[0, 2, "fluency"]]},
            "document": 17,
            "position": 3,
            "practice": False,
        },
        {
            "external_id": "s2",
            "source": "",
            "outputs": {"sysA": "Bye"},
            "highlights": {},
            "document": 17,
            "position": 4,
            "practice": True,
        },
    )

    import_items(project=project, fmt="table", path=path)

    s1, s2 = project.items.order_by("position")
    assert (s1.document, s1.document_position, s1.outputs["sysB"], s1.highlights) == (
        "17",
        3,
        "Hi there",
        {"sysB": [[0, 2, "fluency"]]},
    )
    assert (s1.model_output, s1.source) == ("Hello", "مرحبا")
    assert (s2.document_position, s2.practice, s2.model_output) == (4, True, "Bye")


@pytest.mark.django_db
def test_segments_without_positions_are_numbered_in_file_order_after_the_stored_ones(tmp_path, project):
    ItemFactory(project=project, external_id="old", document="doc-A", document_position=5)
    path = write(tmp_path, "more.tsv", "id\tdoc\tmt\na\tdoc-A\tOne.\nb\tdoc-B\tTwo.\nc\tdoc-A\tThree.\n")

    import_items(
        project=project, fmt="table", path=path, mapping={"external_id": "id", "document": "doc", "model_output": "mt"}
    )

    placed = dict(project.items.values_list("external_id", "document_position"))
    assert placed == {"old": 5, "a": 6, "b": 1, "c": 7}


@pytest.mark.django_db
def test_re_importing_the_same_design_skips_and_a_changed_design_is_refused(tmp_path, project):
    path = write(tmp_path, "qe.csv", WIDE_CSV)
    import_items(project=project, fmt="table", path=path, mapping=WIDE_MAPPING)

    again = import_items(project=project, fmt="table", path=path, mapping=WIDE_MAPPING)
    assert (again.items_created, again.items_skipped) == (0, 4)

    moved = write(tmp_path, "moved.csv", WIDE_CSV.replace("[[4, 9, ", "[[4, 8, "))
    with pytest.raises(
        ImportDataError,
        match=r"moved.csv, line 3, field 'external_id': duplicate id 'd1-1': project 'study' already has this item "
        r"with a different highlights",
    ):
        import_items(project=project, fmt="table", path=moved, mapping=WIDE_MAPPING)
    assert project.items.get(external_id="d1-1").highlights == {"google": [[4, 9, "minor"]]}


def refused(tmp_path, project, text: str, mapping: dict | None = None, name: str = "qe.csv") -> str:
    path = write(tmp_path, name, text)
    with pytest.raises(ImportDataError) as caught:
        import_items(project=project, fmt="table", path=path, mapping=WIDE_MAPPING if mapping is None else mapping)
    assert nothing_stored(project)
    return str(caught.value).removeprefix(str(tmp_path) + "/")


HEAD = "id,doc,seg,src,google,mbart,qe_google,warmup\n"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (
            'a,d,1,S,"Il gatto.",,"[[4, 99, ""x""]]",\n',
            "qe.csv, line 2, field 'highlights.google[0]': [4, 99] is outside the text "
            "(0 <= start < end <= 9 characters)",
        ),
        (
            'a,d,1,S,"Il gatto dorme.",,"[[0, 5, ""a""], [3, 8, ""b""]]",\n',
            "qe.csv, line 2, field 'highlights.google': spans [0, 5] and [3, 8] overlap",
        ),
        (
            'a,d,1,S,,"Salve.","[[0, 2, ""x""]]",\n',
            "qe.csv, line 2, field 'highlights.google': highlights over the output 'google', which this item "
            "does not have (its outputs: 'mbart')",
        ),
        (
            'a,d,1,S,"Ciao.",,"[[0, 2.5, ""x""]]",\n',
            "qe.csv, line 2, field 'highlights.google[0]': start and end must be whole numbers",
        ),
        (
            'a,d,1,S,"Ciao.",,"[[0, 100000000000000000000000000000, ""x""]]",\n',
            "qe.csv, line 2, field 'highlights.google[0]': [0, 100000000000000000000000000000] is outside the text",
        ),
        (
            'a,d,1,S,"Ciao.",,"[[0, 2, ""' + "x" * 101 + '""]]",\n',
            "qe.csv, line 2, field 'highlights.google[0]': the label must be text of at most 100 characters",
        ),
        (
            'a,d,1,S,"Ciao.",,"{""google"": 1}",\n',
            "qe.csv, line 2, field 'highlights:google': must be a list of [start, end, label] spans, got an object",
        ),
        (
            'a,d,1,S,"Ciao.",,"' + "[" * 70 + "]" * 70 + '",\n',
            "qe.csv, line 2, field 'highlights:google" + "[0]" * 4,
        ),
        (
            'a,d,1,S,"Ciao.",,"[[0, NaN, ""x""]]",\n',
            "qe.csv, line 2, field 'highlights:google[0][1]': must be a JSON list of spans: NaN is not allowed",
        ),
        (
            "a,d,1,S,Ciao.,,,maybe\n",
            "qe.csv, line 2, field 'practice': must be true or false (true/false, yes/no, 1/0, or empty), got 'maybe'",
        ),
        ("a,d,1,S,Ciao.,,,2\n", "qe.csv, line 2, field 'practice': must be true or false"),
        (
            "a,d,1,S,Ciao.,,,\nb,d,1,S,Addio.,,,\n",
            "qe.csv, line 3, field 'position': document 'd' has a segment at position 1 twice (item 'a' at",
        ),
        ("a,d,,S,Ciao.,,,\n", "qe.csv, line 2, field 'position': a segment of document 'd' needs its position"),
        ("a,,4,S,Ciao.,,,\n", "qe.csv, line 2, field 'position': a position needs a document"),
        (
            "a,d,-1,S,Ciao.,,,\n",
            "qe.csv, line 2, field 'position': must be a whole number from 0 to 2,147,483,647, got '-1'",
        ),
        (
            "a,d,2.5,S,Ciao.,,,\n",
            "qe.csv, line 2, field 'position': must be a whole number from 0 to 2,147,483,647, got '2.5'",
        ),
        ("a,d,1e400,S,Ciao.,,,\n", "qe.csv, line 2, field 'position': must be a whole number"),
        (
            "a,d,2147483648,S,Ciao.,,,\n",
            "qe.csv, line 2, field 'position': must be a whole number from 0 to 2,147,483,647, got 2147483648",
        ),
        (
            "a,d," + "9" * 5000 + ",S,Ciao.,,,\n",
            "qe.csv, line 2, field 'position': must be a whole number from 0 to 2,147,483,647, got 2147483648",
        ),
        (
            "a,d,٣,S,Ciao.,,,\n",
            "qe.csv, line 2, field 'position': must be a whole number from 0 to 2,147,483,647, got '٣'",
        ),
        (
            "a,d\u202e1,1,S,Ciao.,,,\n",
            "qe.csv, line 2, field 'document': the document id holds an invisible or control character, "
            "U+202E (RIGHT-TO-LEFT OVERRIDE)",
        ),
        (
            "a," + "d" * 256 + ",1,S,Ciao.,,,\n",
            "qe.csv, line 2, field 'document': a document id is at most 255 characters, this one has 256",
        ),
    ],
)
def test_bad_design_cells_are_refused_with_file_line_and_field(tmp_path, project, rows, message):
    assert refused(tmp_path, project, HEAD + rows).startswith(message)


@pytest.mark.django_db
def test_odd_unicode_in_outputs_is_kept_and_spans_count_code_points(tmp_path, project):
    text = "e\u0301\u200d👩\u200d🔬 \u202bمرحبا\u202c"  # a combining accent, joiners, an emoji sequence, bidi embedding
    path = jsonl(
        tmp_path,
        {
            "external_id": "u",
            "outputs": {"sys": text},
            "highlights": {"sys": [[0, 2, "accent"], [len(text) - 1, len(text), "pdf"]]},
        },
    )

    import_items(project=project, fmt="table", path=path)

    item = project.items.get()
    assert item.outputs == {"sys": text}
    assert item.highlights == {"sys": [[0, 2, "accent"], [len(text) - 1, len(text), "pdf"]]}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"outputs": {"sysA": 5}}, "items.jsonl, line 1, field 'outputs.sysA': an output must be text, got a number"),
        ({"outputs": {"sysA": None}}, "items.jsonl, line 1, field 'outputs.sysA': an output must be text, got null"),
        ({"outputs": ["a", "b"]}, "items.jsonl, line 1, field 'outputs': must be an object of outputs by system"),
        (
            {"outputs": {" sysA": "x"}},
            "items.jsonl, line 1, field 'outputs': an output name is 1-100 characters without surrounding spaces",
        ),
        (
            {"outputs": {"sys\u200bA": "x"}},
            "items.jsonl, line 1, field 'outputs': the output name 'sys\\u200bA' holds an invisible or control character, U+200B (ZERO WIDTH SPACE)",
        ),
        ({"outputs": {"s" * 101: "x"}}, "items.jsonl, line 1, field 'outputs': an output name is 1-100 characters"),
        (
            {"outputs": {"a": "x"}, "highlights": {"a": "0-1"}},
            "items.jsonl, line 1, field 'highlights.a': must be a list of [start, end, label] spans, got a string",
        ),
        (
            {"outputs": {"a": "xy"}, "highlights": {"a": [[True, 1]]}},
            "items.jsonl, line 1, field 'highlights.a[0]': start and end must be whole numbers",
        ),
        (
            {"outputs": {"a": "xy"}, "document": "d", "position": True},
            "items.jsonl, line 1, field 'position': must be a whole number from 0 to 2,147,483,647, got a boolean",
        ),
        (
            {"outputs": {"a": "xy"}, "document": "d", "position": 1.5},
            "items.jsonl, line 1, field 'position': must be a whole number from 0 to 2,147,483,647, got 1.5",
        ),
        (
            {"outputs": {"a": "xy"}, "document": ["d"]},
            "items.jsonl, line 1, field 'document': must be a document id (text), got a list",
        ),
        (
            {"outputs": {"a": "xy"}, "practice": "yes please"},
            "items.jsonl, line 1, field 'practice': must be true or false",
        ),
        ({"outputs": {"a": "xy"}, "practice": 2}, "items.jsonl, line 1, field 'practice': must be true or false"),
    ],
)
def test_bad_jsonl_design_values_are_refused(tmp_path, project, record, message):
    path = jsonl(tmp_path, {"external_id": "x", **record})
    with pytest.raises(ImportDataError) as caught:
        import_items(project=project, fmt="table", path=path)
    assert str(caught.value).removeprefix(str(tmp_path) + "/").startswith(message)
    assert nothing_stored(project)


@pytest.mark.django_db
def test_a_position_already_held_in_the_project_is_refused(tmp_path, project):
    ItemFactory(project=project, external_id="stored", document="news-7", document_position=2)
    path = write(tmp_path, "qe.csv", WIDE_CSV)

    with pytest.raises(ImportDataError) as caught:
        import_items(project=project, fmt="table", path=path, mapping=WIDE_MAPPING)

    message = str(caught.value).removeprefix(str(tmp_path) + "/")
    assert message.startswith(
        "qe.csv, line 4, field 'position': document 'news-7' already has a segment at position 2 in project "
        "'study' (item 'stored'); positions are unique per document"
    )
    assert project.items.count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("mapping", "message"),
    [
        (
            {"position": "seg", "model_output": "google"},
            "field 'position': a position is a segment's place in its document: map document too",
        ),
        (
            {"outputs": "google", "output:mbart": "mbart"},
            "field 'outputs': map outputs (a JSON object) or output:NAME columns, not both",
        ),
        ({"output:": "google"}, "field 'output:': an output name is 1-100 characters"),
        (
            {"output:a\u202eb": "google"},
            "field 'output:a\\u202eb': the output name 'a\\u202eb' holds an invisible or control",
        ),
        ({"outputs:google": "google"}, "field 'outputs:google': unknown mapping target"),
        ({"start_text": "google"}, "field 'condition': start_text is what a condition showed: map condition too"),
        (
            {"source": "src"},
            "field 'model_output': map a column to model_output (its row in the upload page's Column mapping; on the command line "
            "--map model_output=mt_text), or the outputs by system",
        ),
    ],
)
def test_mapping_mistakes_are_refused_before_any_row(tmp_path, project, mapping, message):
    path = write(tmp_path, "qe.csv", WIDE_CSV.replace("warmup", "practice_flag"))
    with pytest.raises(ImportDataError) as caught:
        import_items(project=project, fmt="table", path=path, mapping=mapping)
    assert str(caught.value) == f"{path}, line 1, {message}" or str(caught.value).startswith(
        f"{path}, line 1, {message}"
    )


@pytest.mark.django_db
def test_the_command_line_maps_outputs_and_highlights(tmp_path, project, capsys):
    path = write(tmp_path, "qe.csv", WIDE_CSV)

    call_command(
        "import_items",
        path,
        project="study",
        fmt="table",
        map="external_id=id,document=doc,position=seg,source=src,output:google=google,output:mbart=mbart,"
        "highlights:google=qe_google,practice=warmup",
    )

    assert "items created: 4" in capsys.readouterr().out
    assert project.items.get(external_id="d1-1").highlights == {"google": [[4, 9, "minor"]]}
    with pytest.raises(CommandError, match=r"--map: 'output:google' is not TARGET=COLUMN"):
        call_command("import_items", path, project="study", fmt="table", map="output:google")


# --------------------------------------------------------------------------- finished studies with conditions


@pytest.mark.django_db
def test_a_divemt_like_study_imports_with_its_conditions_documents_and_starting_texts(project):
    report = import_items(project=project, fmt="table", path=DIVEMT, mapping=DIVEMT_MAPPING)

    assert (report.items_created, report.post_edits_created) == (6, 18)
    assert sorted(report.annotators_created) == ["ita_t1", "ita_t2", "ita_t3"]
    project.refresh_from_db()
    # ht showed nothing (translation from scratch); pe1 and pe2 each their system's output.
    assert project.conditions == [
        {"name": "ht", "output": None, "highlights": False},
        {"name": "pe1", "output": "pe1", "highlights": False},
        {"name": "pe2", "output": "pe2", "highlights": False},
    ]
    assert any("declared the file's conditions on the project: ht (an empty editor)" in n for n in report.notes)

    item = project.items.get(external_id="flores101-main-11")
    assert (item.document, item.document_position) == ("1", 1)
    assert item.outputs == {
        "pe1": "Il museo apre alle nove nei giorni feriali.",
        "pe2": "Il museo apre alle nove durante i giorni della settimana.",
    }
    assert item.model_output == "Il museo apre alle nove nei giorni feriali."  # the first output met in the file
    by_annotator = {
        pe.assignment.annotator.username: pe
        for pe in PostEdit.objects.filter(assignment__item=item).select_related("assignment__annotator")
    }
    t1, t2, t3 = by_annotator["ita_t1"], by_annotator["ita_t2"], by_annotator["ita_t3"]
    assert (t1.condition, t1.start_override, t1.assignment.condition) == ("ht", "", "ht")
    assert t1.text == 'Il museo "Civico" apre alle nove nei giorni feriali.'
    assert (t2.condition, t2.start_override) == ("pe1", "Il museo apre alle nove nei giorni feriali.")
    assert (t3.condition, t3.start_text, t3.wall_ms) == ("pe2", item.outputs["pe2"], 22000)
    assert t1.extra["per_subject_visit_order"] == 1 and t1.extra["translation_type"] == "ht"
    assert {d: sorted(p) for d, p in _documents(project).items()} == {"1": [1, 2], "2": [3, 4], "3": [5, 6]}


def _documents(project) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for document, position in project.items.values_list("document", "document_position"):
        found.setdefault(document, []).append(position)
    return found


@pytest.mark.django_db
def test_the_imported_design_reruns_the_analysis_by_condition(project):
    import_items(project=project, fmt="table", path=DIVEMT, mapping=DIVEMT_MAPPING)

    # The published figures the file gives (edit_time in seconds), per condition and per translator.
    seconds: dict[str, list[float]] = {"ht": [], "pe1": [], "pe2": []}
    for line in DIVEMT.read_text(encoding="utf-8").splitlines()[1:]:
        fields = line.split("\t")
        seconds[fields[6]].append(float(fields[10]))
    stored: dict[str, list[int]] = {"ht": [], "pe1": [], "pe2": []}
    for condition, wall_ms in PostEdit.objects.values_list("condition", "wall_ms"):
        stored[condition].append(wall_ms)
    assert {c: statistics.mean(v) for c, v in stored.items()} == {
        c: pytest.approx(1000 * statistics.mean(v)) for c, v in seconds.items()
    }
    assert {c: round(statistics.mean(v) / 1000, 4) for c, v in stored.items()} == {
        "ht": 52.0833,
        "pe1": 17.0833,
        "pe2": 25.25,
    }
    # Counterbalanced as published: every translator met every condition on one document (2 segments).
    per_annotator = {}
    for name, condition in Assignment.objects.values_list("annotator__username", "condition"):
        per_annotator.setdefault(name, []).append(condition)
    assert {n: sorted(c) for n, c in per_annotator.items()} == {
        n: ["ht", "ht", "pe1", "pe1", "pe2", "pe2"] for n in ("ita_t1", "ita_t2", "ita_t3")
    }


@pytest.mark.django_db
def test_declared_conditions_are_used_and_their_output_must_exist(tmp_path, project):
    project.conditions = [
        {"name": "google highlights", "output": "google", "highlights": True},
        {"name": "scratch", "output": None, "highlights": False},
    ]
    project.save()
    head = "id,src,google,pe,who,cond,secs\n"
    ok = head + "a,S1,Ciao.,Ciao!,lena,google highlights,3\na,S1,Ciao.,Salve.,max,scratch,9\n"
    mapping = {"external_id": "id", "source": "src", "output:google": "google", "edited": "pe", "annotator": "who"}
    mapping |= {"condition": "cond", "wall_s": "secs"}

    import_items(project=project, fmt="table", path=write(tmp_path, "ok.csv", ok), mapping=mapping)

    starts = dict(PostEdit.objects.values_list("assignment__annotator__username", "start_override"))
    assert starts == {"lena": "Ciao.", "max": ""}
    project.refresh_from_db()
    assert len(project.conditions) == 2  # nothing new declared

    missing = head + "b,S2,,Hallo.,lena,google highlights,3\n"
    with pytest.raises(
        ImportDataError,
        match=r"missing.csv, line 2, field 'condition': condition 'google highlights' shows the output 'google', "
        r"which item 'b' does not have \(its outputs: none\)",
    ):
        import_items(project=project, fmt="table", path=write(tmp_path, "missing.csv", missing), mapping=mapping)
    assert not project.items.filter(external_id="b").exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("declared", "rows", "message"),
    [
        (
            [{"name": "hl", "output": "google", "highlights": True}],
            "b,S2,,Ciao.,Hallo.,lena,hl\n",
            "field 'condition': condition 'hl' shows the output 'google', which item 'b' does not have (its outputs: none)",
        ),
        (
            [],
            "b,S2,Ciao.,,Hallo.,lena,mystery\n",
            "field 'condition': condition 'mystery' is not declared on project 'study' (it declares none) and the file "
            "does not say what its post-editors started from: declare it on the project first, or give the text it "
            "showed (an output:mystery column, or a start_text column)",
        ),
        (
            [{"name": "PE1", "output": None, "highlights": False}],
            "b,S2,Ciao.,,Hallo.,lena,pe1\n",
            "field 'condition': condition 'pe1' differs from the condition 'PE1' only in case",
        ),
        ([], "b,S2,Ciao.,,Hallo.,lena,a+b\n", "field 'condition': a condition name is 1-100 letters, digits, spaces"),
        ([], "b,S2,Ciao.,,Hallo.,lena,\u202ept\n", "field 'condition': a condition name is 1-100 letters"),
        (
            "not a list",
            "b,S2,Ciao.,,Hallo.,lena,x\n",
            "field 'condition': the project's declared conditions cannot be read",
        ),
    ],
)
def test_conditions_that_cannot_be_placed_are_refused(tmp_path, project, declared, rows, message):
    project.conditions = declared
    project.save()
    head = "id,src,google,start,pe,who,cond\n"
    mapping = {"external_id": "id", "source": "src", "output:google": "google", "edited": "pe", "annotator": "who"}
    path = write(tmp_path, "study.csv", head + rows)

    with pytest.raises(ImportDataError) as caught:
        import_items(project=project, fmt="table", path=path, mapping=mapping | {"condition": "cond"})

    assert str(caught.value).startswith(f"{path}, line 2, {message}")
    assert nothing_stored(project)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (
            "a,S,Ciao.,Ciao!,lena,pe1\na,S,Salve.,Ciao!,max,pe1\n",
            "line 3, field 'mt': item 'a' started from another text under condition 'pe1' than at line 2",
        ),
        ("a,S,,Ciao!,lena,pe1\na,S,Salve.,Ciao!,max,pe1\n", "line 3, field 'mt': item 'a' started from another text"),
        (
            "a,S,Ciao.,Ciao!,lena,ht\n",
            "line 2, field 'start_text': condition 'ht' shows an empty editor (translating from scratch), but this "
            "post-editor started from a text",
        ),
        ("a,S,Ciao.,Ciao!,lena,\n", "line 2, field 'condition': a start text is what the row's condition showed"),
    ],
)
def test_a_long_table_must_agree_on_what_each_condition_showed(tmp_path, project, rows, message):
    project.conditions = [{"name": "ht", "output": None, "highlights": False}]
    project.save()
    mapping = {
        "external_id": "id",
        "source": "src",
        "start_text": "mt",
        "edited": "pe",
        "annotator": "who",
        "condition": "cond",
    }
    path = write(tmp_path, "long.csv", "id,src,mt,pe,who,cond\n" + rows)

    with pytest.raises(ImportDataError) as caught:
        import_items(project=project, fmt="table", path=path, mapping=mapping)

    assert str(caught.value).startswith(f"{path}, {message}")
    assert nothing_stored(project)


@pytest.mark.django_db
def test_a_re_imported_study_is_skipped_and_another_condition_for_the_same_edit_is_refused(tmp_path, project):
    import_items(project=project, fmt="table", path=DIVEMT, mapping=DIVEMT_MAPPING)

    again = import_items(project=project, fmt="table", path=DIVEMT, mapping=DIVEMT_MAPPING)
    assert (again.items_skipped, again.post_edits_skipped, again.post_edits_created) == (6, 18, 0)

    text = DIVEMT.read_text(encoding="utf-8")
    first = text.splitlines()[2]  # ita_t1 under ht
    relabelled = text.replace(first, first.replace("\tht\tht\t", "\tpe9\tht\t"))
    with pytest.raises(
        ImportDataError, match=r"line 3, field 'annotator': annotator 'ita_t1' already has a different post-edit"
    ):
        import_items(
            project=project, fmt="table", path=write(tmp_path, "divemt.tsv", relabelled), mapping=DIVEMT_MAPPING
        )
    assert PostEdit.objects.count() == 18
    assert len(project.__class__.objects.get(pk=project.pk).conditions) == 3


# --------------------------------------------------------------------------- editeval and pet


@pytest.mark.django_db
def test_editeval_titles_are_documents_numbered_in_file_order(tmp_path, project):
    lines = [
        {"id": 1, "title": "Ada Lovelace", "input": "She was born 1815.", "tasks": "fluency"},
        {"id": 2, "title": "Alan Turing", "input": "He was born 1912.", "tasks": "fluency"},
        {"id": 3, "title": "Ada Lovelace", "input": "She wrote notes.", "tasks": "fluency"},
        {"id": 4, "input": "No title here.", "tasks": "fluency"},
    ]
    import_items(project=project, fmt="editeval", path=jsonl(tmp_path, *lines, name="ee.jsonl"))
    more = {"id": 5, "title": "Ada Lovelace", "input": "She died 1852.", "tasks": "fluency"}
    import_items(project=project, fmt="editeval", path=jsonl(tmp_path, more, name="more.jsonl"))

    placed = {i: (d, p) for i, d, p in project.items.values_list("external_id", "document", "document_position")}
    assert placed == {
        "1": ("Ada Lovelace", 1),
        "2": ("Alan Turing", 1),
        "3": ("Ada Lovelace", 2),
        "4": ("", None),
        "5": ("Ada Lovelace", 3),
    }
    bad = {"id": 6, "title": "Ada\u2028Lovelace", "input": "x", "tasks": "fluency"}
    with pytest.raises(ImportDataError, match=r"bad.jsonl, line 1, field 'title': the document id holds an invisible"):
        import_items(project=project, fmt="editeval", path=jsonl(tmp_path, bad, name="bad.jsonl"))


PET_HEADER = "<file_name>\t<line_in_file>\t<who>\t<time>\t<S>\t<MT>\t<PE>\n"


def pet_study(tmp_path, rows_by_editor: dict[str, list[tuple]]) -> Path:
    folder = tmp_path / "pet"
    folder.mkdir()
    (folder / "header").write_text(PET_HEADER, encoding="utf-8")
    for editor, rows in rows_by_editor.items():
        text = "".join("\t".join(map(str, row)) + "\n" for row in rows)
        (folder / editor).write_text(text, encoding="utf-8")
    return folder


# As in iwslt2019: every editor's file holds the same segments, shuffled across documents alike.
PET_ROWS = [
    ("newstest2011.en-es.cu-zeman_doc-10", 3, "annotator1", 9000, "Third.", "Tercero.", "Tercera."),
    ("en-es.newstest2009.google_doc-19", 1, "annotator1", 4000, "One.", "Uno.", "Uno."),
    ("newstest2011.en-es.cu-zeman_doc-10", 1, "annotator2", 6000, "First.", "Primero.", "Primera."),
]


@pytest.mark.django_db
def test_pet_documents_are_the_file_name_column_and_positions_the_line_in_file(tmp_path, project):
    folder = pet_study(tmp_path, {"ann0": PET_ROWS, "ann1": PET_ROWS})

    import_items(project=project, fmt="pet", path=folder)

    placed = {i: (d, p) for i, d, p in project.items.values_list("external_id", "document", "document_position")}
    assert placed == {
        "newstest2011.en-es.cu-zeman_doc-10:3": ("newstest2011.en-es.cu-zeman_doc-10", 3),
        "en-es.newstest2009.google_doc-19:1": ("en-es.newstest2009.google_doc-19", 1),
        "newstest2011.en-es.cu-zeman_doc-10:1": ("newstest2011.en-es.cu-zeman_doc-10", 1),
    }


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("row", "message"),
    [
        (("doc-1", "first", "a", 1, "S", "MT", "PE"), "ann0, line 1, field 'line_in_file': must be a whole number"),
        (("doc-1", "-3", "a", 1, "S", "MT", "PE"), "ann0, line 1, field 'line_in_file': must be a whole number"),
        (
            ("doc-1", "99999999999", "a", 1, "S", "MT", "PE"),
            "ann0, line 1, field 'line_in_file': must be a whole number",
        ),
        (("", "1", "a", 1, "S", "MT", "PE"), "ann0, line 1, field 'file_name': is empty"),
        (("doc\u200b-1", "1", "a", 1, "S", "MT", "PE"), "ann0, line 1, field 'file_name': the document id holds"),
    ],
)
def test_pet_segment_ids_that_are_no_place_in_a_document_are_refused(tmp_path, project, row, message):
    folder = pet_study(tmp_path, {"ann0": [row]})
    with pytest.raises(ImportDataError) as caught:
        import_items(project=project, fmt="pet", path=folder)
    assert str(caught.value).removeprefix(str(folder) + "/").startswith(message)
    assert nothing_stored(project)


@pytest.mark.slow
@pytest.mark.django_db
def test_the_iwslt2019_study_imports_as_62_documents(shared_data):
    import_items(project="IWSLT 2019", fmt="pet", path=shared_data / "iwslt2019", create_project=True)

    items = Item.objects.filter(project__name="IWSLT 2019")
    documents = _documents(items.first().project)
    assert len(documents) == 62
    assert sorted(documents["newstest2012.en-es.onlineE_doc-13"])[:3] == [1, 2, 3]
    assert max(len(p) for p in documents.values()) == 39
    assert not items.filter(document="").exists()
