from django.urls import path

from annotations.views import copying, editor, manage
from annotations.views import imports as import_views
from annotations.views import participants as participant_views
from annotations.views import replay as replay_views

urlpatterns: list = [
    # The annotator's pages (annotations/views/editor.py).
    path("annotate/", editor.annotator_home, name="annotator_home"),
    path("edit/<int:assignment_id>/", editor.editor, name="editor"),
    path("edit/<int:assignment_id>/diff/", editor.diff, name="editor_diff"),
    # Admin pages (annotations/views/manage.py); researchers read them, only admins post.
    path("manage/projects/", manage.project_list, name="manage-projects"),
    path("manage/projects/new/", manage.project_create, name="manage-project-create"),
    path("manage/projects/<int:pk>/edit/", manage.project_edit, name="manage-project-edit"),
    path("manage/projects/<int:pk>/batches/", manage.batches_page, name="manage-batches"),
    path("manage/projects/<int:pk>/batches/make/", manage.batches_make, name="manage-batches-make"),
    path("manage/projects/<int:pk>/batches/assign/", manage.batches_assign, name="manage-batches-assign"),
    path("manage/projects/<int:pk>/assignments/move/", manage.assignments_move, name="manage-assignments-move"),
    path("manage/projects/<int:pk>/design/", manage.design_page, name="manage-design"),
    path("manage/projects/<int:pk>/design/apply/", manage.design_apply, name="manage-design-apply"),
    path("manage/projects/<int:pk>/progress/", manage.progress_page, name="manage-progress"),
    path("manage/projects/<int:pk>/copy/", copying.project_copy, name="manage-project-copy"),
    # Crowd participants (annotations/views/participants.py): the participation link, the completion
    # page, and the project's Participants page (admins open and revoke links; researchers read).
    path("join/<str:token>/", participant_views.join, name="join"),
    path("participant/done/", participant_views.participant_done, name="participant-done"),
    path("manage/projects/<int:pk>/participants/", participant_views.participation_page, name="manage-participation"),
    path(
        "manage/projects/<int:pk>/participants/open/",
        participant_views.participation_open,
        name="manage-participation-open",
    ),
    path(
        "manage/projects/<int:pk>/participants/links/<int:link_pk>/revoke/",
        participant_views.participation_revoke,
        name="manage-participation-revoke",
    ),
    path(  # a participant's log and texts erased on request: a confirm page, then the POST
        "manage/projects/<int:pk>/participants/<int:participant_pk>/erase/",
        participant_views.participant_erase,
        name="manage-participant-erase",
    ),
    # Step-by-step replay of a post-edit's event log (annotations/views/replay.py).
    path("manage/post-edits/<int:pk>/replay/", replay_views.post_edit_replay, name="manage-post-edit-replay"),
    # Importing items and finished studies, admins only (annotations/views/imports.py).
    path("manage/import/", import_views.import_page, name="manage-import"),
    path("manage/import/mapping/", import_views.import_mapping, name="manage-import-mapping"),
]
