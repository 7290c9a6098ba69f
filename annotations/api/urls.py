from django.urls import path

from annotations.api import (
    views_assignments,
    views_editor,
    views_evaluations,
    views_items,
    views_participants,
    views_projects,
    views_studies,
    views_users,
)

urlpatterns: list = [
    # The editor's endpoints (annotations/api/views_editor.py).
    path(
        "post-edits/<int:post_edit_id>/events/", views_editor.PostEditEventsApi.as_view(), name="api-post-edit-events"
    ),
    path("post-edits/<int:post_edit_id>/draft/", views_editor.PostEditDraftApi.as_view(), name="api-post-edit-draft"),
    path(
        "post-edits/<int:post_edit_id>/submit/", views_editor.PostEditSubmitApi.as_view(), name="api-post-edit-submit"
    ),
    path("post-edits/<int:post_edit_id>/skip/", views_editor.PostEditSkipApi.as_view(), name="api-post-edit-skip"),
    # The error-span task's endpoints (annotations/api/views_evaluations.py).
    path(
        "evaluations/<int:evaluation_id>/events/",
        views_evaluations.EvaluationEventsApi.as_view(),
        name="api-evaluation-events",
    ),
    path(
        "evaluations/<int:evaluation_id>/submit/",
        views_evaluations.EvaluationSubmitApi.as_view(),
        name="api-evaluation-submit",
    ),
    # Projects, items, batches, assignments, users (annotations/api/views_<resource>.py).
    path("projects/", views_projects.ProjectListApi.as_view(), name="api-projects"),
    path("projects/create/", views_projects.ProjectCreateApi.as_view(), name="api-project-create"),
    path("projects/<int:project_id>/", views_projects.ProjectDetailApi.as_view(), name="api-project"),
    path("projects/<int:project_id>/update/", views_projects.ProjectUpdateApi.as_view(), name="api-project-update"),
    path(
        "projects/<int:project_id>/progress/", views_projects.ProjectProgressApi.as_view(), name="api-project-progress"
    ),
    path("projects/<int:project_id>/copy/", views_projects.ProjectCopyApi.as_view(), name="api-project-copy"),
    path("projects/<int:project_id>/items/", views_items.ItemListApi.as_view(), name="api-items"),
    path("projects/<int:project_id>/items/create/", views_items.ItemBulkCreateApi.as_view(), name="api-items-create"),
    path("projects/<int:project_id>/batches/", views_assignments.BatchListApi.as_view(), name="api-batches"),
    path("projects/<int:project_id>/batches/make/", views_assignments.BatchMakeApi.as_view(), name="api-batches-make"),
    path("projects/<int:project_id>/assign/", views_assignments.BatchAssignApi.as_view(), name="api-batches-assign"),
    path("projects/<int:project_id>/design-plan/", views_studies.DesignPlanApi.as_view(), name="api-design-plan"),
    path("projects/<int:project_id>/design-assign/", views_studies.DesignAssignApi.as_view(), name="api-design-assign"),
    # Participation links and crowd participants (annotations/api/views_participants.py).
    path("projects/<int:project_id>/join-links/", views_participants.JoinLinkListApi.as_view(), name="api-join-links"),
    path(
        "projects/<int:project_id>/join-links/open/",
        views_participants.JoinLinkOpenApi.as_view(),
        name="api-join-link-open",
    ),
    path(
        "projects/<int:project_id>/join-links/<int:link_id>/revoke/",
        views_participants.JoinLinkRevokeApi.as_view(),
        name="api-join-link-revoke",
    ),
    path(
        "projects/<int:project_id>/participants/",
        views_participants.ParticipantListApi.as_view(),
        name="api-participants",
    ),
    path("assignments/", views_assignments.AssignmentListApi.as_view(), name="api-assignments"),
    path("assignments/withdraw/", views_assignments.AssignmentWithdrawApi.as_view(), name="api-assignments-withdraw"),
    path("assignments/reassign/", views_assignments.AssignmentReassignApi.as_view(), name="api-assignments-reassign"),
    path("assignments/<int:assignment_id>/", views_assignments.AssignmentDetailApi.as_view(), name="api-assignment"),
    path("users/", views_users.UserListApi.as_view(), name="api-users"),
    path("users/create/", views_users.UserAddApi.as_view(), name="api-user-create"),
    path("users/<int:user_id>/role/", views_users.UserRoleApi.as_view(), name="api-user-role"),
]
