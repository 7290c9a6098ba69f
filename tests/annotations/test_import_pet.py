"""The `pet` importer: the whole iwslt2019 study, small studies, and every bad input."""

from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db.models import Count

from annotations.importers import ImportDataError, import_items, pet
from annotations.models import Assignment, Item, PostEdit, Project
from annotations.roles import is_annotator
from tests.factories import AssignmentFactory, ProjectFactory, UserFactory

HEADER = (
    "<file_name>\t<line_in_file>\t<who>\t<src>\t<time>\t<letters>\t<digits>\t<spaces>\t<symbols>\t"
    "<navigation>\t<erase>\t<commands>\t<visible>\t<keystrokes>\t<allkeys>\t<S>\t<REF>\t<MT>\t<PE>\t<HTER>\n"
)


def pet_row(seg: str, line: int, mt: str, pe: str, *, time: int = 1000, letters: int = 3, hter: str = "0.25") -> str:
    counts = [letters, 0, 1, 0, 2, 1, 0, letters + 1, letters + 2, letters + 4]
    fields = [seg, line, "x", 7, time, *counts, f"source {seg} {line}", f"ref {line}", mt, pe, hter]
    return "\t".join(str(f) for f in fields) + "\n"


def write_study(folder: Path, editors: dict[str, str], header: str = HEADER) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "header").write_text(header, encoding="utf-8")
    for name, rows in editors.items():
        (folder / name).write_text(rows, encoding="utf-8")
    return folder


@pytest.fixture
def study(tmp_path) -> Path:
    return write_study(
        tmp_path / "study",
        {
            "ann0": pet_row("doc-1", 1, "Un gato.", "Un gato negro.", time=1500, letters=6)
            + pet_row("doc-1", 2, "Dos perro.", "Dos perros."),
            "ann1": pet_row("doc-1", 1, "Un gato.", "Un gato.", time=900, letters=0)
            + pet_row("doc-1", 2, "Dos perro.", "Dos perros.", hter="nan"),
        },
    )


def nothing_stored(project: Project) -> bool:
    return not Item.objects.filter(project=project).exists() and not PostEdit.objects.exists()


@pytest.mark.slow
@pytest.mark.django_db
def test_it_imports_the_whole_iwslt2019_study(shared_data):
    report = import_items(project="IWSLT 2019", fmt="pet", path=shared_data / "iwslt2019", create_project=True)

    assert (report.items_created, report.post_edits_created) == (1047, 5235)
    assert report.annotators_created == ["ann0", "ann1", "ann2", "ann3", "ann4"]
    project = Project.objects.get(name="IWSLT 2019")
    assert project.items.count() == 1047
    per_annotator = dict(
        Assignment.objects.filter(item__project=project, status=Assignment.SUBMITTED)
        .values_list("annotator__username")
        .annotate(n=Count("id"))
    )
    assert per_annotator == {"ann0": 1047, "ann1": 1047, "ann2": 1047, "ann3": 1047, "ann4": 1047}
    assert PostEdit.objects.filter(origin=PostEdit.IMPORTED, definition_version="pet").count() == 5235

    # First row of ann0: the 5th line of newssyscombtest2010.en-es.dcu_doc-38, by PET's "annotator1".
    first = PostEdit.objects.select_related("assignment__item").get(
        assignment__annotator__username="ann0", origin_detail__line=1
    )
    item = first.assignment.item
    assert item.external_id == "newssyscombtest2010.en-es.dcu_doc-38:5"
    assert item.source.startswith("In one of the two high-profile swimming events")
    assert item.model_output.startswith("En uno de los dos prestigiosos eventos de natación")
    assert item.references[0].startswith("En una de las dos distancias reinas")
    assert first.text.startswith("En uno de los dos prestigiosos eventos de natación, los 50 metros libres, fue")
    # Every count column the importer reads, as stored on the post-edit.
    effort = {f: getattr(first, f) for f in ("wall_ms", *pet.EFFORT_COLUMNS)}
    assert effort == {
        "wall_ms": 119625,
        "letters": 45,
        "digits": 0,
        "spaces": 15,
        "symbols": 2,
        "navigation": 67,
        "erase": 6,
        "commands": 2,
        "visible": 62,
        "keystrokes": 68,
        "allkeys": 137,
    }
    assert first.extra["who"] == "annotator1"
    assert first.extra["HTER"] == pytest.approx(0.30188679)
    assert first.extra["DA"] == pytest.approx(0.516222026494724)
    assert first.origin_detail == {"format": "pet", "file": str(shared_data / "iwslt2019" / "ann0"), "line": 1}
    # The same segment was post-edited by all five; two segments share S and MT yet stay two items.
    assert item.assignments.count() == 5
    twins = project.items.filter(
        external_id__in=["en-es.newstest2008.rbmt5_doc-36:1", "en-es.newstest2008.rbmt5_doc-36:3"]
    )
    assert twins.count() == 2 and len({i.model_output for i in twins}) == 1


@pytest.mark.django_db
def test_it_makes_one_item_per_segment_with_a_post_edit_per_editor(study):
    project = ProjectFactory(name="pet")
    report = import_items(project=project, fmt="pet", path=study)

    assert (report.items_created, report.post_edits_created) == (2, 4)
    item = Item.objects.get(project=project, external_id="doc-1:1")
    assert (item.source, item.model_output, item.references) == ("source doc-1 1", "Un gato.", ["ref 1"])
    assert item.meta == {"file_name": "doc-1", "line_in_file": 1}
    edits = {pe.assignment.annotator.username: pe for pe in PostEdit.objects.filter(assignment__item=item)}
    assert edits["ann0"].text == "Un gato negro."
    assert (edits["ann0"].wall_ms, edits["ann0"].letters, edits["ann0"].allkeys) == (1500, 6, 10)
    assert (edits["ann1"].wall_ms, edits["ann1"].keystrokes) == (900, 2)
    assert edits["ann0"].extra == {"who": "x", "src": 7, "HTER": 0.25}
    assert edits["ann0"].assignment.status == Assignment.SUBMITTED
    assert edits["ann0"].submitted_at is not None
    nan_row = PostEdit.objects.get(assignment__item__external_id="doc-1:2", assignment__annotator__username="ann1")
    assert nan_row.extra["HTER"] == "nan"  # kept as text: JSON has no NaN


@pytest.mark.django_db
def test_it_creates_inactive_annotators_without_a_password(study):
    import_items(project=ProjectFactory(name="pet"), fmt="pet", path=study, annotator_prefix="s1-")

    for name in ("s1-ann0", "s1-ann1"):
        user = get_user_model().objects.get(username=name)
        assert not user.is_active
        assert not user.has_usable_password()
        assert is_annotator(user)


@pytest.mark.django_db
def test_it_skips_everything_on_reimport(study):
    project = ProjectFactory(name="pet")
    import_items(project=project, fmt="pet", path=study)
    again = import_items(project=project, fmt="pet", path=study)

    assert (again.items_created, again.items_skipped) == (0, 2)
    assert (again.post_edits_created, again.post_edits_skipped) == (0, 4)
    assert again.annotators_created == []
    assert project.items.count() == 2
    assert PostEdit.objects.count() == 4


@pytest.mark.django_db
def test_it_adds_a_new_editors_file_to_the_existing_items(study):
    project = ProjectFactory(name="pet")
    import_items(project=project, fmt="pet", path=study)
    (study / "ann2").write_text(pet_row("doc-1", 2, "Dos perro.", "Dos perros!"), encoding="utf-8")

    report = import_items(project=project, fmt="pet", path=study)

    assert (report.items_created, report.post_edits_created, report.post_edits_skipped) == (0, 1, 4)
    assert Item.objects.get(external_id="doc-1:2").assignments.count() == 3


@pytest.mark.django_db
def test_the_command_reports_counts_and_creates_the_project_when_asked(study, capsys):
    call_command("import_items", str(study), "--project", "cli study", "--format", "pet", "--create-project")

    out = capsys.readouterr().out
    assert "items created: 2" in out and "post-edits created: 4" in out
    assert Project.objects.get(name="cli study").items.count() == 2


@pytest.mark.django_db
def test_documentation_in_the_folder_is_skipped_and_listed(study, capsys):
    (study / "README.md").write_text("# The study\n\nNot\ttab separated data.\n", encoding="utf-8")
    (study / "LICENSE").write_text("CC BY 4.0\n", encoding="utf-8")
    (study / ".DS_Store").write_bytes(b"\x00\x01binary")

    call_command("import_items", str(study), "--project", "docs", "--format", "pet", "--create-project")

    out = capsys.readouterr().out
    assert "post-edits created: 4" in out
    assert "note: skipped 3 file(s) that are not study data: .DS_Store, LICENSE, README.md" in out


@pytest.mark.django_db
def test_the_command_refuses_a_missing_project_without_create_project(study):
    with pytest.raises(CommandError, match="no project named 'nope'"):
        call_command("import_items", str(study), "--project", "nope", "--format", "pet")
    assert not Project.objects.exists()


def editor_file(study: Path) -> str:
    return str(study / "ann1")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("doc-1\t2\tonly three fields\n", r"ann1, line 1: 3 tab-separated fields, but .*header names 20 columns"),
        (pet_row("doc-1", 1, "Un gato.", "x", time=-5), r"ann1, line 1, field 'time': -5 is negative"),
        (
            pet_row("doc-1", 1, "Un gato.", "x").replace("\t3\t", "\tthree\t", 1),
            r"ann1, line 1, field 'letters': 'three' is not a whole number",
        ),
        (
            pet_row("doc-1", 1, "Un chat.", "x"),
            r"ann1, line 1, field 'MT': segment 'doc-1:1' has a different MT than at .*ann0, line 1",
        ),
        (
            pet_row("doc-1", 1, "Un gato.", "x") + pet_row("doc-1", 1, "Un gato.", "y"),
            r"ann1, line 2, field 'annotator': annotator 'ann1' edits item 'doc-1:1' twice",
        ),
        (pet_row("doc-1", 3, "   ", "x"), r"ann1, line 1, field 'MT': the machine translation is empty"),
        (
            pet_row("doc-1", 1, "Un gato.", "x", letters=2**31),
            r"ann1, line 1, field 'letters': 2147483648 is out of range: letters must be between 0 and 2,147,483,647",
        ),
        (
            pet_row("doc-1", 1, "Un gato.", "x", time=2**63),
            r"ann1, line 1, field 'time': 9223372036854775808 is out of range: time must be between 0 and "
            r"9,223,372,036,854,775,807 \(the wall_ms column",
        ),
        (
            pet_row("doc-1", 1, "Un gato.", "x").replace("\t3\t", "\t" + "9" * 5000 + "\t", 1),
            r"ann1, line 1, field 'letters': 9{59}… is out of range",
        ),
        (
            pet_row("doc-1", 1, "Un gato.", "x").replace("\t3\t", "\t1e29\t", 1),
            r"ann1, line 1, field 'letters': '1e29' is not a whole number",
        ),
    ],
)
@pytest.mark.django_db
def test_it_rejects_bad_rows_and_imports_nothing(study, content, message):
    (study / "ann1").write_text(content, encoding="utf-8")
    project = ProjectFactory(name="pet")

    with pytest.raises(ImportDataError, match=message) as caught:
        import_items(project=project, fmt="pet", path=study)

    assert caught.value.file == editor_file(study)
    assert nothing_stored(project)
    assert not get_user_model().objects.filter(username__startswith="ann").exists()


@pytest.mark.django_db
def test_it_names_the_line_of_bytes_that_are_not_utf8(study):
    (study / "ann1").write_bytes(pet_row("doc-1", 1, "Un gato.", "ok").encode() + "Dos perro\xe9\n".encode("latin-1"))
    project = ProjectFactory(name="pet")

    with pytest.raises(ImportDataError, match=r"ann1, line 2: byte 0xe9 .* is not UTF-8"):
        import_items(project=project, fmt="pet", path=study)
    assert nothing_stored(project)


@pytest.mark.django_db
def test_it_needs_a_header_file_with_mt_and_pe(tmp_path):
    project = ProjectFactory(name="pet")
    no_header = tmp_path / "a"
    no_header.mkdir()
    (no_header / "ann0").write_text(pet_row("d", 1, "a", "b"), encoding="utf-8")
    with pytest.raises(ImportDataError, match="needs a file named 'header'"):
        import_items(project=project, fmt="pet", path=no_header)

    no_pe = write_study(tmp_path / "b", {"ann0": "d\ta\n"}, header="<file_name>\t<MT>\n")
    with pytest.raises(ImportDataError, match=r"header, line 1: the header has no PE column"):
        import_items(project=project, fmt="pet", path=no_pe)
    assert nothing_stored(project)


@pytest.mark.django_db
def test_it_refuses_a_file_over_the_size_limit(study, settings):
    settings.EDITLAB_IMPORT_MAX_BYTES = 100
    project = ProjectFactory(name="pet")

    with pytest.raises(ImportDataError, match=r"ann0: file is \d+ bytes, over the import limit of 100 bytes"):
        import_items(project=project, fmt="pet", path=study)
    assert nothing_stored(project)


@pytest.mark.django_db
def test_it_refuses_to_attach_work_to_a_researcher_account(study):
    UserFactory(username="ann1", role="researcher")
    project = ProjectFactory(name="pet")

    with pytest.raises(
        ImportDataError, match=r"ann1, line 1, field 'annotator': user 'ann1' exists and is not an annotator"
    ):
        import_items(project=project, fmt="pet", path=study)
    assert nothing_stored(project)


@pytest.mark.django_db
def test_it_never_overwrites_live_work_of_the_same_annotator(study):
    project = ProjectFactory(name="pet")
    import_items(project=project, fmt="pet", path=study)
    live = AssignmentFactory(
        item__project=project, item__external_id="doc-1:3", annotator=UserFactory(username="ann0", role="annotator")
    )
    (study / "ann0").write_text(pet_row("doc-1", 3, live.item.model_output, "new"), encoding="utf-8")
    live.item.source, live.item.references = "source doc-1 3", ["ref 3"]
    live.item.document, live.item.document_position = "doc-1", 3
    live.item.save()

    with pytest.raises(
        ImportDataError, match=r"annotator 'ann0' already has an assignment \(pending\) of item 'doc-1:3'"
    ):
        import_items(project=project, fmt="pet", path=study)
    assert PostEdit.objects.count() == 4
    assert Assignment.objects.get(pk=live.pk).status == Assignment.PENDING
