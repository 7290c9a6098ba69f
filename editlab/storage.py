from django.contrib.staticfiles.storage import HashedFilesMixin
from whitenoise.storage import CompressedManifestStaticFilesStorage


class StaticFilesStorage(CompressedManifestStaticFilesStorage):
    """collectstatic's storage in production: content-hashed names (cached for a year by whitenoise)
    and gzip copies.

    The editor's ES modules import each other by relative path; those imports are rewritten to the
    hashed names too, so a browser never mixes a new module with a cached old one. Only our own
    modules: Django's rewriting fails on third-party files whose imports name files that are not
    shipped (django-htmx's extensions)."""

    patterns = (
        *HashedFilesMixin.patterns,
        ("annotations/*.js", HashedFilesMixin._js_module_import_aggregation_patterns[1]),
    )
