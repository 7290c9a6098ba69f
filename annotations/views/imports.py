"""The admin upload page: pick a project, a format and file(s); import them.

One view per page plus the htmx partial that offers the `table` column mapping
from the chosen file's header. Both run the same importer as `manage.py
import_items`; bad input comes back as a form error, never as a 500. Admins only:
researchers and annotators get 403, anonymous users the login page.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.core.files.uploadedfile import UploadedFile
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods, require_POST

from annotations.importers import FORMATS, ImportReport, files_from_uploads, import_items
from annotations.importers.base import InputFile
from annotations.importers.detect import HEAD_BYTES, NAMES, Detection, detect
from annotations.importers.table import (
    DESIGN_TARGETS,
    ITEM_TARGETS,
    STUDY_TARGETS,
    mapping_pairs,
    per_output,
    read_header,
)
from annotations.models import Project
from annotations.roles import ADMIN, role_required
from editlab.refusals import attempt

HEADER_PEEK_BYTES = 1024 * 1024  # enough for any header line; the mapping needs no more
AUTO = "auto"  # the Format list's first choice: the format detect() finds in the file


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Django's documented recipe: a file field that accepts several files (a PET folder)."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None) -> list[UploadedFile]:
        one = super().clean
        if isinstance(data, list | tuple):
            return [one(d, initial) for d in data]
        return [one(data, initial)]


class ImportForm(forms.Form):
    read_as = ""  # after an import: the format it was read as and what the upload looked like
    project = forms.ModelChoiceField(Project.objects.order_by("name"), required=False, empty_label="— choose —")
    new_project = forms.CharField(
        max_length=200, required=False, label="Or a new project", help_text="Created by this import."
    )
    fmt = forms.ChoiceField(
        choices=[(AUTO, "Detect from the file"), *FORMATS.items()],
        initial=AUTO,
        label="Format",
        help_text="Detected from the file's name and content unless you choose one.",
    )
    # The form metaclass moves declared fields into base_fields, so this field does not hide
    # BaseForm.files (the uploads) at run time; the stubs see a class attribute replacing it.
    files = MultipleFileField(  # type: ignore[assignment]
        label="File(s)",
        help_text="PET: select every file of the study folder (its README and other documentation are skipped).",
    )
    predictions = forms.FileField(
        required=False,
        label="Predictions (natinst)",
        help_text='The model\'s outputs to post-edit: JSONL, {"id": …, "prediction": …} on each line.',
    )
    post_edit_input = forms.BooleanField(
        required=False,
        label="Post-edit the instance input (natinst)",
        help_text="For editing tasks whose input is the text to fix, instead of a predictions file.",
    )
    annotator_prefix = forms.CharField(
        max_length=50,
        required=False,
        help_text="Finished studies: prefix for the (inactive) annotator accounts, e.g. 'iwslt-'.",
    )

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        project, new = data.get("project"), (data.get("new_project") or "").strip()
        if bool(project) == bool(new):
            raise forms.ValidationError("Choose a project or name a new one (not both).")
        if new and Project.objects.filter(name=new).exists():
            self.add_error("new_project", f"A project named {new!r} exists; choose it in the list.")
        data["new_project"] = new
        if data.get("fmt") not in ("natinst", AUTO):
            for name in ("predictions", "post_edit_input"):
                if data.get(name):
                    self.add_error(name, "Applies to the natinst format only.")
        return data


EXTRA_FIELD = "map_extra"  # typed TARGET=COLUMN pairs: output:NAME and highlights:NAME, one per system


def _mapping(request: HttpRequest) -> dict[str, str]:
    """map_<target> fields of the mapping partial ("" means the admin left it unmapped), then the
    typed pairs of map_extra (ImportDataError when one is not TARGET=COLUMN)."""
    mapping = {
        key.removeprefix("map_"): request.POST.get(key, "")
        for key in request.POST
        if key.startswith("map_") and key != EXTRA_FIELD
    }
    mapping.update(mapping_pairs(request.POST.get(EXTRA_FIELD, ""), where="more mapping"))
    return mapping


def _detected(uploads: list[UploadedFile]) -> Detection:
    """The format the uploaded files look like, from each one's name and head (annotations.importers.detect)."""
    heads = []
    for upload in uploads:
        upload.seek(0)
        heads.append((upload.name or "upload", upload.read(HEAD_BYTES)))
        upload.seek(0)
    return detect(heads)


def _detection_context(detection: Detection | None, chosen: str | None) -> dict:
    if detection is None:
        return {}
    fits = detection.fmt is not None and chosen not in (AUTO, detection.fmt)
    return {
        "detection": detection,
        "detected_name": NAMES.get(detection.fmt or "", ""),
        "detection_differs": fits,
        "auto": chosen == AUTO,
    }


def _mapping_context(request: HttpRequest, fmt: str | None, *, stale: bool = False) -> dict:
    """What the file looks like, and for a table the columns of its header with the selection for each target.

    `stale`: the page answers a failed import, whose file the browser no longer holds: the mapping is
    offered from the columns it had, and says the file must be chosen again."""
    uploads = request.FILES.getlist("files")
    if not uploads:
        return {"show_mapping": False}
    detection = _detected(uploads)
    context = _detection_context(detection, fmt)
    if fmt == AUTO:
        fmt = detection.fmt
    if fmt != "table":
        return {**context, "show_mapping": False}
    upload = uploads[0]
    upload.seek(0)  # the failed import may have read it already
    head = upload.read(HEADER_PEEK_BYTES)
    upload.seek(0)
    if upload.size and upload.size > len(head):
        head = head[: head.rfind(b"\n") + 1]  # whole lines only
    header = attempt(read_header, file=InputFile(name=upload.name or "upload", data=head))
    if not header:
        return {**context, "show_mapping": True, "mapping_error": str(header.refusal), "mapping_stale": stale}
    columns = header.value
    chosen = {key.removeprefix("map_"): value for key, value in request.POST.items() if key.startswith("map_")}
    rows = [
        {"target": target, "selected": chosen.get(target, target if target in columns else "")}
        for target in (*ITEM_TARGETS, *DESIGN_TARGETS, *STUDY_TARGETS)
    ]
    return {
        **context,
        "show_mapping": True,
        "mapping_stale": stale,
        "columns": columns,
        "mapping_rows": rows,
        "mapping_file": upload.name,
        "mapping_extra": request.POST.get(EXTRA_FIELD, ""),
        "per_output_columns": [column for column in columns if per_output(column)],
    }


@login_required
@require_http_methods(["GET", "POST"])
@role_required(ADMIN, message="Only admins may import items.")
def import_page(request: HttpRequest) -> HttpResponse:
    report = None
    status = 200
    read_as = ""
    if request.method == "POST":
        form = ImportForm(request.POST, request.FILES)
        if form.is_valid():
            report = _run(form, request)
            if report is None:
                status = 400
            else:
                read_as = form.read_as
                form = ImportForm(initial={"project": report.project_id, "fmt": form.cleaned_data["fmt"]})
        else:
            status = 400
    else:
        form = ImportForm(initial={"project": request.GET.get("project")})
    context = {
        "form": form,
        "report": report,
        "read_as": read_as,
        "failed": status == 400 and bool(request.FILES.getlist("files")),
    }
    if status == 400:
        context.update(_mapping_context(request, request.POST.get("fmt"), stale=True))
    return render(request, "annotations/import_items.html", context, status=status)


def _run(form: ImportForm, request: HttpRequest) -> ImportReport | None:
    data = form.cleaned_data
    detection = _detected(data["files"])
    fmt = data["fmt"]
    if fmt == AUTO:
        if detection.fmt is None:
            form.add_error("fmt", f"Cannot tell the format: this file looks like {detection.label}; choose one.")
            return None
        fmt = detection.fmt
    imported = attempt(_import, request=request, data=data, fmt=fmt)
    if not imported:
        hint = detection.hint(fmt)
        form.add_error("files", f"Nothing was imported. {imported.refusal}" + (f" - {hint}." if hint else ""))
        return None
    form.read_as = f"Read as {NAMES[fmt]}: the upload looked like {detection.label}."
    return imported.value


def _import(*, request: HttpRequest, data: dict, fmt: str) -> ImportReport:
    mapping = _mapping(request)
    files = files_from_uploads(data["files"])
    predictions = files_from_uploads([data["predictions"]])[0] if data.get("predictions") else None
    return import_items(
        project=data["project"] or data["new_project"],
        create_project=bool(data["new_project"]),
        fmt=fmt,
        files=files,
        mapping=mapping if fmt == "table" else None,
        annotator_prefix=data["annotator_prefix"],
        predictions=predictions,
        post_edit_input=data["post_edit_input"],
    )


@login_required
@require_POST
@role_required(ADMIN, message="Only admins may import items.")
def import_mapping(request: HttpRequest) -> HttpResponse:
    """htmx partial: the column mapping for the chosen table file (empty for other formats)."""
    return render(request, "annotations/import_mapping.html", _mapping_context(request, request.POST.get("fmt")))
