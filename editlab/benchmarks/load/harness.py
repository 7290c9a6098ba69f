"""The processes around a run: a throwaway PostgreSQL, gunicorn, the CPU meter and the py-spy profiler."""

import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from editlab.benchmarks.support import free_port, production_settings, wait_for_login_page

BASE_DIR = Path(__file__).resolve().parents[3]


# ---------------------------------------------------------------- processes


def server_settings(database_url: str, static_root: Path) -> dict[str, str]:
    """The settings of the measured app: production (DEBUG off, its static files collected into
    `static_root` and served by the app), on plain HTTP over loopback."""
    return {
        **production_settings(database_url),
        "STATIC_ROOT": str(static_root),
        "EDITLAB_ENV_FILE": "/dev/null",  # no developer's .env in a measurement
    }


def server_environment(settings: dict[str, str]) -> dict[str, str]:
    """This process's environment with the app's `settings`, for gunicorn."""
    env = {key: value for key, value in os.environ.items() if key != "DJANGO_SETTINGS_MODULE"}
    env.update(settings)
    return env


class Postgres:
    """A throwaway cluster from editlab/scripts/postgres; stop() is safe to call twice."""

    script = BASE_DIR / "editlab" / "scripts" / "postgres"

    def __init__(self, folder: Path):
        self.folder = folder
        self.url = ""

    def start(self) -> str:
        result = subprocess.run(
            [str(self.script), "start", str(self.folder), str(free_port())], capture_output=True, text=True, timeout=120
        )
        if result.returncode != 0:
            raise RuntimeError(f"PostgreSQL did not start: {result.stderr.strip()}")
        self.url = result.stdout.strip().splitlines()[-1]
        return self.url

    def pids(self) -> list[int]:
        pid_file = self.folder / "data" / "postmaster.pid"
        try:
            return [int(pid_file.read_text().split()[0])]
        except (OSError, ValueError, IndexError):
            return []

    def version(self) -> str:
        try:
            return (self.folder / "data" / "PG_VERSION").read_text().strip()
        except OSError:
            return "?"

    def stop(self) -> None:
        subprocess.run([str(self.script), "stop", str(self.folder)], capture_output=True, timeout=120)


class Gunicorn:
    def __init__(self, *, env: dict[str, str], workers: int, worker_class: str, threads: int, folder: Path):
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.access_log = folder / "access.log"
        self.error_log = folder / "gunicorn.log"
        self.command = [
            sys.executable,
            "-m",
            "gunicorn",
            "editlab.wsgi:application",
            "--chdir",
            str(BASE_DIR),
            "--bind",
            f"127.0.0.1:{self.port}",
            "--workers",
            str(workers),
            "--worker-class",
            worker_class,
            "--threads",
            str(threads),
            "--timeout",
            "60",
            "--graceful-timeout",
            "10",
            "--access-logfile",
            str(self.access_log),
            "--access-logformat",
            "%(m)s %(U)s %(s)s %(D)s",
            "--error-logfile",
            str(self.error_log),
        ]
        self.env = env
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(self.command, env=self.env, cwd=BASE_DIR, stdin=subprocess.DEVNULL)
        problem = wait_for_login_page(self.base_url, self.process, timeout=60)
        if problem is not None:
            raise RuntimeError(f"gunicorn {problem}:\n{self.log_tail()}")

    @property
    def pid(self) -> int:
        if self.process is None:
            raise RuntimeError("gunicorn is not started (start() first)")
        return self.process.pid

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.error_log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


class CpuMeter:
    """CPU seconds spent by process trees (app server, PostgreSQL, this client) and by the whole machine."""

    def __init__(self, trees: dict[str, list[int]], *, alone: tuple[str, ...] = ()):
        import psutil

        self.alone = alone  # names measured without their children (the client: gunicorn is its child)

        self.psutil = psutil
        self.trees = trees
        self.start = self._snapshot()

    def _tree_seconds(self, pids: list[int], *, children: bool) -> float:
        total = 0.0
        for pid in pids:
            try:
                root = self.psutil.Process(pid)
                for process in [root, *(root.children(recursive=True) if children else [])]:
                    times = process.cpu_times()
                    total += times.user + times.system
                    if children:  # processes that already exited (PostgreSQL backends after
                        # CONN_MAX_AGE, a replaced worker) count in their waiting parent
                        total += times.children_user + times.children_system
            except self.psutil.Error:
                continue
        return total

    def _snapshot(self) -> dict[str, float]:
        machine = self.psutil.cpu_times()
        snapshot = {
            name: self._tree_seconds(pids, children=name not in self.alone) for name, pids in self.trees.items()
        }
        snapshot["machine busy"] = (
            machine.user + machine.system + machine.nice + getattr(machine, "irq", 0) + getattr(machine, "softirq", 0)
        )
        snapshot["wall"] = time.monotonic()
        return snapshot

    def stop(self) -> dict[str, float]:
        end = self._snapshot()
        used = {name: end[name] - self.start[name] for name in end}
        used["others"] = max(0.0, used["machine busy"] - sum(used[name] for name in self.trees))
        return used


class Profiler:
    """py-spy sampling the app server's processes during the run (--profile FILE: collapsed stacks)."""

    def __init__(self, pid: int, output: Path):
        self.output = output
        self.process = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "py-spy"),
                "record",
                "--pid",
                str(pid),
                "--subprocesses",
                "--rate",
                "100",
                "--nonblocking",
                "--format",
                "raw",
                "--output",
                str(output),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # py-spy writes its output on SIGINT
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


PROJECT_PREFIXES = ("annotations/", "editlab/", "metrics/")


def profile_summary(collapsed: Path, *, top: int = 25) -> str:
    """From py-spy's collapsed stacks: the project's functions by inclusive share of the app's CPU
    samples (counted once per stack), then the functions where the samples land (self share)."""
    inclusive: dict[str, int] = defaultdict(int)
    leaf: dict[str, int] = defaultdict(int)
    total = 0
    for line in collapsed.read_text(errors="replace").splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not count_text.isdigit():
            continue
        count = int(count_text)
        total += count
        names = [_frame_name(frame) for frame in stack.split(";") if not frame.startswith("process ")]
        if names:
            leaf[names[-1]] += count
        for name in set(names):
            if name.split("(")[-1].startswith(PROJECT_PREFIXES):
                inclusive[name] += count
    if not total:
        return "(no samples)"

    def lines(table: dict[str, int]) -> list[str]:
        rows = sorted(table.items(), key=lambda item: -item[1])[:top]
        return [f"{100 * count / total:5.1f}%  {name}" for name, count in rows]

    return "\n".join(
        [
            f"{total} samples; the project's functions (inclusive):",
            *lines(inclusive),
            "where the samples land (self):",
            *lines(leaf),
        ]
    )


def _frame_name(frame: str) -> str:
    name, _, where = frame.partition(" (")
    path = where.rstrip(")").rsplit(":", 1)[0]
    return f"{name} ({path.split('site-packages/')[-1].replace(str(BASE_DIR) + '/', '')})"
