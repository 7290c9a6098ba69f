from django.apps import AppConfig


class AnnotationsConfig(AppConfig):
    name = "annotations"
    verbose_name = "Annotations"

    def ready(self) -> None:
        from annotations import admin_group

        admin_group.connect()
