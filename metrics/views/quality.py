"""The quality page: a project's MQM and ESA evaluations as the Marot app shows them (metrics.quality_page),
and the WMT TSV downloads. Researchers and admins only (annotators 403, an unknown project 404).

The page is one GET form of filters; with htmx a change re-renders only its body (the partial
"metrics/quality_body.html") and pushes the URL, which loaded directly renders the whole page. A filter
value that does not apply is a message naming the filter: a 400 page, or in place for htmx.
"""

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.core.paginator import Page, Paginator
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_GET

from annotations.models import Project
from annotations.roles import ADMIN, RESEARCHER, role_required
from editlab.http import HtmxHttpRequest, render_page, wants_fragment
from editlab.refusals import attempt
from metrics.exports_mqm import avg_seg_scores_tsv, mqm_export_stream
from metrics.quality_page import DEFINITIONS, FILTERS, QualityData, QualityFilterError, SegmentRow, quality_data
from metrics.views.downloads import safe_name

PER_PAGE = 25
TSV = "text/tab-separated-values; charset=utf-8"
DOWNLOADS = {"mqm": "the WMT MQM TSV", "avg_seg_scores": "WMT's avg_seg_scores TSV"}

readers = role_required(ADMIN, RESEARCHER, message="Only researchers and admins may read quality evaluations.")


def _page_number(text: str | None) -> int:
    if text is None or text == "":
        return 1
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= 10**9:
        raise QualityFilterError(f"page: {text[:20]!r} is not a page number (1, 2, ...)")
    return int(text)


def _quality(*, project: Project, query) -> tuple[QualityData, Page]:
    """The page's data and the page of its segment rows the query asks for."""
    number = _page_number(query.get("page"))
    data = quality_data(project=project, query=query)
    paginator: Paginator[SegmentRow] = Paginator(data.rows, PER_PAGE)
    if number > max(paginator.num_pages, 1):
        raise QualityFilterError(f"page: {number} is past the last page ({paginator.num_pages})")
    page = paginator.page(number)
    for row in page.object_list:
        row.render(data.weights_used)
    return data, page


def _system_rows(data: QualityData) -> list[dict]:
    """Per system: MQM (best first: the lowest penalty), its ESA mean, its breakdown."""
    order = sorted(data.systems, key=lambda name: (data.systems[name]["mean"], name))
    return [
        {
            "name": name,
            "mqm": data.systems[name],
            "esa": data.esa_systems.get(name),
            "parts": data.breakdown.get(name, []),
        }
        for name in order
    ]


@login_required
@require_GET
@readers
def quality_page(request: HtmxHttpRequest, project_id: int) -> HttpResponse:
    project = get_object_or_404(Project, pk=project_id)
    chosen = {name: request.GET.get(name, "") for name in FILTERS}
    context: dict = {"project": project, "chosen": chosen, "definitions": DEFINITIONS, "downloads": DOWNLOADS}
    outcome = attempt(_quality, project=project, query=request.GET)
    status = 200
    if outcome.refusal is not None:
        context["error"] = str(outcome.refusal)
        context["choices"] = {}
        status = 200 if wants_fragment(request) else 400  # htmx swaps only 2xx bodies: the message in place
    else:
        data, page = outcome.value
        query = urlencode(data.filters.as_params())
        context.update(
            {
                "data": data,
                "choices": data.choices,
                "system_rows": _system_rows(data),
                "rater_rows": [
                    {"name": name, "mqm": mqm, "esa": data.esa_raters.get(name)} for name, mqm in data.raters.items()
                ],
                "page": page,
                "query": query,
                "page_prefix": f"?{query}&page=" if query else "?page=",
            }
        )
    return render_page(request, "metrics/quality.html", "metrics/quality_body.html", context, status=status)


@login_required
@require_GET
@readers
def quality_download(request: HttpRequest, project_id: int, kind: str) -> HttpResponse | StreamingHttpResponse:
    """The project's evaluations as the WMT MQM TSV (streamed), or its segment scores as avg_seg_scores."""
    project = get_object_or_404(Project, pk=project_id)
    if kind not in DOWNLOADS:
        raise Http404(f"unknown download {kind!r}")
    filename = f"{safe_name(project.name)}.{kind}.tsv"
    response: HttpResponse | StreamingHttpResponse
    if kind == "mqm":
        response = StreamingHttpResponse(mqm_export_stream(project), content_type=TSV)
    else:
        response = HttpResponse(avg_seg_scores_tsv(project), content_type=TSV)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
