"""The synthetic-edit analysis as plain-text tables, for `analyze --scenarios --format table`."""

from metrics.analysis import format_p
from metrics.analysis.scenarios import ScenarioAnalysis, comparison_rows
from metrics.report_text import align, interval, num


def scenarios_table(analysis: ScenarioAnalysis, *, variant: str) -> str:
    s = analysis.settings
    lines = [
        f"Synthetic edits by scenario (compression distance, variant {variant}), against {analysis.reference!r}:",
        "",
    ]
    rows = [["scenario", "n", "length mean", "length median", "distance mean", "distance median", "distance sd"]]
    table = comparison_rows(analysis)
    for row in table:
        rows.append(
            [
                row["scenario"],
                str(row["n"]),
                num(row["length_mean"], 1),
                num(row["length_median"], 1),
                num(row["distance_mean"], 1),
                num(row["distance_median"], 1),
                num(row["distance_sd"], 1),
            ]
        )
    lines.append(align(rows))
    if analysis.comparisons:
        lines += [
            "",
            f"Each scenario (y) against {analysis.reference} (x), paired by item: OLS line with {s.confidence:g} CIs; "
            f"difference = scenario - {analysis.reference}, percentile bootstrap CI ({s.resamples} resamples, "
            f"seed {s.seed}); Wilcoxon signed-rank, one-sided (scenario < {analysis.reference}):",
            "",
        ]
        paired = [
            [
                "scenario",
                "pairs",
                "slope",
                "slope CI",
                "intercept",
                "R²",
                "below x=y",
                "difference",
                "CI",
                "p",
                "edits less",
            ]
        ]
        for row in table:
            if row["pairs"] is None:
                continue
            ordered = "-" if row["ordered"] is None else "yes" if row["ordered"] else "no"
            paired.append(
                [
                    row["scenario"],
                    str(row["pairs"]),
                    num(row["slope"]),
                    interval(row["slope_low"], row["slope_high"]),
                    num(row["intercept"], 2),
                    num(row["r2"]),
                    num(row["below_identity"], 2),
                    num(row["mean_difference"], 2),
                    interval(row["difference_low"], row["difference_high"]),
                    format_p(row["wilcoxon_p"]),
                    ordered,
                ]
            )
        lines.append(align(paired))
    if analysis.human:
        lines += ["", f"Each scenario's distance against the items' mean human {analysis.human_target}:", ""]
        human = [["scenario", "items", "pearson r", "p", "spearman rho"]]
        for h in analysis.human:
            c = h.correlation
            human.append([h.scenario, str(c.n), num(c.pearson), format_p(c.pearson_p), num(c.spearman)])
        lines.append(align(human))
    messages = analysis.messages + [f"{c.scenario}: {m}" for c in analysis.comparisons for m in c.messages]
    if messages:
        lines += ["", "Messages:"] + [f"  - {message}" for message in messages]
    return "\n".join(lines)
