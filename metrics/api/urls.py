from django.urls import path

from metrics.api import views_agreement, views_analysis, views_events, views_gold, views_quality, views_values

urlpatterns: list = [
    # Stored metric values, compute jobs, exports (metrics/api/views_values.py).
    path("metric-values/", views_values.MetricValueListApi.as_view(), name="api-metric-values"),
    path(
        "projects/<int:project_id>/metric-jobs/create/",
        views_values.MetricJobCreateApi.as_view(),
        name="api-metric-job-create",
    ),
    path("metric-jobs/<int:job_id>/", views_values.MetricJobDetailApi.as_view(), name="api-metric-job"),
    path("metric-jobs/<int:job_id>/retry/", views_values.MetricJobRetryApi.as_view(), name="api-metric-job-retry"),
    path("projects/<int:project_id>/export/", views_values.ProjectExportApi.as_view(), name="api-project-export"),
    path(
        "projects/<int:project_id>/events/export/",
        views_events.ProjectEventExportApi.as_view(),
        name="api-project-events",
    ),
    # Analysis results (metrics/api/views_analysis.py).
    path(
        "projects/<int:project_id>/analysis/", views_analysis.ProjectAnalysisApi.as_view(), name="api-project-analysis"
    ),
    path(
        "projects/<int:project_id>/agreement/",
        views_agreement.ProjectAgreementApi.as_view(),
        name="api-project-agreement",
    ),
    # MQM/ESA scores of the project's evaluations (metrics/api/views_quality.py).
    path("projects/<int:project_id>/mqm/", views_quality.ProjectMqmApi.as_view(), name="api-project-mqm"),
    # Gold-based metrics, editlab's means and EditEval's figures (metrics/api/views_gold.py).
    path("projects/<int:project_id>/gold/", views_gold.ProjectGoldApi.as_view(), name="api-project-gold"),
]
