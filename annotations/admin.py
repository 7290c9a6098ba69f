"""Django admin for every annotations model, and user/role management.

The raw data (post-edits, visits, edit events) is read-only here: the event log is
append-only by design and effort figures are derived from it. Assignments are withdrawn
through the service (never a plain delete), so submitted work cannot be removed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypedDict

from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import GroupAdmin as DjangoGroupAdmin
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.contrib.auth.forms import UserChangeForm, UserCreationForm
from django.contrib.auth.models import Group, Permission
from django.core.exceptions import PermissionDenied
from django.db.models import Count, ManyToManyField, Q, QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from annotations.models import Assignment, Batch, EditEvent, Item, PostEdit, Project, Visit
from annotations.roles import ADMIN, ANNOTATOR, RESEARCHER, ROLES
from annotations.services.assignment import assignment_withdraw
from annotations.services.users import user_set_role
from editlab.forms import JSON_FORM_FIELDS

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations

User = get_user_model()


class _ProjectCounts(TypedDict):
    item_count: int
    batch_count: int


class _BatchCounts(TypedDict):
    item_count: int


class ReadOnlyAdmin(admin.ModelAdmin):
    """Viewable by admins, never added, changed or deleted through the admin site."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    formfield_overrides = JSON_FORM_FIELDS  # JSON read with limits: a deep value is a form error
    list_display = ("name", "task_type", "overlap", "idle_threshold_s", "item_count", "batch_count", "created")
    list_filter = ("task_type",)
    search_fields = ("name", "guidelines")
    readonly_fields = ("created", "instruction_seed")

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return (
            super()
            .get_queryset(request)
            .annotate(item_count=Count("items", distinct=True), batch_count=Count("batches", distinct=True))
        )

    @admin.display(ordering="item_count", description="items")
    def item_count(self, project: WithAnnotations[Project, _ProjectCounts]) -> int:
        return project.item_count

    @admin.display(ordering="batch_count", description="batches")
    def batch_count(self, project: WithAnnotations[Project, _ProjectCounts]) -> int:
        return project.batch_count


@admin.register(Batch)
class BatchAdmin(admin.ModelAdmin):
    formfield_overrides = JSON_FORM_FIELDS  # JSON read with limits: a deep value is a form error
    list_display = ("name", "project", "item_count", "created")
    list_filter = ("project",)
    search_fields = ("name", "project__name")
    list_select_related = ("project",)
    readonly_fields = ("created", "item_links")

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).annotate(item_count=Count("items"))

    @admin.display(ordering="item_count", description="items")
    def item_count(self, batch: WithAnnotations[Batch, _BatchCounts]) -> int:
        return batch.item_count

    @admin.display(description="items")
    def item_links(self, batch: Batch) -> str:
        # A link, not an inline: a batch can hold thousands of items.
        items = reverse("admin:annotations_item_changelist") + f"?batch__id__exact={batch.pk}"
        assignments = reverse("admin:annotations_assignment_changelist") + f"?item__batch__id__exact={batch.pk}"
        return format_html(
            '<a href="{}">{} items</a> · <a href="{}">their assignments</a>', items, batch.items.count(), assignments
        )


class HasBatchFilter(admin.SimpleListFilter):
    title = "batched"
    parameter_name = "batched"

    def lookups(self, request, model_admin):
        return [("yes", "in a batch"), ("no", "not batched")]

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.filter(batch__isnull=False)
        if self.value() == "no":
            return queryset.filter(batch__isnull=True)
        return queryset


@admin.register(Item)
class ItemAdmin(admin.ModelAdmin):
    formfield_overrides = JSON_FORM_FIELDS  # JSON read with limits: a deep value is a form error
    list_display = ("external_id", "project", "batch", "batch_position", "task_type", "short_output")
    list_filter = ("project", HasBatchFilter, "task_type")
    search_fields = ("external_id", "model_output", "source")
    list_select_related = ("project", "batch")
    raw_id_fields = ("batch",)
    readonly_fields = ("created", "drawn_instruction")

    @admin.display(description="model output")
    def short_output(self, item: Item) -> str:
        return item.model_output[:80] + ("…" if len(item.model_output) > 80 else "")


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    formfield_overrides = JSON_FORM_FIELDS  # JSON read with limits: a deep value is a form error
    list_display = ("item", "annotator", "status", "batch", "started", "finished")
    list_filter = ("status", "item__project", "annotator")
    search_fields = ("item__external_id", "annotator__username", "item__project__name")
    list_select_related = ("item__project", "item__batch", "annotator")
    raw_id_fields = ("item", "annotator")
    readonly_fields = ("created", "started", "finished")
    actions = ["withdraw_pending"]

    def lookup_allowed(self, lookup: str, value: str, request: HttpRequest) -> bool:
        # The batch page links here with this filter.
        return lookup == "item__batch__id__exact" or super().lookup_allowed(lookup, value, request)

    @admin.display(ordering="item__batch__name")
    def batch(self, assignment: Assignment) -> str:
        batch = assignment.item.batch
        return batch.name if batch is not None else "—"

    def has_change_permission(self, request: HttpRequest, obj: Assignment | None = None) -> bool:
        # Closed work (submitted or skipped) keeps its annotator and status.
        if obj is not None and obj.is_closed:
            return False
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Assignment | None = None) -> bool:
        if obj is not None and obj.status != Assignment.PENDING:
            return False
        return super().has_delete_permission(request, obj)

    def get_actions(self, request: HttpRequest) -> dict:
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # would cascade to submitted post-edits
        return actions

    @admin.action(
        description="Withdraw selected pending assignments (submitted/in-progress are kept)", permissions=["change"]
    )
    def withdraw_pending(self, request: HttpRequest, queryset: QuerySet) -> None:
        result = assignment_withdraw(assignments=queryset)
        self.message_user(
            request,
            f"Withdrew {result.withdrawn}; kept {result.kept_submitted} submitted/skipped "
            f"and {result.kept_in_progress} in progress.",
            messages.SUCCESS,
        )


@admin.register(PostEdit)
class PostEditAdmin(ReadOnlyAdmin):
    list_display = ("assignment", "status", "origin", "submitted_at", "wall_ms", "active_ms", "keystrokes", "replay_ok")
    list_filter = ("origin", "assignment__status", "replay_ok", "assignment__item__project")
    search_fields = ("assignment__item__external_id", "assignment__annotator__username", "text")
    list_select_related = ("assignment__item__project", "assignment__annotator")
    readonly_fields = ("event_log", "replay_page")

    @admin.display(ordering="assignment__status")
    def status(self, post_edit: PostEdit) -> str:
        return post_edit.assignment.get_status_display()

    @admin.display(description="event log")
    def event_log(self, post_edit: PostEdit) -> str:
        url = reverse("admin:annotations_editevent_changelist") + f"?post_edit__id__exact={post_edit.pk}"
        return format_html('<a href="{}">{} events</a>', url, post_edit.events.count())

    @admin.display(description="replay")
    def replay_page(self, post_edit: PostEdit) -> str:
        """Link to the step-by-step replay (annotations/views/replay.py)."""
        url = reverse("manage-post-edit-replay", args=[post_edit.pk])
        return format_html('<a href="{}">replay step by step</a>', url)


@admin.register(Visit)
class VisitAdmin(ReadOnlyAdmin):
    list_display = ("page_id", "post_edit", "started_at", "last_seen_at", "ended_at")
    list_filter = ("post_edit__assignment__item__project",)
    search_fields = ("page_id", "post_edit__assignment__annotator__username")
    list_select_related = ("post_edit__assignment__item__project", "post_edit__assignment__annotator")


@admin.register(EditEvent)
class EditEventAdmin(ReadOnlyAdmin):
    list_display = ("post_edit_id", "seq", "kind", "key", "input_type", "t_ms", "received_at", "sel_start", "sel_end")
    list_filter = ("kind", "input_type", "post_edit__assignment__item__project")
    search_fields = ("key", "data", "post_edit__assignment__annotator__username")
    list_per_page = 200

    def lookup_allowed(self, lookup: str, value: str, request: HttpRequest) -> bool:
        # The post-edit page links here with this filter.
        return lookup == "post_edit__id__exact" or super().lookup_allowed(lookup, value, request)

    show_full_result_count = False  # the log can be millions of rows


# --------------------------------------------------------------------------- users and roles


class RoleFilter(admin.SimpleListFilter):
    title = "role"
    parameter_name = "role"

    def lookups(self, request, model_admin):
        return [(role, role) for role in ROLES] + [("none", "no role")]

    def queryset(self, request, queryset):
        if self.value() in ROLES:
            return queryset.filter(groups__name=self.value())
        if self.value() == "none":
            return queryset.exclude(groups__name__in=ROLES)
        return queryset


_ROLE_CHOICES = [(role, role) for role in ROLES]


class RoleChangeForm(UserChangeForm):
    role = forms.ChoiceField(
        choices=[("", "— no change —"), *_ROLE_CHOICES],
        required=False,
        help_text="Replaces the user's groups; admin also makes the user staff.",
    )


class RoleCreationForm(UserCreationForm):
    role = forms.ChoiceField(choices=_ROLE_CHOICES, initial=ANNOTATOR)


admin.site.unregister(User)
admin.site.unregister(Group)


def _held_permissions(request: HttpRequest) -> QuerySet:
    """The permissions the requesting user holds (directly or through groups): all a non-superuser
    may hand out."""
    user = request.user
    return Permission.objects.filter(Q(user=user) | Q(group__user=user)).distinct()


@admin.register(Group)
class GroupAdmin(DjangoGroupAdmin):
    """A group's permissions: a non-superuser may give or take only those they hold themselves;
    the group's other permissions are kept as they were."""

    def formfield_for_manytomany(
        self, db_field: ManyToManyField[Any, Any], request: HttpRequest | None = None, **kwargs: Any
    ) -> forms.ModelMultipleChoiceField[Any] | None:
        if db_field.name == "permissions":
            if request is None:  # Django always passes it; with no user to ask, none can be handed out
                kwargs["queryset"] = Permission.objects.none()
            elif not request.user.is_superuser:
                held = _held_permissions(request)
                kwargs["queryset"] = Permission.objects.filter(pk__in=[p.pk for p in held]).select_related(
                    "content_type"
                )
        return super().formfield_for_manytomany(db_field, request, **kwargs)

    def save_related(self, request: HttpRequest, form, formsets, change: bool) -> None:
        kept: list = []
        if change and not request.user.is_superuser:
            held = {p.pk for p in _held_permissions(request)}
            kept = [
                pk
                for pk in Group.objects.get(pk=form.instance.pk).permissions.values_list("pk", flat=True)
                if pk not in held
            ]
        super().save_related(request, form, formsets, change)
        if kept:
            form.instance.permissions.add(*kept)


@admin.register(User)
class UserAdmin(DjangoUserAdmin):
    form = RoleChangeForm
    add_form = RoleCreationForm
    list_display = ("username", "role", "is_active", "is_staff", "last_login", "date_joined")
    list_filter = (RoleFilter, "is_active", "is_staff", "is_superuser")
    fieldsets = ((None, {"fields": ("username", "password", "role")}), *(DjangoUserAdmin.fieldsets or ())[1:])
    add_fieldsets = ((None, {"classes": ("wide",), "fields": ("username", "role", "password1", "password2")}),)
    actions = ["make_admin", "make_annotator", "make_researcher"]

    def get_queryset(self, request: HttpRequest) -> QuerySet:
        return super().get_queryset(request).prefetch_related("groups")

    # Admin-role users are staff, not superusers: they manage accounts through roles and never
    # see or set superuser status or single permissions, nor touch a superuser's account (whose
    # password they could otherwise change and log in with).

    def get_fieldsets(self, request: HttpRequest, obj=None):
        fieldsets = super().get_fieldsets(request, obj)
        if request.user.is_superuser or obj is None:
            return fieldsets
        return [
            (name, {**options, "fields": ("is_active",)}) if name == "Permissions" else (name, options)
            for name, options in fieldsets
        ]

    def get_list_filter(self, request: HttpRequest):
        if request.user.is_superuser:
            return self.list_filter
        return tuple(f for f in self.list_filter if f != "is_superuser")

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        if obj is not None and obj.is_superuser and not request.user.is_superuser:
            return False
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        if obj is not None and obj.is_superuser and not request.user.is_superuser:
            return False
        return super().has_delete_permission(request, obj)

    def user_change_password(self, request: HttpRequest, id: str, form_url: str = ""):
        target = User.objects.filter(pk=id).first() if str(id).isdigit() else None
        if target is not None and target.is_superuser and not request.user.is_superuser:
            raise PermissionDenied
        return super().user_change_password(request, id, form_url)

    @admin.display(description="role")
    def role(self, user) -> str:
        # From the prefetched groups: role_of() would query once per row.
        names = {group.name for group in user.groups.all()}
        if user.is_superuser or (user.is_staff and ADMIN in names):
            return ADMIN
        return next((role for role in (ANNOTATOR, RESEARCHER) if role in names), "—")

    def save_related(self, request: HttpRequest, form, formsets, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        role = form.cleaned_data.get("role")
        if role:  # after the m2m save, which would otherwise overwrite the groups
            user_set_role(user=form.instance, role=role)

    def _set_role(self, request: HttpRequest, queryset: QuerySet, role: str) -> None:
        if not request.user.is_superuser:
            queryset = queryset.filter(is_superuser=False)
        for user in queryset:
            user_set_role(user=user, role=role)
        self.message_user(request, f"{queryset.count()} user(s) now have the role {role}.", messages.SUCCESS)

    @admin.action(description="Give selected users the admin role", permissions=["change"])
    def make_admin(self, request, queryset):
        self._set_role(request, queryset, ADMIN)

    @admin.action(description="Give selected users the annotator role", permissions=["change"])
    def make_annotator(self, request, queryset):
        self._set_role(request, queryset, ANNOTATOR)

    @admin.action(description="Give selected users the researcher role", permissions=["change"])
    def make_researcher(self, request, queryset):
        self._set_role(request, queryset, RESEARCHER)
