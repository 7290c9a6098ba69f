"""The items browser: a project's items or post-edits, filtered and paged (htmx swaps the table and
pushes its URL; every such URL is also the whole page), and one item's page with everything it holds:
its texts, its outputs' highlights, how an LLM made them, and its post-edits with links to their
replay, diff and process graph.

Admins and researchers read both pages (they change nothing: no POST); annotators get 403; anonymous
users go to the login page.
"""

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from annotations.items_forms import VIEW_POST_EDITS, ItemFilters, item_filters, project_annotators
from annotations.models import Project
from annotations.roles import ADMIN, RESEARCHER, role_required
from annotations.selectors_items import PAGE_SIZE, item_detail, items_page, post_edits_page
from editlab.http import HtmxHttpRequest, render_page
from generation.selectors import item_provenance

readers = role_required(ADMIN, RESEARCHER, message="Only admins and researchers may browse a project's items.")


def _url(base: str, filters: ItemFilters, **changes: str | int | None) -> str:
    query = urlencode(filters.query(**changes))
    return f"{base}?{query}" if query else base


@login_required
@require_GET
@readers
def browser_page(request: HtmxHttpRequest, project_id: int) -> HttpResponse:
    """The browser: the filter form and the table; htmx asks for the table alone (#items-table)."""
    project = get_object_or_404(Project, pk=project_id)
    form, filters = item_filters(request.GET, project=project, annotators=project_annotators(project))
    if filters.view == VIEW_POST_EDITS:
        page = post_edits_page(project=project, filters=filters)
    else:
        page = items_page(project=project, filters=filters)
    base = reverse("manage-items", kwargs={"project_id": project.pk})
    context = {
        "project": project,
        "form": form,
        "filters": filters,
        "page": page,
        "page_size": PAGE_SIZE,
        "problems": [*filters.dropped, *page.problems],
        "first_url": _url(base, filters) if filters.after or filters.before else "",
        "next_url": _url(base, filters, after=page.next_after) if page.next_after else "",
        "previous_url": _url(base, filters, before=page.previous_before) if page.previous_before else "",
        "items_url": _url(base, filters, view="items"),
        "post_edits_url": _url(base, filters, view=VIEW_POST_EDITS),
        "filtered": bool(filters.query(view="")),
        "clear_url": _url(base, ItemFilters(view=filters.view)),
    }
    return render_page(request, "annotations/manage_items.html", "annotations/manage_items_table.html", context)


@login_required
@require_GET
@readers
def item_page(request: HtmxHttpRequest, project_id: int, item_id: int) -> HttpResponse:
    project = get_object_or_404(Project, pk=project_id)
    item = get_object_or_404(project.items.select_related("batch"), pk=item_id)
    context = {
        "project": project,
        "detail": item_detail(item=item),
        "provenance": item_provenance(item),
        "browser_url": reverse("manage-items", kwargs={"project_id": project.pk}),
    }
    return render(request, "annotations/manage_item.html", context)
