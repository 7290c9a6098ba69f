from django.urls import path

from annotations.api import views_editor

urlpatterns: list = [
    # The editor's endpoints (annotations/api/views_editor.py).
    path("post-edits/<int:pk>/events/", views_editor.PostEditEventsView.as_view(), name="api-post-edit-events"),
    path("post-edits/<int:pk>/draft/", views_editor.PostEditDraftView.as_view(), name="api-post-edit-draft"),
    path("post-edits/<int:pk>/submit/", views_editor.PostEditSubmitView.as_view(), name="api-post-edit-submit"),
    path("post-edits/<int:pk>/skip/", views_editor.PostEditSkipView.as_view(), name="api-post-edit-skip"),
]
