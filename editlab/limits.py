"""The ranges editlab's columns hold, checked at every entry point (query strings, API, forms, admin).

A number beyond its column's range is a database error (OverflowError on SQLite, "out of range" on
PostgreSQL): a 500 instead of a message. Every entry point checks numbers against these first and
answers 400 naming the field. Nothing here imports Django.
"""

import json

MAX_ID = 2**63 - 1  # BigAutoField: every primary key
MAX_SMALL = 32_767  # PositiveSmallIntegerField (a project's overlap)
MAX_INT = 2**31 - 1  # IntegerField (seqs, counts)
MIN_BIGINT, MAX_BIGINT = -(2**63), 2**63 - 1  # BigIntegerField (a generation run's seed)
# A project's idle threshold, in seconds: above zero, and a gap longer than a day is idle in any study.
# An absurd value (1e308) made every editor page of the project fail (the threshold in ms overflowed).
IDLE_THRESHOLD_MIN_S = 0.001
IDLE_THRESHOLD_MAX_S = 86_400.0
IDLE_THRESHOLD_DEFAULT_S = 30.0


def parse_id(text: str | None) -> int | None:
    """An object id from a query string or form: ASCII digits within 1..MAX_ID, else None.

    `str.isdigit` accepts "²" and other digits `int()` refuses, and `int()` accepts "１２" and
    "١٢" that no URL of editlab produces: both are no id here.
    """
    if not text or len(text) > 19 or not (text.isascii() and text.isdigit()):
        return None
    value = int(text)
    return value if 0 < value <= MAX_ID else None


def clamped_idle_threshold_s(value: float | None) -> float:
    """A stored threshold within the range, whatever was stored before the range was checked (NaN: the default)."""
    if value is None or value != value:  # NaN
        return IDLE_THRESHOLD_DEFAULT_S
    return min(max(value, IDLE_THRESHOLD_MIN_S), IDLE_THRESHOLD_MAX_S)


# A project's document context: N segments before and after the current one (more: the whole document).
CONTEXT_WINDOW_MIN = 1
CONTEXT_WINDOW_MAX = 50

# Agreement (metrics.agreement_report): TER and chrF between editors' post-edits cost ~1.5 ms a pair (both ways,
# TED sentences); a web request (the API) computes them over at most this many pairs. analyze has no bound.
AGREEMENT_SLOW_PAIRS_MAX = 20_000


# --------------------------------------------------------------------------- texts the editor edits

# A text the editor edits (an item's model output, each of its outputs, a post-edit) holds at most
# EDITLAB_TEXT_MAX_BYTES bytes, counted as the editor sends it: the text's JSON string in UTF-8 (a
# line break, tab, quote or backslash counts 2 bytes, another control character 6). Import refuses a
# longer text (file, line, field); draft and submit refuse one too. A text within the limit plus
# TEXT_ENVELOPE_BYTES (a request's page id, version, an event's other fields) fits an event batch
# (EDITLAB_EVENTS_MAX_BYTES) and a draft or submit body (DATA_UPLOAD_MAX_MEMORY_SIZE), so the `load`
# event, a full-text undo or redo, a draft and the submit of any text that imported are accepted.
TEXT_MAX_BYTES_DEFAULT = 256 * 1024
TEXT_ENVELOPE_BYTES = 4096
# Each code point takes at most 6 bytes in a JSON string (\u001f; an astral character is 4).
_JSON_BYTES_PER_CHAR_MAX = 6


def text_bytes(text: str) -> int:
    """The bytes `text` takes inside a JSON request body (UTF-8, escapes included, no quotes)."""
    return len(json.dumps(text, ensure_ascii=False).encode("utf-8", "surrogatepass")) - 2


def text_size_problem(text: str, *, limit: int) -> str | None:
    """Why the editor could not take `text` under a limit of `limit` bytes, or None."""
    if len(text) * _JSON_BYTES_PER_CHAR_MAX <= limit:
        return None  # within the limit whatever it holds, without encoding it
    size = len(text) if len(text) > limit else text_bytes(text)  # at least a byte per character
    if size <= limit:
        return None
    return (
        f"the text takes {size:,} bytes as the editor sends it; the editor takes at most {limit:,} "
        "(EDITLAB_TEXT_MAX_BYTES; UTF-8, a line break, tab or quote counting 2 bytes)"
    )


def text_limit_problem(text_max: int, *, events_max: int, body_max: int) -> str | None:
    """Why a text limit does not fit the request limits (so some text that imports could not be
    loaded, drafted or submitted), or None."""
    for name, limit in (("EDITLAB_EVENTS_MAX_BYTES", events_max), ("DATA_UPLOAD_MAX_MEMORY_SIZE", body_max)):
        if text_max + TEXT_ENVELOPE_BYTES > limit:
            return (
                f"EDITLAB_TEXT_MAX_BYTES ({text_max:,}) plus {TEXT_ENVELOPE_BYTES:,} bytes of request must fit "
                f"{name} ({limit:,}): lower the first or raise the second"
            )
    return None
