"""The Users page (admins only): accounts with their role, active flag and last login; add one, change
its role, deactivate or reactivate it, reset its password (a generated one is shown once).

The writes are annotations/services/users.py's: an admin never changes a superuser's account nor their
own (AccountRefused, a 403 page with the reason). htmx swaps only the table when the filters change;
every URL it pushes renders the whole page too.
"""

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_GET, require_POST

from annotations.manage_forms_users import (
    UserActiveForm,
    UserAddForm,
    UserFilterForm,
    UserPasswordForm,
    UserRoleForm,
)
from annotations.roles import ADMIN, role_required
from annotations.selectors_users import users_page
from annotations.services.users import user_change_role, user_create, user_reset_password, user_set_active
from editlab.http import AuthenticatedHttpRequest, render_page
from editlab.limits import parse_id
from editlab.refusals import attempt

User = get_user_model()
admins = role_required(ADMIN, message="Only admins may see and change accounts.")


def _render(
    request: AuthenticatedHttpRequest,
    *,
    add_form: UserAddForm | None = None,
    shown_password: tuple[str, str] | None = None,
    error: str = "",
    status: int = 200,
) -> HttpResponse:
    filters = UserFilterForm(request.GET or None, auto_id="filter_%s")  # the add form has a role field too
    chosen = filters.cleaned_data if filters.is_valid() else {}
    page, rows = users_page(
        actor=request.user,
        q=chosen.get("q", ""),
        role=chosen.get("role", ""),
        active=chosen.get("active", ""),
        page=request.GET.get("page", 1),
    )
    query = request.GET.copy()
    query.pop("page", None)
    context = {
        "filters": filters,
        "page": page,
        "rows": rows,
        "query": query.urlencode(),
        "add_form": add_form or UserAddForm(),
        "role_form": UserRoleForm(),
        "password_form": UserPasswordForm(),
        "shown_password": shown_password,
        "error": error,
    }
    response = render_page(
        request, "annotations/manage_users.html", "annotations/manage_users_table.html", context, status=status
    )
    if shown_password:
        response["Cache-Control"] = "no-store"  # a password shown once is kept in no cache
    return response


@login_required
@require_GET
@admins
def users_list(request: AuthenticatedHttpRequest) -> HttpResponse:
    return _render(request)


@login_required
@require_POST
@admins
def user_add_view(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = UserAddForm(request.POST)
    if not form.is_valid():
        return _render(request, add_form=form, status=400)
    data = form.cleaned_data
    created = form.submit(
        user_create, actor=request.user, username=data["username"], role=data["role"], password=data["password"] or None
    )
    if not created:
        return _render(request, add_form=form, status=400)
    user, password = created.value
    generated = not data["password"]
    messages.success(request, f"Created {user.username} ({data['role']}).")
    return _render(request, shown_password=(user.username, password) if generated else None)


def _target(user_id: int):
    return get_object_or_404(User, pk=parse_id(str(user_id)))


def _back(request: AuthenticatedHttpRequest) -> HttpResponse:
    return redirect("manage-users")


@login_required
@require_POST
@admins
def user_role_view(request: AuthenticatedHttpRequest, user_id: int) -> HttpResponse:
    user = _target(user_id)
    form = UserRoleForm(request.POST)
    if not form.is_valid():
        return _render(request, error=f"role of {user.username}: choose admin, annotator or researcher", status=400)
    user_change_role(actor=request.user, user=user, role=form.cleaned_data["role"])
    messages.success(request, f"{user.username} is now {form.cleaned_data['role']}.")
    return _back(request)


@login_required
@require_POST
@admins
def user_active_view(request: AuthenticatedHttpRequest, user_id: int) -> HttpResponse:
    user = _target(user_id)
    form = UserActiveForm(request.POST)
    if not form.is_valid():
        return _render(request, error=f"active of {user.username}: say deactivate (0) or reactivate (1)", status=400)
    active = form.cleaned_data["active"]
    user_set_active(actor=request.user, user=user, active=active)
    if active:
        messages.success(request, f"Reactivated {user.username}: they can log in again.")
    else:
        messages.success(request, f"Deactivated {user.username}: they can no longer log in; their work is kept.")
    return _back(request)


@login_required
@require_POST
@admins
def user_password_view(request: AuthenticatedHttpRequest, user_id: int) -> HttpResponse:
    user = _target(user_id)
    form = UserPasswordForm(request.POST)
    if not form.is_valid():
        return _render(
            request, error=f"password of {user.username}: {form.errors.get('password', [''])[0]}", status=400
        )
    reset = attempt(user_reset_password, actor=request.user, user=user, password=form.cleaned_data["password"] or None)
    if not reset:
        return _render(request, error=f"{user.username}'s {reset.refusal}", status=400)
    password = reset.value
    if form.cleaned_data["password"]:
        messages.success(request, f"Set the password of {user.username}; their other sessions ended.")
        return _back(request)
    return _render(request, shown_password=(user.username, password))
