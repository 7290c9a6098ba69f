"""The API's permission classes, one per rule of editlab's role model, each named after what it allows.

Every API view (annotations and metrics) takes its gate from here, after IsAuthenticated (anonymous
-> 403). Which objects a permitted user sees is the view's queryset, not a permission: annotators'
querysets are scoped with `visible_to`, so other people's objects answer 404.

- IsAdmin: admins, any method (admin-only writes and the user list);
- AdminWritesResearcherReads: admins any method, researchers reading only (writes -> 403);
- AdminOrResearcher: admins and researchers, any method (metric values: computing derived,
  recomputable data is the researcher's part of the workflow);
- AdminOrResearcherAsks: admins and researchers, any method, for a question sent as a POST body because
  it is too long for a URL and that writes nothing (the Latin-square plan);
- HasRole: any editlab role (annotators read their own work; accounts without a role -> 403);
- AnnotatorsWriteOwnWork: the editor's writes; admins and researchers read edits elsewhere and
  get 403 (whose post-edit it is, is the view's queryset: another annotator's -> 404).
"""

from rest_framework.permissions import SAFE_METHODS, BasePermission

from annotations.roles import can_read_all, is_admin, is_annotator, is_researcher


class IsAdmin(BasePermission):
    message = "Only admins may do this."

    def has_permission(self, request, view) -> bool:
        return is_admin(request.user)


class AdminWritesResearcherReads(BasePermission):
    message = "Only admins and researchers may read this; researchers may not change anything."

    def has_permission(self, request, view) -> bool:
        if is_admin(request.user):
            return True
        return request.method in SAFE_METHODS and is_researcher(request.user)


class AdminOrResearcher(BasePermission):
    message = "Only researchers and admins may use the metric-values API."

    def has_permission(self, request, view) -> bool:
        return can_read_all(request.user)


class AdminOrResearcherAsks(BasePermission):
    message = "Only admins and researchers may ask for this."

    def has_permission(self, request, view) -> bool:
        return can_read_all(request.user)


class HasRole(BasePermission):
    message = "Your account has no editlab role; ask an admin to give you one."

    def has_permission(self, request, view) -> bool:
        user = request.user
        return can_read_all(user) or is_annotator(user)


class AnnotatorsWriteOwnWork(BasePermission):
    message = "Researchers and admins cannot write post-edits; only their annotator can."

    def has_permission(self, request, view) -> bool:
        # Reading is no write: a GET answers 405 (these endpoints only take POST) for everyone.
        return request.method in SAFE_METHODS or not can_read_all(request.user)
