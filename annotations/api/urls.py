from django.urls import path

from annotations.api import views_editor, views_manage, views_participants

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
    # Projects, items, batches, assignments, users (annotations/api/views_manage.py).
    path("projects/", views_manage.ProjectListApi.as_view(), name="api-projects"),
    path("projects/create/", views_manage.ProjectCreateApi.as_view(), name="api-project-create"),
    path("projects/<int:pk>/", views_manage.ProjectDetailApi.as_view(), name="api-project"),
    path("projects/<int:pk>/update/", views_manage.ProjectUpdateApi.as_view(), name="api-project-update"),
    path("projects/<int:pk>/progress/", views_manage.ProjectProgressApi.as_view(), name="api-project-progress"),
    path("projects/<int:pk>/copy/", views_manage.ProjectCopyApi.as_view(), name="api-project-copy"),
    path("projects/<int:pk>/items/", views_manage.ItemListApi.as_view(), name="api-items"),
    path("projects/<int:pk>/items/create/", views_manage.ItemBulkCreateApi.as_view(), name="api-items-create"),
    path("projects/<int:pk>/batches/", views_manage.BatchListApi.as_view(), name="api-batches"),
    path("projects/<int:pk>/batches/make/", views_manage.BatchMakeApi.as_view(), name="api-batches-make"),
    path("projects/<int:pk>/assign/", views_manage.BatchAssignApi.as_view(), name="api-batches-assign"),
    path("projects/<int:pk>/design-plan/", views_manage.DesignPlanApi.as_view(), name="api-design-plan"),
    path("projects/<int:pk>/design-assign/", views_manage.DesignAssignApi.as_view(), name="api-design-assign"),
    # Participation links and crowd participants (annotations/api/views_participants.py).
    path("projects/<int:pk>/join-links/", views_participants.JoinLinkListApi.as_view(), name="api-join-links"),
    path("projects/<int:pk>/join-links/open/", views_participants.JoinLinkOpenApi.as_view(), name="api-join-link-open"),
    path(
        "projects/<int:pk>/join-links/<int:link_pk>/revoke/",
        views_participants.JoinLinkRevokeApi.as_view(),
        name="api-join-link-revoke",
    ),
    path("projects/<int:pk>/participants/", views_participants.ParticipantListApi.as_view(), name="api-participants"),
    path("assignments/", views_manage.AssignmentListApi.as_view(), name="api-assignments"),
    path("assignments/withdraw/", views_manage.AssignmentWithdrawApi.as_view(), name="api-assignments-withdraw"),
    path("assignments/reassign/", views_manage.AssignmentReassignApi.as_view(), name="api-assignments-reassign"),
    path("assignments/<int:pk>/", views_manage.AssignmentDetailApi.as_view(), name="api-assignment"),
    path("users/", views_manage.UserListApi.as_view(), name="api-users"),
    path("users/create/", views_manage.UserAddApi.as_view(), name="api-user-create"),
    path("users/<int:pk>/role/", views_manage.UserRoleApi.as_view(), name="api-user-role"),
]
