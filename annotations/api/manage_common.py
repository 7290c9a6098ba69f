"""What the management API's modules share: who reads an answer (admins and researchers see a
study's design, annotators and participants only what their own work needs), the tags and the
documented refusals.

The management API is views_projects, views_items, views_assignments (batches and assignments),
views_studies and views_users, each with its serializers_<resource>.py. One view per operation;
explicit input/output serializers; the services do the work (a service's refusal, ServiceError, is
a 400 in the API's error shape: editlab/errors.py). Permissions (annotations/api/permissions.py):
admins everything; researchers read everything and change nothing (403); annotators read their own
assignments and the projects they work in (anything else 404, or 403 for admin-only lists);
anonymous 403.
"""

from rest_framework import generics, serializers
from rest_framework.request import Request

from annotations.roles import can_read_all
from editlab.errors import error_responses

TAG_PROJECTS = ["projects"]
TAG_ASSIGNMENTS = ["assignments"]
TAG_USERS = ["users"]

E400 = error_responses(400)
E403 = error_responses(403)
E404 = error_responses(404)

DESIGN_HIDDEN = " Null for annotators and participants."


def shows_design(serializer: serializers.Serializer) -> bool:
    """Whether the answer goes to an admin or a researcher (context "reader"): annotators and crowd
    participants are told only what their own work needs, never the design behind it (fails closed)."""
    return bool(serializer.context.get("reader", False))


def reading(request: Request) -> dict:
    """The serializers' context: admins and researchers see a study's design, annotators only their work."""
    return {"reader": can_read_all(request.user), "request": request}


class ReaderContextMixin(generics.GenericAPIView):
    def get_serializer_context(self) -> dict:
        return {**super().get_serializer_context(), **reading(self.request)}
