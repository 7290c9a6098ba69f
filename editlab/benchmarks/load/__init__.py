"""The load benchmark: many annotators at once against PostgreSQL + gunicorn.

    python -m editlab.benchmarks.load [--annotators 200] [--duration 120] [--workers 8]
                                      [--worker-class sync|gthread] [--threads 1]
                                      [--batch-interval 2] [--submit-interval 60] [--draft-every 5]
                                      [--resend 0.02] [--login-concurrency 4] [--seed 1]
                                      [--output FILE] [--profile FILE]
    python -m editlab.benchmarks.load --annotators 5 --duration 10        # smoke run

1. Starts a throwaway PostgreSQL cluster (editlab/scripts/postgres) on a free loopback port,
   migrates it and creates one project with --annotators annotator accounts, each holding one batch
   of items (annotations.services: batch_make + batch_assign).
2. Starts the app under gunicorn on 127.0.0.1 with --workers workers (DEBUG=0, a throwaway
   SECRET_KEY, plain HTTP on loopback: SECURE_SSL_REDIRECT=0, SESSION_COOKIE_SECURE=0,
   CSRF_COOKIE_SECURE=0).
3. Warm-up, not measured: logs every annotator in (login form: session + CSRF cookies; PBKDF2 makes
   each login cost ~0.3 s of server CPU) and opens its first editor page (GET /edit/<id>/, config
   from the "editor-config" json_script), --login-concurrency at a time. Then drives them all for
   --duration seconds with a bounded asyncio client (aiohttp; one connection per annotator at
   most): each sends an event batch every --batch-interval seconds (10-30 keydown/beforeinput/
   input/select events of a
   consistent typing session, exactly as annotations/static/annotations/logger.js sends them),
   saves the draft every --draft-every batches, re-sends a fraction --resend of its batches (a
   retry after a lost answer: must come back as duplicates), and submits its item every
   --submit-interval seconds (first submits are spread over the first interval), then opens the
   next one. A failed request is retried like the logger does (backoff); every loop stops at the
   deadline, pending events get one last flush.
4. Reports requests/s and p50/p95/p99 latency per endpoint (client-side, and server-side from
   gunicorn's access log), errors, where the CPU went (app, PostgreSQL, this client, other
   processes) and what the offered load needs, when the slow batches happened and PostgreSQL's
   autovacuum runs; --profile FILE also samples the app server with py-spy (collapsed stacks).
5. Checks in the database that every event the server acknowledged is stored exactly once (per
   post-edit: the stored seqs are exactly the acknowledged ones, 0..n-1, no gaps), and that every
   submitted post-edit has its effort derived, with counts equal to the keys the client typed and
   a replay that matches the submitted text.

Traffic goes only to 127.0.0.1; PostgreSQL and gunicorn are stopped at the end, also on failure.
Exit status: 0 when there were no errors and no lost or duplicated event, else 1 (the p99 goal is
reported, not enforced: the load generator shares the machine).

The client half (TypingSession, run_load, check_exactly_once, seed) is importable: the test suite
drives it in-process against a live server (tests/editlab/test_load_smoke.py).
"""
