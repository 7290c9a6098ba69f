from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from editlab.logins.models import LoginCounter


@admin.register(LoginCounter)
class LoginCounterAdmin(admin.ModelAdmin):
    """Failed-login counters; "Unlock" sets the selected ones back to zero."""

    list_display = ("username", "address", "failures", "window_start", "last_success")
    list_filter = ("failures",)
    search_fields = ("username", "address")
    ordering = ("-window_start",)
    actions = ("unlock",)
    readonly_fields = ("username", "address", "window_start", "failures", "last_success")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description="Unlock: set the selected counters' failures to zero", permissions=["change"])
    def unlock(self, request: HttpRequest, queryset: QuerySet[LoginCounter]) -> None:
        count = queryset.filter(failures__gt=0).update(failures=0)
        self.message_user(request, f"{count} counter(s) unlocked.", messages.SUCCESS)
