"""IWSLT2019's five editors as one pandas frame: one row per post-edit, with `annotator` and `item`."""

import csv
from pathlib import Path

import pandas as pd


def iwslt_frame(shared_data: Path) -> pd.DataFrame:
    folder = shared_data / "iwslt2019"
    names = [name.strip("<>") for name in (folder / "header").read_text().strip().split("\t")]
    frames = []
    for annotator in range(5):
        frame = pd.read_csv(folder / f"ann{annotator}", sep="\t", header=None, names=names, quoting=csv.QUOTE_NONE)
        frames.append(frame.assign(annotator=f"ann{annotator}"))
    data = pd.concat(frames, ignore_index=True)
    data["item"] = data["file_name"] + ":" + data["line_in_file"].astype(str)
    return data
