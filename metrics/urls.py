from django.urls import path

from metrics.views import exports, jobs, quality, report, report_plots, reviews

urlpatterns: list = [
    # Metric values, jobs and exports (metrics/views/jobs.py, exports.py): researchers and admins.
    path("research/metrics/", jobs.project_list, name="metrics-projects"),
    path("research/<int:project_id>/metrics/", jobs.project_metrics, name="metrics-project"),
    path("research/<int:project_id>/metrics/compute/", jobs.compute, name="metrics-compute"),
    path("research/<int:project_id>/metrics/jobs/<int:job_id>/", jobs.job_page, name="metrics-job"),
    path("research/<int:project_id>/metrics/jobs/<int:job_id>/retry/", jobs.job_retry, name="metrics-job-retry"),
    path("research/<int:project_id>/metrics/export/", exports.export_download, name="metrics-export"),
    # The review summary (metrics/views/reviews.py): researchers and admins.
    path("research/<int:project_id>/reviews/", reviews.review_summary_page, name="metrics-reviews"),
    # Analysis reports (metrics/views/report.py): researchers and admins.
    path("research/reports/", report.report_projects, name="metrics-reports"),
    path("research/<int:project_id>/report/", report.report_page, name="metrics-report"),
    path("research/<int:project_id>/report/analysis.<slug:fmt>", report.report_data, name="metrics-report-data"),
    path(
        "research/<int:project_id>/report/documents.<slug:fmt>",
        report.report_documents,
        name="metrics-report-documents",
    ),
    path(
        "research/<int:project_id>/report/agreement.<slug:fmt>",
        report.report_agreement,
        name="metrics-report-agreement",
    ),
    path(
        "research/<int:project_id>/report/plots/<slug:kind>.<slug:fmt>",
        report_plots.report_plot,
        name="metrics-report-plot",
    ),
    # MQM and ESA evaluations (metrics/views/quality.py): researchers and admins.
    path("research/<int:project_id>/quality/", quality.quality_page, name="metrics-quality"),
    path(
        "research/<int:project_id>/quality/<slug:kind>.tsv", quality.quality_download, name="metrics-quality-download"
    ),
]
