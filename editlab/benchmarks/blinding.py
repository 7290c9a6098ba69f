"""Designed studies stay blind: the attacks of issue 18 section 3 replayed against the code as it is.

    python -m editlab.benchmarks.blinding --database-url URL [--annotators 300] [--documents 100]
                                          [--segments 10] [--rounds 5] [--gunicorn]

Against an empty PostgreSQL database (required: the lock wait is PostgreSQL's). Prints:
- a crowd participant's Start (POST /join/<token>/) alone, and back to back while a researcher's
  Latin-square preview of `--annotators` x `--documents` x `--segments` runs in another process
  (`--rounds` previews; each Start a new participant): wall time per Start, and how long PostgreSQL
  saw a backend wait for a lock meanwhile;
- what a participant under the empty-editor condition reads of the machine output in
  /api/assignments/, on the diff page before opening the item and in the document context after a
  sibling was reassigned away; what a reassigned Latin-square assignment keeps; whether a plan
  confirmed after its conditions were redefined is applied; what /api/projects/<id>/ tells the
  participant of the lab's annotators;
- with --gunicorn: the status gunicorn answers for the Design page and the plan API with 300 ticked
  annotators / 500 names, by GET (a query) and by POST (a body).
"""

import argparse
import http.cookiejar
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from editlab.benchmarks.support import free_port, production_settings, setup_django, wait_for_login_page

PASSWORD = "bench-Kq8!zP2#-password"
CONDITIONS: list[dict[str, Any]] = [
    {"name": "a", "output": "sysA", "highlights": False},
    {"name": "b", "output": "sysB", "highlights": True},
    {"name": "ht", "output": None, "highlights": False},
]


def many_annotators(prefix: str, n: int) -> list:
    """`n` annotator accounts at once (no password: hashing hundreds would be the measurement)."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from annotations.roles import ANNOTATOR

    User = get_user_model()
    users = [User(username=f"{prefix}{k:03d}") for k in range(n)]
    for user in users:
        user.set_unusable_password()
    User.objects.bulk_create(users)
    users = list(User.objects.filter(username__in=[u.username for u in users]).order_by("username"))
    group = Group.objects.get_or_create(name=ANNOTATOR)[0]
    User.groups.through.objects.bulk_create([User.groups.through(user_id=u.pk, group_id=group.pk) for u in users])
    return users


def build(*, annotators: int, documents: int, segments: int):
    from annotations.models import Item, Project
    from annotations.roles import ADMIN, ANNOTATOR, RESEARCHER
    from annotations.services.join_links import join_link_open
    from annotations.services.projects import project_create
    from annotations.services.studies import study_assign_latin_square
    from annotations.services.users import user_add

    project = project_create(name="blinding benchmark")
    Project.objects.filter(pk=project.pk).update(conditions=CONDITIONS, context=Project.CONTEXT_DOCUMENT)
    project.refresh_from_db()
    Item.objects.bulk_create(
        [
            Item(
                project=project,
                external_id=f"d{d}-s{s}",
                model_output=f"MACHINE OUTPUT d{d}-s{s}",
                outputs={"sysA": f"SYSTEM A d{d}-s{s}", "sysB": f"SYSTEM B d{d}-s{s}"},
                document=f"doc{d:03d}",
                document_position=s,
                position=d * segments + s,
            )
            for d in range(documents)
            for s in range(segments)
        ],
        batch_size=2000,
    )
    lab = [user_add(username=f"lab{k}", role=ANNOTATOR, password=PASSWORD)[0] for k in range(3)]
    study_assign_latin_square(project=project, annotators=lab, conditions=["a", "b", "ht"], apply=True)
    crowd = many_annotators("ann", annotators)
    researcher, _ = user_add(username="bench-researcher", role=RESEARCHER, password=PASSWORD)
    admin, _ = user_add(username="bench-admin", role=ADMIN, password=PASSWORD)
    link = join_link_open(project=project, completion_code="BENCH")
    return project, lab, crowd, researcher, admin, link


def _preview(project_pk: int, researcher_pk: int, query: str, took) -> None:
    """A researcher's plan page, in a process of its own (forked: the Start does not share its CPU lock)."""
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.urls import reverse

    client = Client()
    client.force_login(get_user_model().objects.get(pk=researcher_pk))
    began = time.perf_counter()
    response = client.get(reverse("manage-design", args=[project_pk]) + query)
    took.value = time.perf_counter() - began if response.status_code == 200 else -1.0


def start_latency(project, crowd, researcher, link, rounds: int) -> list[str]:
    """A participant's Start alone and during a preview (another process, its own connection), and
    how long PostgreSQL saw a backend of this database wait for a lock meanwhile (pg_stat_activity,
    polled every 5 ms from a third connection)."""
    import multiprocessing

    import psycopg
    from django.db import connection, connections
    from django.test import Client
    from django.urls import reverse

    join = reverse("join", args=[link.token])
    counter = iter(range(10**6))
    dsn = os.environ["DATABASE_URL"]

    def start() -> tuple[float, float]:
        n = next(counter)
        client = Client(REMOTE_ADDR=f"10.0.{n // 250}.{n % 250 + 1}")
        waited = [0.0]
        running = threading.Event()
        running.set()

        def watch() -> None:
            with psycopg.connect(dsn, autocommit=True) as watcher:
                last = time.perf_counter()
                while running.is_set():
                    row = watcher.execute(
                        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                        "AND datname = current_database()"
                    ).fetchone()
                    now = time.perf_counter()
                    if row and row[0]:
                        waited[0] += now - last
                    last = now
                    time.sleep(0.005)

        watcher = threading.Thread(target=watch)
        watcher.start()
        began = time.perf_counter()
        response = client.post(f"{join}?PROLIFIC_PID=bench-{n}")
        took = time.perf_counter() - began
        running.clear()
        watcher.join()
        assert response.status_code == 302, (response.status_code, response.content[:300])
        return took, waited[0]

    query = "?" + urllib.parse.urlencode(
        {"annotators": [a.pk for a in crowd], "conditions": ["a", "b", "ht"]}, doseq=True
    )
    start()  # warm up
    alone = [start() for _ in range(rounds)]
    during, previews = [], []
    fork = multiprocessing.get_context("fork")
    for _ in range(rounds):
        connections.close_all()  # the child opens its own
        took = fork.Value("d", 0.0)
        child = fork.Process(target=_preview, args=(project.pk, researcher.pk, query, took))
        child.start()
        while child.is_alive():  # Starts back to back for as long as the preview runs
            during.append(start())
        child.join()
        previews.append(took.value)
    connection.close()

    def ms(rows: list[tuple[float, float]], k: int) -> str:
        values = sorted(row[k] * 1000 for row in rows)
        return (
            f"median {statistics.median(values):.0f} ms, max {values[-1]:.0f} ms, total {sum(values):.0f} ms "
            f"over {len(values)} Starts"
        )

    return [
        f"participant Start alone: {ms(alone, 0)}; a backend waiting for a lock meanwhile: {ms(alone, 1)}",
        f"participant Start during a preview: {ms(during, 0)}; a backend waiting for a lock meanwhile: {ms(during, 1)}",
        f"the previews ({len(crowd)} annotators): median {statistics.median(previews) * 1000:.0f} ms",
    ]


def attacks(project, lab) -> list[str]:
    from django.test import Client
    from django.urls import reverse

    from annotations.models import Assignment, Project
    from annotations.roles import ANNOTATOR
    from annotations.selectors import document_context
    from annotations.services.assignment import assignment_reassign
    from annotations.services.errors import ServiceError
    from annotations.services.studies import study_assign_latin_square
    from annotations.services.users import user_add

    lines = []
    ht = Assignment.objects.filter(annotator=lab[0], condition="ht").order_by("queue_position").first()
    assert ht is not None and ht.item.document_position is not None
    client = Client()
    client.force_login(lab[0])
    api = client.get(reverse("api-assignments"), {"project": project.pk, "status": "pending"}).json()
    mine = next(row for row in api["results"] if row["id"] == ht.pk)
    lines.append(f"ht: /api/assignments/ item.model_output = {mine['item']['model_output']!r}")
    diff = client.get(reverse("editor_diff", args=[ht.pk])).content.decode()
    shown = diff.split('id="original">', 1)[1].split("</pre>", 1)[0]
    lines.append(f"ht: diff page before opening shows {shown!r}")
    sibling = Assignment.objects.get(
        annotator=lab[0], item__document=ht.item.document, item__document_position=ht.item.document_position + 1
    )
    newcomer, _ = user_add(username="newcomer", role=ANNOTATOR, password=PASSWORD)
    assignment_reassign(assignments=[sibling], to_annotator=newcomer)
    context = [segment.text for segment in document_context(assignment=ht) if segment.state == "todo"]
    lines.append(f"ht: document context after a sibling's reassignment: {context[:2]!r}")
    moved = Assignment.objects.get(annotator=newcomer)
    lines.append(
        f"reassigned Latin-square assignment: condition {sibling.condition!r} -> {moved.condition!r}, "
        f"queue position {sibling.queue_position!r} -> {moved.queue_position!r}"
    )
    other = Project.objects.create(name="digest benchmark", conditions=CONDITIONS)
    for item in project.items.filter(document__in=["doc000", "doc001", "doc002"]):
        item.pk, item.project = None, other
        item.save()
    people = [user_add(username=f"dg{k}", role=ANNOTATOR, password=PASSWORD)[0] for k in range(3)]
    shown_plan = study_assign_latin_square(project=other, annotators=people, conditions=["a", "b", "ht"])
    Project.objects.filter(pk=other.pk).update(
        conditions=[{**CONDITIONS[0], "output": None}, {**CONDITIONS[1], "highlights": False}, CONDITIONS[2]]
    )
    try:
        study_assign_latin_square(
            project=other, annotators=people, conditions=["a", "b", "ht"], apply=True, expected_digest=shown_plan.digest
        )
        lines.append("conditions redefined between preview and Confirm: applied")
    except ServiceError as exc:
        lines.append(f"conditions redefined between preview and Confirm: refused: {exc}")
    meta = client.get(reverse("api-project", args=[project.pk])).json()["meta"]
    names = [d.get("annotators") for d in (meta or {}).get("designs", [])]
    lines.append(f"/api/projects/<id>/ meta.designs[].annotators for an annotator: {names!r}")
    return lines


def through_gunicorn(database_url: str, project, crowd, admin) -> list[str]:
    """Statuses gunicorn answers for 300 ticked annotators (page) and 500 names (API), GET vs POST."""
    from rest_framework.authtoken.models import Token

    names = [a.username for a in crowd]
    names += [user.username for user in many_annotators("extra", 200)]
    token = Token.objects.get_or_create(user=admin)[0].key
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    # DEBUG on: the development static files (no collectstatic); the limits measured are gunicorn's own.
    env = {**os.environ, **production_settings(database_url), "EDITLAB_ENV_FILE": "/dev/null", "DEBUG": "1"}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    env["DJANGO_SETTINGS_MODULE"] = "editlab.settings"
    gunicorn = Path(sys.executable).with_name("gunicorn")
    server = subprocess.Popen(
        [str(gunicorn), "editlab.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "1", "--timeout", "120"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    lines = []
    try:
        problem = wait_for_login_page(base, server, 60)
        if problem:
            return [f"gunicorn: {problem}"]
        jar = http.cookiejar.CookieJar()
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        opener.open(f"{base}/login/").read()
        csrf = next(c.value for c in jar if c.name == "csrftoken")
        login = urllib.parse.urlencode({"username": "bench-admin", "password": PASSWORD, "csrfmiddlewaretoken": csrf})
        opener.open(
            urllib.request.Request(f"{base}/login/", data=login.encode(), headers={"Referer": f"{base}/login/"})
        )
        csrf = next(c.value for c in jar if c.name == "csrftoken")

        def status(request: urllib.request.Request, use=opener) -> str:
            try:
                with use.open(request) as response:
                    return str(response.status)
            except urllib.error.HTTPError as exc:
                return f"{exc.code} {exc.read().decode('utf-8', 'replace')[:160]!r}"

        page = f"{base}/manage/projects/{project.pk}/design/"
        ticked = {"annotators": [a.pk for a in crowd[:300]], "conditions": ["a", "b", "ht"]}
        query = urllib.parse.urlencode(ticked, doseq=True)
        lines.append(
            f"Design page, 300 annotators by GET ({len(query):,} characters): {status(urllib.request.Request(f'{page}?{query}'))}"
        )
        form = urllib.parse.urlencode({**ticked, "csrfmiddlewaretoken": csrf}, doseq=True).encode()
        lines.append(
            "Design page, 300 annotators by POST: "
            + status(urllib.request.Request(page, data=form, headers={"Referer": page}))
        )
        api = f"{base}/api/projects/{project.pk}/design-plan/"
        auth = {"Authorization": f"Token {token}"}
        plan_query = urllib.parse.urlencode({"annotators": ",".join(names), "conditions": "a,b,ht"})
        lines.append(
            f"plan API, 500 names by GET ({len(plan_query):,} characters): "
            + status(urllib.request.Request(f"{api}?{plan_query}", headers=auth), use=urllib.request.build_opener())
        )
        body = json.dumps({"annotators": names, "conditions": ["a", "b", "ht"]}).encode()
        lines.append(
            "plan API, 500 names by POST: "
            + status(
                urllib.request.Request(api, data=body, headers={**auth, "Content-Type": "application/json"}),
                use=urllib.request.build_opener(),
            )
        )
    finally:
        server.terminate()
        server.wait(timeout=30)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", required=True, help="an empty PostgreSQL database")
    parser.add_argument("--annotators", type=int, default=300)
    parser.add_argument("--documents", type=int, default=100)
    parser.add_argument("--segments", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--gunicorn", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        vendor = setup_django(args.database_url, Path(folder))
        project, lab, crowd, researcher, admin, link = build(
            annotators=args.annotators, documents=args.documents, segments=args.segments
        )
        lines = [f"database: {vendor}"]
        lines += start_latency(project, crowd, researcher, link, args.rounds)
        lines += attacks(project, lab)
        if args.gunicorn:
            lines += through_gunicorn(args.database_url, project, crowd, admin)
    for line in lines:
        print(line)


if __name__ == "__main__":
    main()
