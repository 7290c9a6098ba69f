"""The ranges editlab's columns hold, checked at every entry point (query strings, API, forms, admin).

A number beyond its column's range is a database error (OverflowError on SQLite, "out of range" on
PostgreSQL): a 500 instead of a message. Every entry point checks numbers against these first and
answers 400 naming the field. Nothing here imports Django.
"""

MAX_ID = 2**63 - 1  # BigAutoField: every primary key
MAX_SMALL = 32_767  # PositiveSmallIntegerField (a project's overlap)
MAX_INT = 2**31 - 1  # IntegerField (seqs, counts)
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
