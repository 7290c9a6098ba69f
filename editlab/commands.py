"""What editlab's data commands share: the system checks they run.

A command that imports, scores, analyses or exports a study serves no page, yet Django's default
checks load the URL configuration, and through it every view and the analysis and plotting
libraries behind them (scikit-learn, statsmodels, scipy, matplotlib, nltk): a quarter of a GB in
every such process before its first row (measured in editlab/benchmarks/results/scale.md). These
commands run every tagged check but the URL configuration's; `manage.py check`, `migrate` and the
web server still check the URLs.

A refusal (editlab.refusals) a data command's code raises is its error: the message, no traceback.
"""

from typing import Any

from django.core import checks
from django.core.management.base import BaseCommand, CommandError

from editlab.refusals import Refusal


class DataCommand(BaseCommand):
    def check(
        self,
        app_configs: Any = None,
        tags: Any = None,
        display_num_errors: bool = False,
        include_deployment_checks: bool = False,
        fail_level: int = checks.ERROR,
        databases: Any = None,
    ) -> None:
        if not tags:
            tags = sorted(set(checks.registry.registry.tags_available()) - {checks.Tags.urls})
        super().check(app_configs, tags, display_num_errors, include_deployment_checks, fail_level, databases)

    def execute(self, *args: Any, **options: Any) -> Any:
        try:
            return super().execute(*args, **options)
        except Refusal as exc:
            raise CommandError(str(exc)) from None
