"""python manage.py score INPUT --metrics all|NAME,NAME --output OUT [--variant plain|with_references]

Scores text pairs from a JSONL file without touching the database. Each input line is an object with
`id` (string or integer), `original`, `edited` (strings), optional `references` and `gold` (lists of strings).
OUT ends in .csv or .jsonl: `id`, then one column per metric; a metric that does not apply to a line (a
gold-based metric on a line without gold) is left empty (CSV) or null (JSONL).
"""

from __future__ import annotations

import csv
import json
import os
import sys
import tempfile
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from metrics.text import METRICS, VARIANTS, MetricFailed, MetricUnavailable, Pair, score_pairs

OUTPUT_FORMATS = (".csv", ".jsonl")


class InputError(ValueError):
    pass


def read_pairs(path: Path) -> tuple[list[str | int], list[Pair]]:
    """The ids and pairs of a JSONL file; an InputError names the first bad line and field."""
    ids: list[str | int] = []
    pairs: list[Pair] = []
    first_line_of: dict[str, int] = {}
    try:
        with path.open(encoding="utf-8") as lines:
            for number, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                record_id, pair = _parse_line(line, number)
                key = str(record_id)  # 7 and "7" are the same row in a CSV
                if key in first_line_of:
                    raise InputError(f"line {number}: field 'id': {record_id!r} repeats line {first_line_of[key]}")
                first_line_of[key] = number
                ids.append(record_id)
                pairs.append(pair)
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start} of the undecodable chunk)") from None
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    return ids, pairs


def _parse_line(line: str, number: int) -> tuple[str | int, Pair]:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(f"line {number}: invalid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(record, dict):
        raise InputError(f"line {number}: expected a JSON object, got {type(record).__name__}")
    for field in ("id", "original", "edited"):
        if field not in record:
            raise InputError(f"line {number}: missing field {field!r}")
    record_id = record["id"]
    if isinstance(record_id, bool) or not isinstance(record_id, (str, int)):
        raise InputError(f"line {number}: field 'id' must be a string or an integer")
    for field in ("original", "edited"):
        if not isinstance(record[field], str):
            raise InputError(f"line {number}: field {field!r} must be a string")
    lists = {}
    for field in ("references", "gold"):
        value = record.get(field, [])
        if value is None:
            value = []
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise InputError(f"line {number}: field {field!r} must be a list of strings")
        lists[field] = tuple(value)
    return record_id, Pair(record["original"], record["edited"], lists["references"], lists["gold"])


def choose_metrics(spec: str, pairs: list[Pair]) -> list[str]:
    """`all`: every available metric, the gold-based ones only if some line has gold. Else the named ones."""
    if spec.strip() == "all":
        any_gold = any(pair.gold for pair in pairs)
        return [
            name for name, metric in METRICS.items() if metric.available() and ("gold" not in metric.needs or any_gold)
        ]
    names = [name.strip() for name in spec.split(",") if name.strip()]
    if not names:
        raise CommandError("--metrics: give 'all' or metric names separated by commas")
    unknown = [name for name in names if name not in METRICS]
    if unknown:
        raise CommandError(f"--metrics: unknown metric(s) {', '.join(unknown)}; known: {', '.join(METRICS)}")
    for name in names:
        reason = METRICS[name].unavailable_reason()
        if reason:
            raise CommandError(reason)
    return list(dict.fromkeys(names))


def write_output(path: Path, ids: list[str | int], names: list[str], values: dict[str, list[float | None]]) -> None:
    """Write to a temporary file beside `path`, then rename: a failure leaves no partial file behind."""
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            if path.suffix == ".csv":
                writer = csv.writer(out)
                writer.writerow(["id", *names])
                for i, record_id in enumerate(ids):
                    writer.writerow([record_id, *("" if values[n][i] is None else repr(values[n][i]) for n in names)])
            else:
                for i, record_id in enumerate(ids):
                    row = {"id": record_id, **{n: values[n][i] for n in names}}
                    out.write(json.dumps(row, ensure_ascii=False) + "\n")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


class Command(BaseCommand):
    help = "Score text pairs from a JSONL file with the text metrics; write a CSV or JSONL table."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("input", type=Path, help="JSONL: one {id, original, edited[, references, gold]} per line.")
        parser.add_argument(
            "--metrics",
            required=True,
            help="'all' (every available metric; gold-based ones when some line has gold) or NAME,NAME.",
        )
        parser.add_argument("--output", required=True, type=Path, help="Result file, .csv or .jsonl.")
        parser.add_argument("--variant", choices=VARIANTS, default="plain", help="plain (default) or with_references.")
        parser.add_argument("--workers", type=int, default=None, help="Processes (default: EDITLAB_METRIC_WORKERS).")

    def handle(self, *args, input: Path, output: Path, **options) -> None:
        input, output = Path(input), Path(output)  # call_command passes options unconverted
        if output.suffix not in OUTPUT_FORMATS:
            raise CommandError(f"--output: {output} must end in .csv or .jsonl")
        if not output.parent.is_dir():
            raise CommandError(f"--output: folder {output.parent} does not exist")
        if options["workers"] is not None and options["workers"] < 1:
            raise CommandError("--workers must be at least 1")
        if not input.is_file():
            raise CommandError(f"{input}: no such file")
        try:
            ids, pairs = read_pairs(input)
        except InputError as exc:
            raise CommandError(f"{input}: {exc}; nothing written") from None
        names = choose_metrics(options["metrics"], pairs)
        bar = tqdm(total=len(pairs) * len(names), unit="value", disable=not sys.stderr.isatty(), file=sys.stderr)
        try:
            values = score_pairs(
                pairs, names, variant=options["variant"], workers=options["workers"], progress=bar.update
            )
        except MetricFailed as exc:
            record_id = ids[exc.pair_index]
            raise CommandError(
                f"{exc.metric} failed on the pair with id {record_id!r}: {exc.detail}; nothing written"
            ) from None
        except (ValueError, MetricUnavailable) as exc:
            raise CommandError(f"{exc}; nothing written") from None
        finally:
            bar.close()
        try:
            write_output(output, ids, names, values)
        except OSError as exc:
            raise CommandError(f"cannot write {output}: {exc.strerror or exc}") from None
        self.stdout.write(f"scored {len(pairs)} pairs with {', '.join(names)} -> {output}")
