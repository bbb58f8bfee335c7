"""`reverie up`: start the processes of the Procfile, keep them running, stop them cleanly.

The server starts first and must answer before the others start; a process that dies is
started again after a growing pause; SIGINT or SIGTERM stops them all at once with SIGTERM
(SIGKILL past a grace period), and the server last, once nothing may still write to it. A
supervisor killed outright takes every process it started with it at once (Linux).
"""

import fcntl
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

import msgspec
import structlog

from schemas.settings import Settings
from workers.lifeline import killed_with_this_process
from workers.redis_client import is_up

log = structlog.get_logger("reverie.supervisor")

PID_FILE = "reverie.pid"
STABLE_AFTER_S = 60.0  # a process that ran this long and died is restarted without delay


class ProcessSpec(msgspec.Struct, frozen=True):
    name: str
    command: list[str]  # arguments of `reverie`, as the Procfile writes them


def process_layout(settings: Settings, workers: int = 1, dashboard: bool = True) -> list[ProcessSpec]:
    """The processes of the stack, in start order (the Procfile says the same)."""
    layout = [ProcessSpec("server", ["server"])] if settings.embedded else []
    layout.append(ProcessSpec("dispatcher", ["dispatch"]))
    layout.append(ProcessSpec("projector", ["project"]))
    layout.append(ProcessSpec("recall", ["serve"]))
    layout.append(ProcessSpec("mcp", ["mcp", "--http"]))
    if dashboard:
        layout.append(ProcessSpec("dashboard", ["dashboard", "--serve"]))
    layout.append(ProcessSpec("scheduler", ["scheduler"]))
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
        self.started_at = 0.0

    def start(self, preexec: Callable[[], None] | None) -> None:
        self.process = subprocess.Popen(
            # -P: a folder named like one of ours in the caller's directory must not shadow it
            [sys.executable, "-P", "-m", "reverie", *self.spec.command],
            process_group=0,  # Ctrl-C reaches the supervisor only, which stops the stack in order
            preexec_fn=preexec,
        )
        self.started_at = time.monotonic()
        log.info("process.started", process=self.spec.name, pid=self.process.pid)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def terminate(self) -> None:
        if self.alive():
            assert self.process is not None
            self.process.terminate()

    def wait(self, deadline: float, grace: float) -> None:
        """Wait for the process to end by `deadline` (time.monotonic), then kill it."""
        if self.process is None or self.process.returncode is not None:
            return
        try:
            self.process.wait(max(deadline - time.monotonic(), 0.0))
        except subprocess.TimeoutExpired:
            log.warning("process.killed", process=self.spec.name, after_seconds=grace)
            self.process.kill()
            self.process.wait()
        log.info("process.stopped", process=self.spec.name, code=self.process.returncode)


def stop_together(children: list[Child], grace: float) -> None:
    """SIGTERM to each of `children` at once, then SIGKILL to any still running `grace` seconds
    later: stopping takes as long as the slowest, not as long as all of them together."""
    for child in children:
        child.terminate()
    deadline = time.monotonic() + grace
    for child in children:
        child.wait(deadline, grace)


def _wait_until(condition: Callable[[], bool], timeout: float, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(interval)
    return condition()


class Supervisor:
    def __init__(
        self, settings: Settings, workers: int = 1, grace: float = 10.0, dashboard: bool = True
    ) -> None:
        self.settings = settings
        self.children = [Child(spec) for spec in process_layout(settings, workers, dashboard)]
        self.grace = grace
        self.stopping = threading.Event()
        # SIGKILL, not SIGTERM, when the supervisor is killed outright: no one is left to stop the
        # stack in order, and a child asked nicely may take seconds (a model loading holds the
        # interpreter) or forever (a worker finishing a job without its Redis); every process of
        # the stack survives being killed (the dispatcher acknowledges only what it archived,
        # the projector swaps whole snapshots, a killed worker's job is tried again)
        self.preexec = killed_with_this_process()

    def run(self) -> int:
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, lambda *_: self.stopping.set())
        try:
            pid_lock = hold_pid_file(self.settings)
        except StackRunning as e:
            log.error("stack.already_running", pid=e.pid)
            return 1
        try:
            if not self._start_all():
                return 1
            while not self.stopping.wait(0.5):
                try:
                    self._restart_dead()
                except Exception:  # e.g. no process can be started now: the stack goes on, and retries
                    log.exception("supervisor.restart_failed")
            return 0
        finally:
            servers = [c for c in self.children if c.spec.name == "server"]
            stop_together([c for c in self.children if c not in servers], self.grace)
            stop_together(servers, self.grace)  # last: the others acknowledge and emit as they stop
            release_pid_file(pid_lock)
            log.info("stack.stopped")

    def _start_all(self) -> bool:
        for child in self.children:
            child.start(self.preexec)
            if child.spec.name == "server" and not self._wait_for_server(child):
                log.error("server.not_ready", url=self.settings.redis_url)
                return False
            if not child.alive():
                log.error("process.failed_to_start", process=child.spec.name)
                return False
        log.info("stack.up", redis=self.settings.redis_shown, processes=[c.spec.name for c in self.children])
        return True

    def _wait_for_server(self, server: Child) -> bool:
        return _wait_until(lambda: is_up(self.settings) or not server.alive(), timeout=15) and server.alive()

    def _restart_dead(self) -> None:
        now = time.monotonic()
        for child in self.children:
            if child.alive():
                continue
            if child.restart_at is None:
                if now - child.started_at > STABLE_AFTER_S:
                    child.restarts = 0
                pause = min(30.0, 0.5 * 2 ** min(child.restarts, 6))
                code = child.process.returncode if child.process else None
                log.error("process.exited", process=child.spec.name, code=code, restart_in=pause)
                child.restart_at = now + pause
            elif now >= child.restart_at:
                child.restarts += 1
                child.restart_at = None
                child.start(self.preexec)


def pid_file(settings: Settings) -> str:
    return os.path.join(settings.run_dir, PID_FILE)


class StackRunning(RuntimeError):
    def __init__(self, pid: int | None) -> None:
        super().__init__(f"reverie is already running (pid {pid})")
        self.pid = pid


def hold_pid_file(settings: Settings) -> TextIO:
    """Lock the pid file for this process's lifetime and write our pid in it; keep the handle.

    The lock, not the pid, says whether a stack runs: it dies with its process, so a stale
    file or a recycled pid can never pass for a running stack. The file is never removed
    (only emptied), so every process locks the same file.
    """
    os.makedirs(settings.run_dir, mode=0o700, exist_ok=True)
    handle = open(pid_file(settings), "a+")  # noqa: SIM115 (held while the stack runs)
    # a `reverie status` may hold a shared lock for an instant: try for a while
    if not _wait_until(lambda: _try_lock(handle, fcntl.LOCK_EX), timeout=1.0):
        pid = _pid_in(handle)
        handle.close()
        raise StackRunning(pid)
    handle.seek(0)
    handle.truncate()
    handle.write(str(os.getpid()))
    handle.flush()
    os.fsync(handle.fileno())
    return handle


def release_pid_file(handle: TextIO) -> None:
    handle.seek(0)
    handle.truncate()
    handle.close()


def running_pid(settings: Settings) -> int | None:
    """The pid of the running stack for this data directory, if there is one."""
    try:
        with open(pid_file(settings)) as handle:
            if _try_lock(handle, fcntl.LOCK_SH):
                return None
            # held: by a stack that may be starting and not have written its pid yet
            _wait_until(lambda: _pid_in(handle) is not None, timeout=2.0)
            return _pid_in(handle)
    except FileNotFoundError:
        return None


def _try_lock(handle: TextIO, kind: int) -> bool:
    try:
        fcntl.flock(handle, kind | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _pid_in(handle: TextIO) -> int | None:
    handle.seek(0)
    text = handle.read().strip()
    return int(text) if text.isdigit() else None
