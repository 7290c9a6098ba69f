"""`analyze --agreement` on the published IWSLT2019 study (five editors, the same 1,047 segments), imported as
the end-to-end test imports it: alpha on keystrokes equals the krippendorff package's on the published files,
and the output distances' figures equal a computation written here from the same files."""

import io
import json

import krippendorff
import numpy as np
import pytest
from django.core.management import call_command

from annotations.importers import import_items
from metrics.text import METRICS
from tests.metrics.iwslt_frame import iwslt_frame

pytestmark = [pytest.mark.slow, pytest.mark.django_db]


@pytest.fixture
def study(shared_data):
    import_items(project="IWSLT2019", fmt="pet", path=shared_data / "iwslt2019", create_project=True)


def test_agreement_on_iwslt2019(study, shared_data):
    out = io.StringIO()
    call_command(
        "analyze", "--project", "IWSLT2019", "--agreement", "--target", "keystrokes", "--distances",
        "compression", "--format", "json", stdout=out,
    )  # fmt: skip
    data = json.loads(out.getvalue())
    assert (data["post_edits"], data["items"], len(data["annotators"])) == (5235, 1047, 5)
    frame = iwslt_frame(shared_data)
    matrix = frame.pivot_table(index="annotator", columns="item", values="keystrokes", aggfunc="first")
    theirs = krippendorff.alpha(reliability_data=matrix.to_numpy(float), level_of_measurement="interval")
    assert data["effort"]["alpha"]["alpha"] == pytest.approx(theirs, abs=1e-10)
    assert data["effort"]["icc"]["items"] == 1047 and data["effort"]["icc"]["dropped"] == 0

    # The editors' post-edits from the published files, every pair of one segment both ways.
    f = METRICS["compression"].func
    column = "PE"
    by_item = frame.groupby("item")
    per_editor: dict[str, list[float]] = {}
    everything = []
    for _, group in by_item:
        rows = list(zip(group["annotator"], group[column].fillna(""), strict=True))
        for a in range(len(rows)):
            for b in range(a + 1, len(rows)):
                d = (f(rows[a][1], rows[b][1]) + f(rows[b][1], rows[a][1])) / 2
                everything.append(d)
                per_editor.setdefault(rows[a][0], []).append(d)
                per_editor.setdefault(rows[b][0], []).append(d)
    (compression,) = data["output"]
    assert compression["pairs"] == 1047 * 10 == len(everything)
    assert compression["mean"] == pytest.approx(np.mean(everything), abs=1e-9)
    for editor in compression["editors"]:
        assert editor["mean"] == pytest.approx(np.mean(per_editor[editor["editor"]]), abs=1e-9)
    assert compression["flagged"] == []  # the five professional editors: none stands out (max modified z 0.93)
    print(
        "IWSLT2019 agreement: alpha(keystrokes)", round(theirs, 6),
        {row["type"]: round(row["value"], 4) for row in data["effort"]["icc"]["rows"]},
        "compression mean", round(compression["mean"], 4),
        {e["editor"]: (round(e["mean"], 3), round(e["modified_z"], 2), e["flagged"]) for e in compression["editors"]},
    )  # fmt: skip
