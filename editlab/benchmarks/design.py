"""What the Latin-square design page and API cost: the plan (shown before anything is written) and
its application, as an admin's requests through Django's test client.

    python -m editlab.benchmarks.design [--annotators 60] [--documents 60] [--segments 10]
                                        [--conditions 3] [--repeat 5] [--database-url URL]

Runs against a throwaway database (SQLite in a temporary folder unless --database-url names an
empty PostgreSQL database), never the project's own. Prints the median and best wall time and the
median CPU time of the plan page (GET, full page), the plan API (GET design-plan), and the single
wall/CPU time of applying it (POST design-assign, every assignment written).
"""

import argparse
from urllib.parse import urlencode

from editlab.benchmarks.support import print_run, timed, timing_line


def run(*, annotators: int, documents: int, segments: int, conditions: int, repeat: int) -> list[str]:
    from django.test import Client
    from django.urls import reverse

    from annotations.models import Assignment, Item
    from annotations.roles import ADMIN, ANNOTATOR
    from annotations.services.projects import project_create
    from annotations.services.users import user_add

    names = [f"c{k}" for k in range(conditions)]
    project = project_create(name="design benchmark")
    project.conditions = [{"name": name, "output": None, "highlights": False} for name in names]
    project.save(update_fields=["conditions"])
    Item.objects.bulk_create(
        [
            Item(
                project=project,
                external_id=f"d{d}-s{s}",
                model_output="text",
                document=f"doc{d:03d}",
                document_position=s,
                position=d * segments + s,
            )
            for d in range(documents)
            for s in range(segments)
        ],
        batch_size=2000,
    )
    password = "bench-Kq8!zP2#-password"
    people = [user_add(username=f"ann{k:03d}", role=ANNOTATOR, password=password)[0] for k in range(annotators)]
    admin, _ = user_add(username="bench-admin", role=ADMIN, password=password)
    client = Client()
    client.force_login(admin)
    page = reverse("manage-design", args=[project.pk])
    page += "?" + urlencode({"annotators": [p.pk for p in people], "conditions": names}, doseq=True)
    api = reverse("api-design-plan", args=[project.pk])
    api += "?" + urlencode({"annotators": ",".join(p.username for p in people), "conditions": ",".join(names)})

    def many(url: str) -> list[tuple[float, float]]:
        rows = []
        for _ in range(repeat):
            wall, cpu, response = timed(lambda: client.get(url))
            assert response.status_code == 200, response.status_code
            rows.append((wall, cpu))
        return rows

    pages, plans = many(page), many(api)
    digest = client.get(api).json()["plan_digest"]
    body = {"annotators": [p.username for p in people], "conditions": names, "plan_digest": digest}
    wall, cpu, response = timed(
        lambda: client.post(reverse("api-design-assign", args=[project.pk]), body, content_type="application/json")
    )
    assert response.status_code == 201, response.content[:300]
    created = response.json()["created"]
    assert created == Assignment.objects.count() == annotators * documents * segments

    size = f"{annotators} annotators x {documents} documents x {segments} segments x {conditions} conditions"
    return [
        size,
        timing_line("plan page (GET, full page)", pages),
        timing_line("plan API (GET design-plan)", plans),
        f"apply (POST design-assign, {created:,} assignments): {wall * 1000:.0f} ms, CPU {cpu * 1000:.0f} ms",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--annotators", type=int, default=60)
    parser.add_argument("--documents", type=int, default=60)
    parser.add_argument("--segments", type=int, default=10)
    parser.add_argument("--conditions", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--database-url", help="an empty PostgreSQL database (default: temporary SQLite)")
    args = parser.parse_args()
    print_run(
        args.database_url,
        run,
        annotators=args.annotators,
        documents=args.documents,
        segments=args.segments,
        conditions=args.conditions,
        repeat=args.repeat,
    )


if __name__ == "__main__":
    main()
