"""A small analysed project for the report page, the analyze command and the analysis API tests."""

import numpy as np

from metrics.models import MetricValue
from tests.factories import ItemFactory, MetricValueFactory, ProjectFactory, SubmittedPostEditFactory

METRICS = ("compression", "levenshtein", "bleu")


def build_study(*, annotators, n_per_annotator: int = 15, name: str = "study", seed: int = 3):
    """Submitted post-edits whose keystrokes and time follow a hidden amount of change.

    compression tracks the change closely, levenshtein loosely, bleu (a similarity) falls
    with it; the with_references variant has compression only.
    """
    rng = np.random.default_rng(seed)
    project = ProjectFactory(name=name)
    post_edits = []
    for annotator in annotators:
        for i in range(n_per_annotator):
            change = float(rng.gamma(2.0, 5.0))
            item = ItemFactory(project=project, task_type="mt" if i % 3 else "qa", model_output="x" * (20 + i))
            post_edit = SubmittedPostEditFactory(
                assignment__item=item,
                assignment__annotator=annotator,
                text="y" * (20 + i + int(change)),
                keystrokes=int(round(change * 2 + rng.normal(0, 1))),
                wall_ms=int(4000 + 900 * change + rng.normal(0, 500)),
                active_ms=int(3000 + 800 * change),
                allkeys=int(round(change * 2.5)),
            )
            values = {
                "compression": change + rng.normal(0, 0.5),
                "levenshtein": change + rng.normal(0, 4),
                "bleu": 1 - change / 40 + rng.normal(0, 0.05),
            }
            for metric, value in values.items():
                MetricValueFactory(post_edit=post_edit, metric=metric, value=value)
            MetricValueFactory(
                post_edit=post_edit,
                metric="compression",
                variant=MetricValue.WITH_REFERENCES,
                value=change + rng.normal(0, 2),
            )
            post_edits.append(post_edit)
    return project, post_edits


def build_shared_study(*, annotators, n_items: int = 40, name: str = "shared", seed: int = 5):
    """Every item post-edited by every annotator. The keystrokes carry an item effect that
    compression hardly sees, and compression is nearly equal for all edits of an item: a
    random CV finds an edit's sibling and looks better than a CV grouped by item."""
    rng = np.random.default_rng(seed)
    project = ProjectFactory(name=name)
    post_edits = []
    for i in range(n_items):
        change, quirk = float(rng.gamma(2.0, 5.0)), float(rng.normal(0, 8))
        # ids item-0 ... item-N, whatever the factory sequence stands at: item-10 sorts before item-2
        item = ItemFactory(project=project, external_id=f"item-{i}", model_output="x" * (20 + i))
        for who, annotator in enumerate(annotators):
            post_edit = SubmittedPostEditFactory(
                assignment__item=item,
                assignment__annotator=annotator,
                text="y" * (20 + i + int(change)),
                keystrokes=int(round(2 * change + quirk + rng.normal(0, 1) + 2 * who)),
                wall_ms=int(4000 + 900 * change + 300 * quirk + rng.normal(0, 500)),
                active_ms=int(3000 + 800 * change),
                allkeys=int(round(change * 2.5)),
            )
            MetricValueFactory(post_edit=post_edit, metric="compression", value=change + rng.normal(0, 0.05))
            MetricValueFactory(post_edit=post_edit, metric="levenshtein", value=change + rng.normal(0, 4))
            post_edits.append(post_edit)
    return project, post_edits
