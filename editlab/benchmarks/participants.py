"""What a crowd participant's Start costs: the whole request (the address's count, the slot under the
project's lock, the account, its queue, the login) on a Latin-square study.

    python -m editlab.benchmarks.participants [--documents 60] [--segments 10] [--conditions 3]
                                              [--participants 30] [--database-url URL]

Runs against a throwaway database (SQLite in a temporary folder unless --database-url names an
empty PostgreSQL database), never the project's own. Each participant Starts from an address of its
own through Django's test client (no network, no browser); prints the median and best wall time and
the median CPU time of a Start, and of the welcome page (GET), which reads the design but writes
nothing.
"""

import argparse
from functools import partial

from editlab.benchmarks.support import print_run, timed, timing_line


def run(*, documents: int, segments: int, conditions: int, participants: int) -> list[str]:
    from django.test import Client

    from annotations.models import Assignment, Item, Project
    from annotations.services.join_links import join_link_open
    from annotations.services.projects import project_create

    project = project_create(name="participants benchmark")
    names = [f"c{k}" for k in range(conditions)]
    project.conditions = [{"name": name, "output": "sysA", "highlights": False} for name in names]
    project.design = Project.DESIGN_LATIN_SQUARE
    project.save(update_fields=["conditions", "design"])
    Item.objects.bulk_create(
        [
            Item(
                project=project,
                external_id=f"d{d}-s{s}",
                model_output="text",
                outputs={"sysA": "output"},
                document=f"doc{d}",
                document_position=s,
                position=d * segments + s,
            )
            for d in range(documents)
            for s in range(segments)
        ]
        + [Item(project=project, external_id="practice", model_output="text", practice=True, position=10**6)],
        batch_size=2000,
    )
    link = join_link_open(project=project, completion_code="C")
    path = link.path()
    starts, pages = [], []
    for n in range(participants):
        client = Client(REMOTE_ADDR=f"10.{n // 250}.{n % 250}.1")
        query = f"?PROLIFIC_PID=bench{n}&STUDY_ID=s&SESSION_ID=x{n}"
        wall, cpu, response = timed(partial(client.get, path + query))
        assert response.status_code == 200, response.status_code
        pages.append((wall, cpu))
        wall, cpu, response = timed(partial(client.post, path + query))
        assert response.status_code == 302, response.status_code
        starts.append((wall, cpu))
    queue = documents * segments + 1
    assert Assignment.objects.count() == participants * queue

    return [
        timing_line(f"Start ({queue} assignments each, {participants} participants)", starts),
        timing_line("welcome page (GET)", pages),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=60)
    parser.add_argument("--segments", type=int, default=10)
    parser.add_argument("--conditions", type=int, default=3)
    parser.add_argument("--participants", type=int, default=30)
    parser.add_argument("--database-url", help="an empty PostgreSQL database (default: temporary SQLite)")
    args = parser.parse_args()
    print_run(
        args.database_url,
        run,
        documents=args.documents,
        segments=args.segments,
        conditions=args.conditions,
        participants=args.participants,
    )


if __name__ == "__main__":
    main()
