"""`reverie up`: start the processes of the Procfile, keep them running, stop them cleanly.

The server starts first and must answer before the others start; a process that dies is
started again after a growing pause; SIGINT or SIGTERM stops them in reverse order, each
with SIGTERM and, past a grace period, SIGKILL.
"""

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable

import msgspec
import structlog

from schemas.files import write_durably
from schemas.settings import Settings
from workers.redis_client import is_up

log = structlog.get_logger("reverie.supervisor")

PID_FILE = "reverie.pid"


class ProcessSpec(msgspec.Struct, frozen=True):
    name: str
    command: list[str]  # arguments of `reverie`, as the Procfile writes them


def process_layout(settings: Settings, workers: int = 1) -> list[ProcessSpec]:
    """The processes of the stack, in start order (the Procfile says the same)."""
    layout = [ProcessSpec("server", ["server"])] if settings.embedded else []
    layout.append(ProcessSpec("dispatcher", ["dispatch"]))
    layout += [
        ProcessSpec("worker" if workers == 1 else f"worker.{i + 1}", ["worker"]) for i in range(workers)
    ]
    return layout


class Child:
    def __init__(self, spec: ProcessSpec) -> None:
        self.spec = spec
        self.process: subprocess.Popen[bytes] | None = None
        self.restarts = 0
        self.restart_at: float | None = None

    def start(self) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "reverie", *self.spec.command])
        log.info("process.started", process=self.spec.name, pid=self.process.pid)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, grace: float) -> None:
        if not self.alive():
            return
        assert self.process is not None
        self.process.terminate()
        try:
            self.process.wait(grace)
        except subprocess.TimeoutExpired:
            log.warning("process.killed", process=self.spec.name, after_seconds=grace)
            self.process.kill()
            self.process.wait()
        log.info("process.stopped", process=self.spec.name, code=self.process.returncode)


def _wait_until(condition: Callable[[], bool], timeout: float, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(interval)
    return condition()


class Supervisor:
    def __init__(self, settings: Settings, workers: int = 1, grace: float = 10.0) -> None:
        self.settings = settings
        self.children = [Child(spec) for spec in process_layout(settings, workers)]
        self.grace = grace
        self.stopping = threading.Event()

    def run(self) -> int:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: self.stopping.set())
        write_durably(self.settings.run_dir, PID_FILE, str(os.getpid()).encode())
        try:
            if not self._start_all():
                return 1
            while not self.stopping.wait(0.5):
                self._restart_dead()
            return 0
        finally:
            for child in reversed(self.children):
                child.stop(self.grace)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(pid_file(self.settings))
            log.info("stack.stopped")

    def _start_all(self) -> bool:
        for child in self.children:
            child.start()
            if child.spec.name == "server" and not self._wait_for_server(child):
                log.error("server.not_ready", url=self.settings.redis_url)
                return False
            if not child.alive():
                log.error("process.failed_to_start", process=child.spec.name)
                return False
        log.info("stack.up", redis=self.settings.redis_url, processes=[c.spec.name for c in self.children])
        return True

    def _wait_for_server(self, server: Child) -> bool:
        return _wait_until(lambda: is_up(self.settings) or not server.alive(), timeout=15) and server.alive()

    def _restart_dead(self) -> None:
        now = time.monotonic()
        for child in self.children:
            if child.alive():
                continue
            if child.restart_at is None:
                pause = min(30.0, 0.5 * 2**child.restarts)
                code = child.process.returncode if child.process else None
                log.error("process.exited", process=child.spec.name, code=code, restart_in=pause)
                child.restart_at = now + pause
            elif now >= child.restart_at:
                child.restarts += 1
                child.restart_at = None
                child.start()


def pid_file(settings: Settings) -> str:
    return os.path.join(settings.run_dir, PID_FILE)


def running_pid(settings: Settings) -> int | None:
    """The pid of the running stack for this data directory, if there is one."""
    try:
        with open(pid_file(settings)) as f:
            pid = int(f.read().strip())
        os.kill(pid, 0)
    except (FileNotFoundError, ValueError, ProcessLookupError):
        return None
    except PermissionError:
        pass
    return pid
