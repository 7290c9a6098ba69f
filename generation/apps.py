from django.apps import AppConfig


class GenerationConfig(AppConfig):
    name = "generation"
    verbose_name = "Generation"

    def ready(self) -> None:
        # Registers how generation runs are enqueued (generation.jobs.use_queue).
        from generation import tasks  # noqa: F401
