"""Importers: one code path for `manage.py import_items` and the admin upload page.

    report = import_items(project="IWSLT", fmt="pet", path=Path("iwslt2019"), create_project=True)

Each format parses its files into an `ImportPlan` (no database access); `plan_store`
then checks the plan against the project and writes it in one transaction, so a
bad file imports nothing. Errors are `ImportDataError`s naming file, line and field.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from django.core.files.uploadedfile import UploadedFile
from django.db import DataError, IntegrityError, transaction

from annotations.importers import editeval, idfx, mqm, natinst, pet, table
from annotations.importers.base import ImportDataError, ImportPlan, InputFile, check_size
from annotations.importers.idfx_store import logs_store as idfx_logs_store
from annotations.importers.mqm_store import evaluations_store
from annotations.importers.store import ImportReport, plan_store
from annotations.models import Project
from editlab.db import refresh_planner_statistics

__all__ = ["FORMATS", "ImportDataError", "ImportReport", "InputFile", "import_items", "files_from_uploads"]

FORMATS = {
    "editeval": "EditEval JSONL (id, title, input, edits, tasks or task_type, retrieved_documents, meta)",
    "natinst": "Super-NaturalInstructions task file (JSON) with a model's predictions",
    "table": "Table: CSV, TSV or JSONL with a column mapping",
    "pet": "Finished PET study: a header file and one file per post-editor",
    "idfx": "Inputlog/ScriptLog IDFX keystroke log (XML): one finished post-edit with its event log",
    "mqm": "WMT MQM TSV (system doc doc_id seg_id rater source target category severity comment): finished ratings",
}


def import_items(
    *,
    project: Project | str,
    fmt: str,
    path: Path | None = None,
    files: list[InputFile] | None = None,
    mapping: dict[str, str] | None = None,
    create_project: bool = False,
    annotator_prefix: str = "",
    predictions: Path | InputFile | None = None,
    post_edit_input: bool = False,
) -> ImportReport:
    """Import a file (or a PET folder) given as `path` or as already-read `files`.

    `project` is a Project or a name; a missing name is created only with
    `create_project`. natinst takes the model's `predictions` (a JSONL file) or
    `post_edit_input`. Raises ImportDataError and stores nothing on bad input.
    """
    if fmt not in FORMATS:
        raise ImportDataError(f"unknown format {fmt!r}; choose one of {', '.join(FORMATS)}", file=str(path or "-"))
    skipped: list[str] = []
    if files is None:
        if path is None:
            raise ValueError("give path or files")
        files, skipped = read_path(Path(path), fmt)
    elif fmt == "pet":
        files, skipped = pet.data_files(files)
    if isinstance(predictions, Path | str):
        predictions = InputFile.from_path(Path(predictions))
    if fmt != "natinst" and (predictions is not None or post_edit_input):
        what = "a predictions file" if predictions is not None else "post-editing the input"
        raise ImportDataError(f"{what} applies to the natinst format only", file=files[0].name if files else "-")
    plan = _parse(
        fmt,
        files,
        mapping=mapping,
        annotator_prefix=annotator_prefix,
        predictions=predictions,
        post_edit_input=post_edit_input,
    )
    name = project.name if isinstance(project, Project) else project
    shown = [str(path)] if path is not None else [f.name for f in files]
    if predictions is not None:
        shown.append(predictions.name)
    report = ImportReport(project=name, fmt=fmt, files=shown)
    if skipped:
        report.notes.append(pet.skipped_note(skipped))
    report.notes.extend(plan.notes)
    try:
        with transaction.atomic():
            target = _lock_project(name, create_project, report, files[0].name)
            plan_store(project=target, plan=plan, report=report)
            if isinstance(plan, idfx.IdfxPlan):  # the logs of the post-edits just stored
                idfx_logs_store(project=target, plan=plan)
            if isinstance(plan, mqm.MqmPlan):  # the ratings of the outputs just stored
                evaluations_store(project=target, plan=plan, report=report)
            report.project_id = target.pk
    except IntegrityError as exc:
        # Another import or edit wrote the same rows meanwhile; everything here was rolled back.
        raise ImportDataError(
            f"conflicts with data stored while importing ({exc}); nothing was imported, try again",
            file=files[0].name,
        ) from None
    except (DataError, OverflowError) as exc:
        # A value the database refuses that the checks above let through; rolled back too.
        raise ImportDataError(
            f"the database refused a value ({exc}); nothing was imported", file=files[0].name
        ) from None
    finally:
        if plan.spooled is not None:
            plan.spooled.close()  # its temporary file, at once rather than when the plan is collected
    if report.items_created or report.post_edits_created:
        refresh_planner_statistics("annotations_item", "annotations_assignment", "annotations_postedit")
    return report


def read_path(path: Path, fmt: str) -> tuple[list[InputFile], list[str]]:
    """The files to import from `path`, and the names of those skipped as not data (PET folders)."""
    if fmt == "pet":
        if not path.is_dir():
            raise ImportDataError(
                "a PET study is a folder (a header file and one file per post-editor)", file=str(path)
            )
        children = [child for child in sorted(path.iterdir()) if child.is_file()]
        files = [
            InputFile.from_path(child, str(path / child.name)) for child in children if pet.is_data_file(child.name)
        ]
        if not files:
            raise ImportDataError("the folder holds no data files", file=str(path))
        return files, [child.name for child in children if not pet.is_data_file(child.name)]
    if path.is_dir():
        raise ImportDataError(f"is a folder; the {fmt} format reads one file", file=str(path))
    # A table is read a line at a time, twice at most (checked, then parsed): never held in memory whole.
    return [InputFile.from_path(path, streamed=fmt == "table")], []


def files_from_uploads(uploads: Iterable[UploadedFile]) -> list[InputFile]:
    """Read uploaded files, refusing any over the size limit before reading it."""
    files = []
    for upload in uploads:
        name = upload.name or "upload"
        check_size(name, upload.size or 0)
        files.append(InputFile(name=name, data=upload.read()))
    return files


def _parse(
    fmt: str,
    files: list[InputFile],
    *,
    mapping: dict[str, str] | None,
    annotator_prefix: str,
    predictions: InputFile | None,
    post_edit_input: bool,
) -> ImportPlan:
    if not files:
        raise ImportDataError("no file to import", file="-")
    if fmt == "pet":
        return pet.parse(files, annotator_prefix=annotator_prefix)
    if len(files) != 1:
        raise ImportDataError(f"the {fmt} format reads exactly one file, got {len(files)}", file=files[0].name)
    if fmt == "editeval":
        return editeval.parse(files[0])
    if fmt == "idfx":
        return idfx.parse(files[0], annotator_prefix=annotator_prefix)
    if fmt == "mqm":
        return mqm.parse(files[0], annotator_prefix=annotator_prefix)
    if fmt == "natinst":
        return natinst.parse(files[0], predictions=predictions, post_edit_input=post_edit_input)
    return table.parse(files[0], mapping=mapping or {})


def _lock_project(name: str, create: bool, report: ImportReport, file: str) -> Project:
    # The row lock serializes concurrent imports into one project (PostgreSQL; SQLite locks the database).
    project = Project.objects.select_for_update().filter(name=name).first()
    if project is not None:
        return project
    if not create:
        raise ImportDataError(f"no project named {name!r}; create it first or pass --create-project", file=file)
    if not name.strip():
        raise ImportDataError("the project needs a name", file=file)
    report.project_created = True
    return Project.objects.create(name=name)
