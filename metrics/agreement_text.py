"""The agreement (metrics.agreement_report) as the analyze command's plain-text tables."""

from __future__ import annotations


def _num(value, places: int = 4) -> str:
    return "-" if value is None else f"{value:.{places}f}"


def agreement_table(agreement: dict) -> str:
    effort = agreement["effort"]
    selection = agreement["selection"]
    alpha = effort["alpha"]
    lines = [
        f"Project {selection['project']} · agreement on {effort['column']} · {agreement['post_edits']} post-edits of "
        f"{agreement['items']} items done by two or more annotators · annotators: "
        f"{', '.join(agreement['annotators']) or 'none'}",
        "",
        f"Krippendorff's alpha (interval) on {effort['column']}: {_num(alpha['alpha'])} "
        f"({alpha['pairable']} pairable values in {alpha['units']} items; D_o {_num(alpha['observed'], 6)}, "
        f"D_e {_num(alpha['expected'], 6)})",
        f"  {agreement['definitions']['alpha']}",
        f"  reproduce: {agreement['definitions']['alpha_reproduce']}",
    ]
    oneway = effort["icc_oneway"]
    lines += ["", f"ICC(1), one-way, unequal group sizes: {_num(oneway['value'])} ({oneway['ratings']} values in "
              f"{oneway['items']} items, n0 {_num(oneway['n0'], 3)}, F {_num(oneway['f'], 3)}, p {_num(oneway['p'])})",
              f"  {agreement['definitions']['icc_oneway']}"]  # fmt: skip
    icc = effort["icc"]
    if icc is not None:
        lines += ["", f"ICC on {effort['column']} ({icc['items']} complete items x {icc['raters']} annotators, "
                  f"{icc['dropped']} dropped)"]  # fmt: skip
        lines.append(f"  {'type':<10} {'value':>8} {'95% CI':>20} {'F':>10} {'p':>10}")
        for row in icc["rows"]:
            low, high = row["ci95"]
            ci = f"[{_num(low, 3)}, {_num(high, 3)}]"
            lines.append(f"  {row['type']:<10} {_num(row['value']):>8} {ci:>20} {_num(row['f'], 3):>10} "
                         f"{_num(row['p'], 4):>10}")  # fmt: skip
        lines.append(f"  {agreement['definitions']['icc']}")
        lines.append(f"  reproduce: {agreement['definitions']['icc_reproduce']}")
    for out in agreement["output"]:
        lines += ["", f"Output distance {out['metric']} ({out['direction']}): mean {_num(out['mean'])} over "
                  f"{out['pairs']} pairs in {out['items']} items"]  # fmt: skip
        lines.append(f"  {'annotator':<20} {'pairs':>7} {'mean':>10} {'z':>8} {'modified z':>11}  flagged")
        for editor in out["editors"]:
            lines.append(
                f"  {editor['editor'][:20]:<20} {editor['pairs']:>7} {_num(editor['mean']):>10} "
                f"{_num(editor['z'], 2):>8} {_num(editor['modified_z'], 2):>11}  {'yes' if editor['flagged'] else ''}"
            )
    if agreement["output"]:
        lines += ["", f"  {agreement['definitions']['output']}", f"  {agreement['definitions']['flag']}"]
    if agreement["messages"]:
        lines += ["", "Messages:", *(f"  - {message}" for message in agreement["messages"])]
    return "\n".join(lines)
