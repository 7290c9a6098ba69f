"""The Generation page's URLs (generation/views.py)."""

from django.urls import path

from generation import views

urlpatterns: list = [
    path("manage/projects/<int:project_id>/generation/", views.generation_page, name="generation-page"),
    path(
        "manage/projects/<int:project_id>/generation/runs/<int:run_id>/stop/",
        views.run_stop,
        name="generation-run-stop",
    ),
    path("manage/projects/<int:project_id>/generation/policy/", views.policy_set, name="generation-policy"),
]
