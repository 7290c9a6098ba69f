"""Speed of the admin services on a large project: cut, assign with overlap, progress.

    python -m editlab.benchmarks.assignment [--items 20000] [--size 50] [--annotators 10] [--overlap 3]
                                            [--database-url URL]

Runs against a throwaway database (SQLite in a temporary folder unless --database-url
names an empty PostgreSQL database), never the project's own, and prints one line per
step: batch_make (seeded shuffle), batch_assign, the re-run (must create nothing) and
project_progress, plus the spread of the annotators' loads.
"""

import argparse
import tempfile
import time
from pathlib import Path

from editlab.benchmarks.support import setup_django


def run(*, items: int, size: int, annotators: int, overlap: int) -> list[tuple[str, float]]:
    from django.contrib.auth import get_user_model

    from annotations.models import Item
    from annotations.roles import set_role
    from annotations.selectors_progress import project_progress
    from annotations.services.assignment import batch_assign
    from annotations.services.batches import batch_make
    from annotations.services.projects import project_create

    users = []
    for k in range(annotators):
        user = get_user_model().objects.create(username=f"bench-annotator-{k}")
        set_role(user, "annotator")
        users.append(user)
    project = project_create(name="assignment benchmark")
    Item.objects.bulk_create(
        (Item(project=project, external_id=str(k), model_output="text", position=k) for k in range(items)),
        batch_size=2000,
    )
    timings: list[tuple[str, float]] = []

    def timed(label: str, fn):
        start = time.perf_counter()
        result = fn()
        timings.append((label, time.perf_counter() - start))
        return result

    batches = timed(
        f"batch_make: {items} items into batches of {size} (seeded shuffle)",
        lambda: batch_make(project=project, size=size, shuffle_seed=1),
    )
    result = timed(
        f"batch_assign: {len(batches)} batches x overlap {overlap} over {annotators} annotators",
        lambda: batch_assign(project=project, annotators=users, overlap=overlap),
    )
    again = timed(
        "batch_assign re-run (creates nothing)",
        lambda: batch_assign(project=project, annotators=users, overlap=overlap),
    )
    assert again.created == 0
    timed(f"project_progress over {result.created} assignments", lambda: project_progress(project=project))
    loads = sorted(result.per_annotator.values())
    print(f"assignments created: {result.created}; loads min {loads[0]}, max {loads[-1]} (batch size {size})")
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=20000)
    parser.add_argument("--size", type=int, default=50)
    parser.add_argument("--annotators", type=int, default=10)
    parser.add_argument("--overlap", type=int, default=3)
    parser.add_argument("--database-url", help="an empty PostgreSQL database (default: temporary SQLite)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        setup_django(args.database_url, Path(folder))
        timings = run(items=args.items, size=args.size, annotators=args.annotators, overlap=args.overlap)
    for label, seconds in timings:
        print(f"{seconds:8.2f} s  {label}")


if __name__ == "__main__":
    main()
