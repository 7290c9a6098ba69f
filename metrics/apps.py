from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _heal_coverage_triggers(using: str, **_: object) -> None:
    """A migration that rebuilt a table on SQLite took its count triggers with it: recreate them, recount."""
    from django.db import connections

    from metrics import coverage_kept

    coverage_kept.heal(connections[using])


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

        post_migrate.connect(_heal_coverage_triggers, sender=self, dispatch_uid="metrics-coverage-triggers")
