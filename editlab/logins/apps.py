from django.apps import AppConfig


class LoginsConfig(AppConfig):
    """The login limiter: counters of failed logins, shared by every login path."""

    name = "editlab.logins"
    label = "logins"
    default_auto_field = "django.db.models.BigAutoField"
    verbose_name = "Login limits"
