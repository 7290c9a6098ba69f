from django.urls import path

from annotations.views import copying, editor, evaluate, manage
from annotations.views import imports as import_views
from annotations.views import items as item_views
from annotations.views import participants as participant_views
from annotations.views import questionnaires as questionnaire_views
from annotations.views import replay as replay_views
from annotations.views import review as review_views
from annotations.views import users as user_views

urlpatterns: list = [
    # The annotator's pages (annotations/views/editor.py).
    path("annotate/", editor.annotator_home, name="annotator_home"),
    path("edit/<int:assignment_id>/", editor.editor, name="editor"),
    path("edit/<int:assignment_id>/diff/", editor.diff, name="editor_diff"),
    # The rater's error-span task (annotations/views/evaluate.py).
    path("evaluate/", evaluate.evaluation_list, name="evaluations"),
    path("evaluate/<int:evaluation_id>/", evaluate.evaluation_task, name="evaluation"),
    # Reviews (annotations/views/review.py): the queue, taking one (then the editor), its page and decision.
    path("review/", review_views.queue_page, name="review-queue"),
    path("review/take/<int:post_edit_id>/", review_views.take, name="review-take"),
    path("review/<int:assignment_id>/", review_views.review_page, name="review-page"),
    # Admin pages (annotations/views/manage.py); researchers read them, only admins post.
    path("manage/projects/", manage.project_list, name="manage-projects"),
    path("manage/projects/new/", manage.project_create, name="manage-project-create"),
    path("manage/projects/<int:project_id>/edit/", manage.project_edit, name="manage-project-edit"),
    path("manage/projects/<int:project_id>/batches/", manage.batches_page, name="manage-batches"),
    path("manage/projects/<int:project_id>/batches/make/", manage.batches_make, name="manage-batches-make"),
    path("manage/projects/<int:project_id>/batches/assign/", manage.batches_assign, name="manage-batches-assign"),
    path("manage/projects/<int:project_id>/assignments/move/", manage.assignments_move, name="manage-assignments-move"),
    path("manage/projects/<int:project_id>/design/", manage.design_page, name="manage-design"),
    path("manage/projects/<int:project_id>/design/apply/", manage.design_apply, name="manage-design-apply"),
    path("manage/projects/<int:project_id>/progress/", manage.progress_page, name="manage-progress"),
    path("manage/projects/<int:project_id>/copy/", copying.project_copy, name="manage-project-copy"),
    # The items browser and one item's page (annotations/views/items.py): admins and researchers read.
    path("manage/projects/<int:project_id>/items/", item_views.browser_page, name="manage-items"),
    path("manage/projects/<int:project_id>/items/<int:item_id>/", item_views.item_page, name="manage-item"),
    # Crowd participants (annotations/views/participants.py): the participation link, the completion
    # page, and the project's Participants page (admins open and revoke links; researchers read).
    path("join/<str:token>/", participant_views.join, name="join"),
    path("participant/done/", participant_views.participant_done, name="participant-done"),
    path(
        "manage/projects/<int:project_id>/participants/",
        participant_views.participation_page,
        name="manage-participation",
    ),
    path(
        "manage/projects/<int:project_id>/participants/open/",
        participant_views.participation_open,
        name="manage-participation-open",
    ),
    path(
        "manage/projects/<int:project_id>/participants/links/<int:link_id>/revoke/",
        participant_views.participation_revoke,
        name="manage-participation-revoke",
    ),
    path(  # a participant's log and texts erased on request: a confirm page, then the POST
        "manage/projects/<int:project_id>/participants/<int:participant_id>/erase/",
        participant_views.participant_erase,
        name="manage-participant-erase",
    ),
    # Crowd quality control (annotations/views/questionnaires.py, participants.py): consent and the
    # questionnaires around the items; the Participants page's settings and its export.
    path("study/<int:project_id>/<str:phase>/", questionnaire_views.study_form, name="study-form"),
    path(
        "manage/projects/<int:project_id>/participants/questionnaire/",
        participant_views.participation_questionnaire,
        name="manage-participation-questionnaire",
    ),
    path(
        "manage/projects/<int:project_id>/participants/attention/",
        participant_views.participation_attention,
        name="manage-participation-attention",
    ),
    path(
        "manage/projects/<int:project_id>/participants/export.csv",
        participant_views.participation_export,
        name="manage-participation-export",
    ),
    # Step-by-step replay of a post-edit's event log (annotations/views/replay.py).
    path("manage/post-edits/<int:post_edit_id>/replay/", replay_views.post_edit_replay, name="manage-post-edit-replay"),
    path(
        "manage/post-edits/<int:post_edit_id>/replay/graph.png",
        replay_views.post_edit_process_graph_png,
        name="manage-post-edit-process-graph",
    ),
    # Accounts and their roles, admins only (annotations/views/users.py).
    path("manage/users/", user_views.users_list, name="manage-users"),
    path("manage/users/add/", user_views.user_add_view, name="manage-users-add"),
    path("manage/users/<int:user_id>/role/", user_views.user_role_view, name="manage-user-role"),
    path("manage/users/<int:user_id>/active/", user_views.user_active_view, name="manage-user-active"),
    path("manage/users/<int:user_id>/password/", user_views.user_password_view, name="manage-user-password"),
    # Importing items and finished studies, admins only (annotations/views/imports.py).
    path("manage/import/", import_views.import_page, name="manage-import"),
    path("manage/import/mapping/", import_views.import_mapping, name="manage-import-mapping"),
]
