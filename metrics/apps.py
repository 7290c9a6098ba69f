from django.apps import AppConfig


class MetricsConfig(AppConfig):
    name = "metrics"
    verbose_name = "Metrics"

    def ready(self) -> None:
        from django.conf import settings

        from metrics.text import configure

        # metrics.text is pure (no Django); it learns the settings here.
        configure(
            cache_dir=settings.EDITLAB_CACHE_DIR,
            bertscore_model=settings.EDITLAB_BERTSCORE_MODEL,
            bertscore_layers=settings.EDITLAB_BERTSCORE_LAYERS,
            processes=settings.EDITLAB_METRIC_PROCESSES,
        )
        # Registers how metric jobs are enqueued (metrics.jobs.use_queue).
        from metrics import tasks  # noqa: F401
