from django.contrib.staticfiles.storage import HashedFilesMixin
from whitenoise.compress import Compressor
from whitenoise.storage import CompressedManifestStaticFilesStorage


class StaticFilesStorage(CompressedManifestStaticFilesStorage):
    """collectstatic's storage in production: content-hashed names (cached for a year by whitenoise)
    and gzip copies. gzip only: whitenoise adds Brotli whenever some package has pulled the brotli
    module in, and Brotli at its highest quality was most of collectstatic's time (minutes on the
    shared 2-core machine) for a few percent fewer bytes. Source maps are not compressed: only
    developer tools fetch them.

    The editor's ES modules import each other by relative path; those imports are rewritten to the
    hashed names too, so a browser never mixes a new module with a cached old one. Only our own
    modules: Django's rewriting fails on third-party files whose imports name files that are not
    shipped (django-htmx's extensions)."""

    patterns = (
        *HashedFilesMixin.patterns,
        # Django's own patterns for ES module imports (private, hence absent from django-stubs): reused, not copied.
        ("annotations/*.js", HashedFilesMixin._js_module_import_aggregation_patterns[1]),  # type: ignore[attr-defined]
    )

    def create_compressor(self, **kwargs) -> Compressor:
        if kwargs.get("extensions") is None:  # WHITENOISE_SKIP_COMPRESS_EXTENSIONS unset
            kwargs["extensions"] = (*Compressor.SKIP_COMPRESS_EXTENSIONS, "map")
        return Compressor(use_brotli=False, **kwargs)
