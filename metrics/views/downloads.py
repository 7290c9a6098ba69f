"""What the report's downloads share: CSV (formula-safe cells, RFC 4180 line ends) and JSON answers
sent as attachments, and a file name safe to send.
"""

import csv
import io

from django.http import HttpResponse, JsonResponse

from metrics.exports import neutralise_formula


def safe_name(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in text).strip("_") or "report"


def csv_response(rows: list[dict], filename: str, columns: list[str] | None = None) -> HttpResponse:
    buffer = io.StringIO()
    columns = columns or list(dict.fromkeys(key for row in rows for key in row))
    # RFC 4180 line ends: a cell holding a lone CR is then quoted (with "\n" it went out bare and split the row).
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow([neutralise_formula(c) for c in columns])
    for row in rows:
        writer.writerow(["" if row.get(c) is None else cell(row.get(c)) for c in columns])
    response = HttpResponse(buffer.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}.csv"'
    return response


def cell(value):
    return neutralise_formula(value) if isinstance(value, str) else value


def json_response(data, filename: str) -> HttpResponse:
    response = JsonResponse(data, json_dumps_params={"allow_nan": False})
    response["Content-Disposition"] = f'attachment; filename="{filename}.json"'
    return response
