"""Process measures from the keystroke log (pure; no Django): inter-key intervals, pauses by location,
P- and R-bursts, revisions, the product/process ratio and the S-notation. Definitions and their
sources: docs/process.md."""

from annotations.process.measures import (
    DEFAULT_PAUSE_THRESHOLDS_MS,
    MEASURES,
    THRESHOLD_MEASURES,
    MeasureNameError,
    PauseMeasures,
    ProcessMeasures,
    measure_name,
    measures_of_trace,
    parse_measure,
    pause_thresholds,
    process_measures,
)
from annotations.process.snotation import s_notation, s_notation_of_trace
from annotations.process.trace import LOCATIONS, Trace, trace_log

__all__ = [
    "DEFAULT_PAUSE_THRESHOLDS_MS",
    "LOCATIONS",
    "MEASURES",
    "THRESHOLD_MEASURES",
    "MeasureNameError",
    "PauseMeasures",
    "ProcessMeasures",
    "Trace",
    "measure_name",
    "measures_of_trace",
    "parse_measure",
    "pause_thresholds",
    "process_measures",
    "s_notation",
    "s_notation_of_trace",
    "trace_log",
]
