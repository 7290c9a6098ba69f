"""Read-only admin for generation runs and their per-item provenance.

Runs are started and stopped by the commands (and their page, when built); the admin only shows them.
The API key is never stored, so nothing here can show it.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from annotations.roles import is_admin
from generation.models import GenerationRecord, GenerationRun


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_admin(request.user)  # editlab's admins (staff, not superusers) read runs and provenance

    def has_module_permission(self, request: HttpRequest) -> bool:
        return is_admin(request.user)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(GenerationRun)
class GenerationRunAdmin(ReadOnlyAdmin):
    list_display = ("id", "project", "kind", "name", "model", "status", "done", "total", "generated", "failed")
    list_filter = ("kind", "status", "project")
    search_fields = ("name", "model", "endpoint")


@admin.register(GenerationRecord)
class GenerationRecordAdmin(ReadOnlyAdmin):
    list_display = ("id", "run", "item", "status", "prompt_tokens", "completion_tokens", "created")
    list_filter = ("status", "run__kind")
    list_select_related = ("run", "item")
    raw_id_fields = ("run", "item", "post_edit")
