"""Mixed models: editlab's inference against lme4 + lmerTest, and the CPU cost of Satterthwaite's df.

    python -m editlab.benchmarks.mixed_models [--skip-r] [--output FILE]

1. Inference: per model, the Wald (normal) p editlab reported before, editlab's p and df now, and
   lmerTest's p and df (Rscript on tests/metrics/r/lmer_fit.R, the same rows): the 17-edit pilot with
   2 editors (tests/metrics/data/pilot_2_editors.csv; a singular fit), the same pilot with the second
   editor 20 s slower per edit, and the whole IWSLT2019 study (../shared/data/iwslt2019, 5,235 edits,
   the published HTER as the metric).
2. CPU of the df: the IWSLT2019 report's 16 crossed fits (8 metric columns x 2 targets, 5 annotators x
   1,047 items): the whole fit and the df part (metrics.analysis.mixed.satterthwaite) per fit.
3. CPU of the df on 100,000 synthetic edits (60 annotators, 20,000 items edited 5 times, 3 conditions):
   the metric model and the condition model.
One BLAS thread, process CPU time. Numbers go to --output between markers (re-runs replace them).
"""

import argparse
import csv
import os
import platform
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from editlab.benchmarks.support import IWSLT2019, result_file, write_section
from metrics.analysis.conditions import analyze_conditions, condition_model
from metrics.analysis.mixed import fit_model, mixed_model, satterthwaite, standardise

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "metrics" / "r" / "lmer_fit.R"
PILOT = ROOT / "tests" / "metrics" / "data" / "pilot_2_editors.csv"
CONDITIONS = ["mt-a", "mt-b", "ht"]
METRICS = ["HTER", "HBLEU", "HMETEOR", "TER", "BLEU", "METEOR", "DA", "mlen"]
START, END = "<!-- benchmark:mixed-models:start -->", "<!-- benchmark:mixed-models:end -->"


def iwslt() -> pd.DataFrame:
    names = [name.strip("<>") for name in (IWSLT2019 / "header").read_text().strip().split("\t")]
    frames = [
        pd.read_csv(IWSLT2019 / f"ann{a}", sep="\t", header=None, names=names, quoting=csv.QUOTE_NONE).assign(
            annotator=f"ann{a}"
        )
        for a in range(5)
    ]
    data = pd.concat(frames, ignore_index=True)
    data["item"] = data["file_name"] + ":" + data["line_in_file"].astype(str)
    return data


def lmer(frame: pd.DataFrame, formula: str, baseline: str | None = None) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as folder:
        data, out = Path(folder) / "data.csv", Path(folder) / "out.csv"
        frame.to_csv(data, index=False)
        environment = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
        command = ["Rscript", str(SCRIPT), str(data), formula, str(out), *([baseline] if baseline else [])]
        subprocess.run(command, check=True, capture_output=True, env=environment)
        with out.open() as handle:
            return {r["key"]: float(r["value"]) for r in csv.DictReader(handle) if not r["key"].startswith("message")}


def pilot(slower: float = 0.0) -> pd.DataFrame:
    frame = pd.read_csv(PILOT, dtype={"wall_ms": float})
    frame["wall_ms"] += 1000.0 * slower * (frame["annotator"] == "e2")
    return frame


def inference_rows(with_r: bool) -> list[str]:
    rows = []
    for label, frame in (
        ("pilot, 2 editors (singular fit)", pilot()),
        ("pilot, second editor 20 s slower", pilot(20)),
    ):
        model = analyze_conditions(frame, target="wall_ms", declared=CONDITIONS).model
        assert model is not None
        r = (
            lmer(
                frame.rename(columns={"external_id": "item"}),
                "wall_ms ~ condition + (1 | annotator) + (1 | item)",
                "mt-a",
            )
            if with_r
            else {}
        )
        ht = next(e for e in model.effects if e.condition == "ht")
        rows.append(
            _row(f"{label}: `ht` vs `mt-a`", ht.wald_p, ht.p, ht.df, r.get("p[conditionht]"), r.get("df[conditionht]"))
        )
        rows.append(
            _row(
                f"{label}: intercept",
                None,
                model.intercept_p,
                model.intercept_df,
                r.get("p[(Intercept)]"),
                r.get("df[(Intercept)]"),
            )
        )
    data = iwslt()
    for target, y, formula in (
        (
            "keystrokes",
            data["keystrokes"].to_numpy(float),
            "scale(keystrokes) ~ scale(HTER) + (1 | annotator) + (1 | item)",
        ),
        (
            "log(time)",
            np.log(data["time"].to_numpy(float)),
            "scale(log(time)) ~ scale(HTER) + (1 | annotator) + (1 | item)",
        ),
    ):
        metric = mixed_model(
            data["HTER"].to_numpy(float),
            y,
            {"annotator": data["annotator"].to_numpy(), "item": data["item"].to_numpy()},
        )
        r = lmer(data[["annotator", "item", "HTER", "keystrokes", "time"]], formula) if with_r else {}
        label = f"IWSLT2019, z({target}) ~ z(HTER) + (1 \\| annotator) + (1 \\| item), 5,235 edits"
        rows.append(_row(label, metric.wald_p, metric.p, metric.df, r.get("p[scale(HTER)]"), r.get("df[scale(HTER)]")))
    return rows


def _row(label, wald, p, df, r_p, r_df) -> str:
    def g(value, digits=2):
        return "–" if value is None else f"{value:.{digits}g}" if value != 0 else "0 (below the smallest double)"

    def d(value):
        return "–" if value is None else f"{value:.3f}"

    return f"| {label} | {g(wald)} | {g(p, 3)} | {d(df)} | {g(r_p, 3)} | {d(r_df)} |"


def cpu(fn):
    start = time.process_time()
    result = fn()
    return time.process_time() - start, result


def df_cost(x, y, factors, design=None) -> tuple[float, float]:
    """(CPU of the whole fit, CPU of the df part) for one model."""
    if design is None:
        design = np.column_stack([np.ones(x.size), standardise(x)])
        y = standardise(y)
    total, fit = cpu(lambda: fit_model(design, y, factors))
    sigma = fit.variances["residual"] ** 0.5
    ratios = {name: fit.variances[name] / fit.variances["residual"] for name in factors}
    part, _ = cpu(lambda: satterthwaite(design, y, factors, ratios, sigma))
    return total, part


def iwslt_costs() -> tuple[float, float, int]:
    data = iwslt()
    factors = {"annotator": pd.factorize(data["annotator"])[0], "item": pd.factorize(data["item"])[0]}
    total = part = 0.0
    for target in ("time", "keystrokes"):
        for metric in METRICS:
            fit_cpu, df_cpu = df_cost(data[metric].to_numpy(float), data[target].to_numpy(float), factors)
            total, part = total + fit_cpu, part + df_cpu
    return total, part, 2 * len(METRICS)


def synthetic(rows: int = 100_000, annotators: int = 60, items: int = 20_000, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    item = np.repeat(np.arange(items), rows // items)
    who = (item + np.tile(np.arange(rows // items), items) * 7) % annotators
    condition = np.array(CONDITIONS)[(item + who) % 3]
    x = rng.normal(size=rows)
    y = 0.5 * x + rng.normal(0, 0.7, annotators)[who] + rng.normal(0, 0.5, items)[item] + rng.normal(size=rows)
    y += np.where(condition == "ht", 1.0, 0.0)
    factors = {"annotator": who, "item": item}
    metric_total, metric_df = df_cost(x, y, factors)
    design = np.column_stack([np.ones(rows), condition == "mt-b", condition == "ht"]).astype(float)
    condition_total, condition_df = df_cost(None, y, factors, design=design)
    check, _ = cpu(lambda: condition_model(y, condition, factors, baseline="mt-a", order=CONDITIONS))
    return {"metric": (metric_total, metric_df), "condition": (condition_total, condition_df), "condition_model": check}


def run(with_r: bool) -> str:
    load_before = os.getloadavg()[0]
    with threadpool_limits(limits=1, user_api="blas"):
        table = inference_rows(with_r)
        total, part, fits = iwslt_costs()
        big = synthetic()
    load_after = os.getloadavg()[0]
    r_version = ""
    if with_r:
        r_version = subprocess.run(
            [
                "Rscript",
                "-e",
                'cat(R.version.string, "lme4", format(packageVersion("lme4")), "lmerTest", format(packageVersion("lmerTest")), "performance", format(packageVersion("performance")))',
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    lines = [
        f"Measured with `python -m editlab.benchmarks.mixed_models` on {platform.machine()} with {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, one BLAS thread, load average {load_before:.1f} before and "
        f"{load_after:.1f} after{'; R: ' + r_version if r_version else ''}.",
        "",
        "**Inference.** editlab's p before (Wald z), its p and Satterthwaite df now, lmerTest's on the same rows "
        "(`tests/metrics/r/lmer_fit.R`: lme4's fit finished by Newton steps, then lmerTest's summary):",
        "",
        "| model | editlab p before (Wald z) | editlab p (t, Satterthwaite) | editlab df | lmerTest p | lmerTest df |",
        "|---|---:|---:|---:|---:|---:|",
        *table,
        "",
        f"**CPU of the df, IWSLT2019 report** (both targets, {fits} crossed fits of 5,235 edits, 5 annotators x 1,047 "
        f"items): the fits {total:.3f} s in all, of which Satterthwaite's df {part:.3f} s "
        f"({1000 * part / fits:.1f} ms per fit, {100 * part / total:.0f} % of the fit).",
        "",
        "**CPU of the df, 100,000 synthetic edits** (60 annotators, 20,000 items edited 5 times, 3 conditions): "
        f"metric model {big['metric'][0]:.2f} s, of which the df {big['metric'][1]:.2f} s; condition model "
        f"{big['condition'][0]:.2f} s, of which the df {big['condition'][1]:.2f} s "
        f"(`condition_model` end to end {big['condition_model']:.2f} s).",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--skip-r", action="store_true", help="no lmerTest columns (R not installed)")
    parser.add_argument("--output", type=Path, default=result_file("mixed_models"))
    options = parser.parse_args()
    with_r = not options.skip_r
    if with_r and shutil.which("Rscript") is None:
        parser.error("Rscript is missing: run editlab/scripts/install test, or pass --skip-r")
    body = run(with_r)
    write_section(options.output, START, END, body)
    print(body)


if __name__ == "__main__":
    main()
