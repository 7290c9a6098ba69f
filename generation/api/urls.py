"""The generation API's URLs (generation/api/views.py), under /api/."""

from django.urls import path

from generation.api import views

urlpatterns: list = [
    path("projects/<int:project_id>/generation-runs/", views.RunListApi.as_view(), name="api-generation-runs"),
    path(
        "projects/<int:project_id>/generation-runs/start/",
        views.RunStartApi.as_view(),
        name="api-generation-run-start",
    ),
    path("generation-runs/<int:run_id>/", views.RunDetailApi.as_view(), name="api-generation-run"),
    path("generation-runs/<int:run_id>/stop/", views.RunStopApi.as_view(), name="api-generation-run-stop"),
    path("projects/<int:project_id>/generation-policy/", views.PolicyApi.as_view(), name="api-generation-policy"),
    path(
        "projects/<int:project_id>/items/<int:item_id>/provenance/",
        views.ItemProvenanceApi.as_view(),
        name="api-item-provenance",
    ),
]
