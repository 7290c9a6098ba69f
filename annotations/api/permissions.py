"""Reusable DRF permission classes, one per rule of editlab's role model.

Combine them on an APIView: e.g. `[IsAuthenticated, ReadOnlyForResearchers]` on an
endpoint annotators may also use (their querysets are scoped with `visible_to`, so other
people's objects answer 404), or `[IsAdminRole]` on admin-only writes.

- admin: everything;
- researcher: reads everything, changes nothing (unsafe methods -> 403);
- annotator: only their own objects (scoping is the view's queryset, not a permission);
- anonymous: DEFAULT_PERMISSION_CLASSES (IsAuthenticated) answers 401/403.
"""

from rest_framework.permissions import SAFE_METHODS, BasePermission

from annotations.roles import can_read_all, is_admin, is_annotator, is_researcher


class IsAdminRole(BasePermission):
    """Admins only, whatever the method."""

    message = "Only admins may do this."

    def has_permission(self, request, view) -> bool:
        return is_admin(request.user)


class IsAdminOrResearcher(BasePermission):
    """Admins, and researchers for reading only: the "read everything" endpoints."""

    message = "Only admins and researchers may read this; researchers may not change anything."

    def has_permission(self, request, view) -> bool:
        if is_admin(request.user):
            return True
        return request.method in SAFE_METHODS and is_researcher(request.user)


class ReadOnlyForResearchers(BasePermission):
    """Refuses writes by researchers (who are not admins); lets everyone else through."""

    message = "Researchers have read-only access."

    def has_permission(self, request, view) -> bool:
        if request.method in SAFE_METHODS or is_admin(request.user):
            return True
        return not is_researcher(request.user)


class HasRole(BasePermission):
    """Any editlab role (admin, annotator, researcher): excludes accounts without a role."""

    message = "Your account has no editlab role; ask an admin to give you one."

    def has_permission(self, request, view) -> bool:
        user = request.user
        return can_read_all(user) or is_annotator(user)
