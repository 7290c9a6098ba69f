"""python manage.py score INPUT --metrics all|NAME,NAME [--output OUT] [--corpus [--corpus-output FILE]]
    [--variant plain|with_references] [--processes N]

Scores text pairs from a JSONL file without touching the database. Each input line is an object with
`id` (string or integer), `original`, `edited` (strings), optional `references` and `gold` (lists of strings).
OUT ends in .csv or .jsonl: `id`, then one column per metric; a metric that does not apply to a line (a
gold-based metric on a line without gold) is left empty (CSV) or null (JSONL).

--corpus: for each gold-based metric, over the lines with gold edits, the mean of editlab's per-line values
and EditEval's corpus figure (`editeval`, computed as EditEval's code computes it: the figure to compare with
published EditEval results), printed as a table; --corpus-output also writes it (.json or .csv).
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

from editlab.refusals import Refusal
from metrics.text import METRICS, VARIANTS, MetricFailed, MetricUnavailable, Pair, score_pairs
from metrics.text.editeval import Example, GoldFigure, gold_figures

OUTPUT_FORMATS = (".csv", ".jsonl")
CORPUS_FORMATS = (".json", ".csv")


class InputError(Refusal, ValueError):
    """A bad input file; the message names the file, line and field."""


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
    except RecursionError:
        raise InputError(f"line {number}: JSON nested too deeply") from None
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
        _refuse_surrogates(record[field], number, field)
    if isinstance(record_id, str):
        _refuse_surrogates(record_id, number, "id")
    lists = {}
    for field in ("references", "gold"):
        value = record.get(field, [])
        if value is None:
            value = []
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise InputError(f"line {number}: field {field!r} must be a list of strings")
        for item in value:
            _refuse_surrogates(item, number, field)
        lists[field] = tuple(value)
    return record_id, Pair(record["original"], record["edited"], lists["references"], lists["gold"])


def _refuse_surrogates(text: str, number: int, field: str) -> None:
    """JSON may escape a lone UTF-16 surrogate (\\ud800); it is no character, and no UTF-8 file can hold it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(
            f"line {number}: field {field!r} holds an unpaired surrogate ({text[exc.start]!r}), which is not text"
        ) from None


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


def _write_atomically(path: Path, write) -> None:
    """Write to a temporary file beside `path`, then rename: a failure leaves no partial file behind."""
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            write(out)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def write_output(path: Path, ids: list[str | int], names: list[str], values: dict[str, list[float | None]]) -> None:
    def write(out) -> None:
        if path.suffix == ".csv":
            writer = csv.writer(out)
            writer.writerow(["id", *names])
            for i, record_id in enumerate(ids):
                writer.writerow([record_id, *("" if values[n][i] is None else repr(values[n][i]) for n in names)])
        else:
            for i, record_id in enumerate(ids):
                row = {"id": record_id, **{n: values[n][i] for n in names}}
                out.write(json.dumps(row, ensure_ascii=False) + "\n")

    _write_atomically(path, write)


def corpus_table(pairs: list[Pair], names: list[str], values: dict[str, list[float | None]]) -> list[GoldFigure]:
    """The gold-based metrics among `names`, over the pairs with gold edits: editlab's mean and EditEval's figure."""
    gold_names = [n for n in names if "gold" in METRICS[n].needs]
    if not gold_names:
        raise CommandError(
            "--corpus: none of the chosen metrics is gold-based; choose from "
            + ", ".join(n for n, m in METRICS.items() if "gold" in m.needs)
        )
    with_gold = [i for i, pair in enumerate(pairs) if pair.gold]
    if not with_gold:
        raise CommandError("--corpus: no line has gold edits (field 'gold'); nothing to score")
    examples = [Example(pairs[i].original, pairs[i].edited, pairs[i].gold) for i in with_gold]
    per_line = {n: [values[n][i] for i in with_gold] for n in gold_names}
    return gold_figures(examples, per_line)


# EditEval's scale for each figure (SARI on 0-100, the others on 0-1), and how many times larger editlab's
# per-line values are (its iBLEU is sacrebleu's sentence BLEU on 0-100).
EDITEVAL_SCALE = {"sari": "0-100"}
PER_LINE_FACTOR = {"ibleu": 100.0}


def corpus_row(figure: GoldFigure) -> dict[str, object]:
    """The figure's columns, then `scale` (EditEval's) and `mean_on_scale`: the mean on that scale
    (`mean` itself stays on the per-line values' own scale)."""
    factor = PER_LINE_FACTOR.get(figure.metric, 1.0)
    return {
        **figure.to_dict(),
        "scale": EDITEVAL_SCALE.get(figure.metric, "0-1"),
        "per_line_scale": "0-100" if factor == 100.0 else EDITEVAL_SCALE.get(figure.metric, "0-1"),
        "mean_on_scale": None if figure.mean is None else figure.mean / factor,
    }


CORPUS_COLUMNS = (*GoldFigure.COLUMNS, "scale", "per_line_scale", "mean_on_scale")


def write_corpus(path: Path, figures: list[GoldFigure], left_out: int) -> None:
    def write(out) -> None:
        if path.suffix == ".csv":
            writer = csv.writer(out)
            writer.writerow(CORPUS_COLUMNS)
            for figure in figures:
                writer.writerow(["" if v is None else v for v in corpus_row(figure).values()])
        else:
            rows = [corpus_row(f) for f in figures]
            out.write(json.dumps({"lines_without_gold": left_out, "metrics": rows}) + "\n")

    _write_atomically(path, write)


def format_corpus(figures: list[GoldFigure], left_out: int) -> str:
    """One scale per row: editlab's mean is shown on EditEval's scale (the `scale` column)."""
    lines = [f"{'metric':<14}{'n':>7}{'mean (editlab)':>17}{'editeval':>12}  scale"]
    rescaled = []
    for f in figures:
        row = corpus_row(f)
        mean = "-" if row["mean_on_scale"] is None else f"{row['mean_on_scale']:.4f}"
        editeval = "-" if f.editeval is None else f"{f.editeval:.4f}"
        lines.append(f"{f.metric:<14}{f.n:>7}{mean:>17}{editeval:>12}  {row['scale']}")
        if row["per_line_scale"] != row["scale"]:
            rescaled.append(f.metric)
    if rescaled:
        lines.append(
            f"{', '.join(rescaled)}: editlab's per-line values are on 0-100 (sacrebleu); their mean is shown divided "
            "by 100 (the written table keeps `mean` on 0-100 and gives `mean_on_scale`)"
        )
    for f in figures:
        if f.editeval_undefined:
            lines.append(f"no editeval figure for {f.metric}: {f.editeval_undefined}")
    if left_out:
        lines.append(f"{left_out} line(s) without gold edits left out")
    lines.append(
        "editeval: the corpus figure as EditEval's code computes it; cite it beside published EditEval results"
    )
    return "\n".join(lines)


class Command(BaseCommand):
    help = "Score text pairs from a JSONL file with the text metrics; write a CSV or JSONL table."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("input", type=Path, help="JSONL: one {id, original, edited[, references, gold]} per line.")
        parser.add_argument(
            "--metrics",
            required=True,
            help="'all' (every available metric; gold-based ones when some line has gold) or NAME,NAME.",
        )
        parser.add_argument("--output", type=Path, help="Result file, .csv or .jsonl (optional with --corpus).")
        parser.add_argument(
            "--corpus",
            action="store_true",
            help="Also print, per gold-based metric, the mean of the per-line values and EditEval's corpus figure.",
        )
        parser.add_argument("--corpus-output", type=Path, help="With --corpus: write that table too (.json or .csv).")
        parser.add_argument("--variant", choices=VARIANTS, default="plain", help="plain (default) or with_references.")
        parser.add_argument(
            "--processes",
            "--workers",
            dest="processes",
            type=int,
            default=None,
            help="Scoring processes (default: EDITLAB_METRIC_PROCESSES); --workers is its older name.",
        )

    def handle(self, *args, input: Path, output: Path | None, **options) -> None:
        input = Path(input)  # call_command passes options unconverted
        corpus, corpus_output = options["corpus"], options["corpus_output"]
        if output is None and not corpus:
            raise CommandError("give --output, --corpus, or both")
        if corpus_output is not None and not corpus:
            raise CommandError("--corpus-output needs --corpus")
        if output is not None:
            output = Path(output)
            _check_output("--output", output, OUTPUT_FORMATS)
        if corpus_output is not None:
            corpus_output = Path(corpus_output)
            _check_output("--corpus-output", corpus_output, CORPUS_FORMATS)
        if options["processes"] is not None and options["processes"] < 1:
            raise CommandError("--processes must be at least 1")
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
                pairs, names, variant=options["variant"], processes=options["processes"], progress=bar.update
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
        figures = corpus_table(pairs, names, values) if corpus else []
        left_out = sum(1 for pair in pairs if not pair.gold)
        for path, write in (
            (output, lambda p: write_output(p, ids, names, values)),
            (corpus_output, lambda p: write_corpus(p, figures, left_out)),
        ):
            if path is None:
                continue
            try:
                write(path)
            except OSError as exc:
                raise CommandError(f"cannot write {path}: {exc.strerror or exc}") from None
        self.stdout.write(f"scored {len(pairs)} pairs with {', '.join(names)}" + (f" -> {output}" if output else ""))
        if corpus:
            self.stdout.write(format_corpus(figures, left_out))


def _check_output(option: str, path: Path, formats: tuple[str, ...]) -> None:
    if path.suffix not in formats:
        raise CommandError(f"{option}: {path} must end in {' or '.join(formats)}")
    if not path.parent.is_dir():
        raise CommandError(f"{option}: folder {path.parent} does not exist")
