"""reverie as a user runs it: its command and console script, hook processes, `reverie up` as a
real process tree, the embedded server's process, a user typing at its shell; and waiting, within
a deadline, for what they do."""

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from schemas import kinds
from schemas.settings import Settings

if TYPE_CHECKING:
    from reverie.mcp_endpoint import Registered

REVERIE = [sys.executable, "-m", "reverie"]
BIN = Path(sys.executable).parent / "reverie"


def wait_for(
    condition: Callable[[], Any], timeout: float = 30.0, what: str = "condition", every: float = 0.05
) -> Any:
    """Poll until `condition()` is truthy, every `every` seconds; its value. Fails the test after
    `timeout` seconds. A condition that records something each time it is asked (a hook run)
    asks seldom: each answer is work for the stack it waits on."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(every)


def typed(lines: list[str]) -> Callable[[str], str]:
    """What `input` would return for a user typing `lines`, then Ctrl-D."""
    left = iter(lines)

    def read_line(prompt: str) -> str:
        try:
            return next(left)
        except StopIteration:
            raise EOFError from None

    return read_line


def run_hook(payload: bytes, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([str(BIN), "hook", *args], input=payload, env=env, capture_output=True, timeout=60)


# what the hooks and the import recorded, as SQL over `events`
RECORDED = f"source IN ('{kinds.SOURCE_CLAUDE_CODE}', '{kinds.SOURCE_IMPORT}')"


class Stack:
    """`reverie up` as a real process tree: embedded server, dispatcher, RQ worker, the MCP server
    over HTTP..."""

    def __init__(self, env: dict[str, str], settings: Settings, workers: int = 1) -> None:
        self.env = env
        self.settings = settings
        self.workers = workers
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> "Stack":
        """Start it and wait until it is ready: its server answers, its dispatcher and workers
        beat, its MCP server listens and its projector has opened its store (and so said, once,
        which project each path already folded belongs to: workers/projector.py)."""
        from workers.status import stack_status

        started = time.time()
        with open(os.path.join(self.settings.home, "up.log"), "ab") as log:
            command = [str(BIN), "up", "--workers", str(self.workers)]
            self.process = subprocess.Popen(command, env=self.env, stdout=log, stderr=log)
        wait_for(
            lambda: (
                (s := stack_status(self.settings)).reachable
                and s.dispatchers
                and len(s.workers) == self.workers
                and self.mcp() is not None
                and (s.projections_published_at or 0) > started
            ),
            timeout=60,
            what="the stack to come up",
        )
        return self

    def mcp(self) -> "Registered | None":
        """The stack's MCP server over HTTP (its URL and token), once it listens."""
        from reverie.mcp_endpoint import served

        return served(self.settings, {})

    def stop(self) -> int:
        assert self.process is not None
        self.process.terminate()
        return self.process.wait(60)

    def archived(self) -> int:
        from workers.status import stack_status

        return stack_status(self.settings).archived

    def recorded(self) -> int:
        """How many archived events the hooks and the import recorded (not what the stack's
        own workers and recall service derived from them)."""
        [(count,)] = self.query(f"select count(*) from events where {RECORDED}")
        return int(count)

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        from projections.sql import connect

        return connect(self.settings).execute(sql).fetchall()


def stack_processes(settings: Settings) -> dict[int, str]:
    """Every live process of the stack on `settings`' data directory, by pid, with its command
    line: each whose environment names the directory (the supervisor, its children, theirs),
    and the embedded server (whose title overwrites its environment). Zombies are not live."""
    home = f"REVERIE_HOME={settings.home}".encode()
    title = f"unixsocket:{settings.socket_path}".encode()
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
            named = home in (entry / "environ").read_bytes().split(b"\0") or title in command
            if named and (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                found[int(entry.name)] = command.replace(b"\0", b" ").decode(errors="replace").strip()
        except (OSError, IndexError):
            continue
    return found


def children(pid: int, command: str | None = None) -> list[int]:
    """The live processes whose parent is `pid`, oldest first; those running `reverie
    <command>` only, if given."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            if not entry.name.isdigit() or int(stat[1]) != pid or stat[0] == "Z":
                continue
            if command is None or (entry / "cmdline").read_bytes().split(b"\0")[-2:-1] == [command.encode()]:
                found.append((int(stat[19]), int(entry.name)))
        except (OSError, IndexError, ValueError):
            continue
    return [pid for _, pid in sorted(found)]


def server_pid(settings: Settings) -> int:
    """The pid of the embedded server serving `settings` (its title names its socket)."""
    title = f"valkey-server unixsocket:{settings.socket_path}".encode()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "cmdline").read_bytes().rstrip(b"\0 ").endswith(title):
                    return int(entry.name)
            except OSError:
                continue
    raise AssertionError("no embedded server running")


def fresh_home() -> Iterator[str]:
    """A fresh, short REVERIE_HOME (unix socket paths must stay short)."""
    path = tempfile.mkdtemp(prefix="rv-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def environ_of(home: str) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "CLAUDE_PROJECT_DIR")}
    environ["REVERIE_HOME"] = home
    return environ


def settings_of(home: str) -> Settings:
    return Settings(home)


def running_stack(env: dict[str, str], settings: Settings) -> Iterator[Stack]:
    """A whole stack (reverie up) on the data directory, stopped after."""
    running = Stack(env, settings).start()
    yield running
    if running.process and running.process.poll() is None:
        running.stop()


def one_stack_per_module() -> tuple[Any, ...]:
    """The fixtures `home`, `env`, `settings` and `stack`, scoped to a module, for one whose tests
    share one stack (a boot costs seconds): each test there touches only projects, sessions and
    HOMEs of its own, and none kills, damages or fills the stack. Assign them to those names."""
    return (
        pytest.fixture(fresh_home, scope="module", name="home"),
        pytest.fixture(environ_of, scope="module", name="env"),
        pytest.fixture(settings_of, scope="module", name="settings"),
        pytest.fixture(running_stack, scope="module", name="stack"),
    )
