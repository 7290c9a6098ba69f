"""What the generate_outputs and simulate_edits commands share: their options, reading the template
file, starting the run and waiting for it."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from annotations.models import Project
from editlab.refusals import Refusal
from generation import jobs
from generation.control import TEMPLATE_MAX_BYTES
from generation.models import GenerationRun
from generation.prompts import variables_parse
from generation.services import PROMPT_MAX_CHARS_DEFAULT, generation_run_start

_POLL_S = 0.2


def add_common(parser: CommandParser) -> None:
    parser.add_argument("--project", required=True, help="Project name.")
    parser.add_argument(
        "--endpoint", required=True, help="Base URL of the OpenAI-compatible API, e.g. http://127.0.0.1:8000/v1"
    )
    parser.add_argument("--model", required=True, help="Model name as the server knows it.")
    parser.add_argument("--temperature", type=float, default=None)
    parser.add_argument("--max-tokens", type=int, default=None)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--timeout", type=float, default=60.0, help="Seconds per call (default 60).")
    parser.add_argument("--concurrency", type=int, default=1, help="Calls in flight at once per worker (default 1).")
    parser.add_argument(
        "--max-prompt-chars",
        type=int,
        default=PROMPT_MAX_CHARS_DEFAULT,
        help=f"Refuse a rendered prompt longer than this, before any call (default {PROMPT_MAX_CHARS_DEFAULT:,}).",
    )
    parser.add_argument("--var", action="append", default=[], metavar="NAME=VALUE", help="A template variable.")
    parser.add_argument("--items", nargs="+", default=None, metavar="EXTERNAL_ID", help="Only these items.")
    parser.add_argument("--no-wait", action="store_true", help="Queue the run for db_worker and return.")


def read_template(path: str | Path) -> str:
    path = Path(path)
    try:
        with path.open("rb") as handle:
            data = handle.read(TEMPLATE_MAX_BYTES + 1)
    except OSError as exc:
        raise CommandError(f"cannot read the prompt template {path}: {exc.strerror or exc}") from None
    if len(data) > TEMPLATE_MAX_BYTES:
        raise CommandError(f"the prompt template {path} is larger than {TEMPLATE_MAX_BYTES:,} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise CommandError(f"the prompt template {path}, line {line}: not UTF-8 ({exc.reason})") from None


def start_and_wait(command: Any, options: dict[str, Any], **run: Any) -> GenerationRun:
    try:
        project = Project.objects.get(name=options["project"])
    except Project.DoesNotExist:
        raise CommandError(f"no project named {options['project']!r}") from None
    try:
        started = generation_run_start(
            project=project,
            endpoint=options["endpoint"],
            model=options["model"],
            temperature=options["temperature"],
            max_tokens=options["max_tokens"],
            seed=options["seed"],
            timeout_s=options["timeout"],
            concurrency=options["concurrency"],
            max_prompt_chars=options["max_prompt_chars"],
            variables=variables_parse(options["var"]),
            items=options["items"],
            **run,
        )
    except Refusal as exc:
        raise CommandError(str(exc)) from None
    command.stdout.write(f"run #{started.pk}: {started.get_kind_display()} {started.name!r}, model {started.model!r}")
    if options["no_wait"] and jobs.fans_out():
        command.stdout.write("queued for db_worker")
        return started
    while True:
        run_now = GenerationRun.objects.get(pk=started.pk)
        if run_now.status not in GenerationRun.GOING:
            break
        time.sleep(_POLL_S)
    command.stdout.write(summary(run_now))
    if run_now.status in (GenerationRun.FAILED, GenerationRun.STOPPED):
        raise CommandError(run_now.error)
    return run_now


def summary(run: GenerationRun) -> str:
    return (
        f"{run.project.name}: {run.total} items; generated {run.generated}, refused or empty {run.refused}, "
        f"failed {run.failed}, answered before (skipped) {run.skipped}; tokens: prompt {run.prompt_tokens:,}, "
        f"completion {run.completion_tokens:,}"
    )
