import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from reverie.testing import claude_code
from schemas import kinds
from schemas.settings import Settings

SHARED = Path(__file__).resolve().parents[2] / "shared"
FIXTURES = SHARED / "fixtures" / "claude-code"
HOOK_PAYLOADS = FIXTURES / "hook-payloads"
TRANSCRIPTS = FIXTURES / "transcripts"
REVERIE = [sys.executable, "-m", "reverie"]
BIN = Path(sys.executable).parent / "reverie"


def pytest_configure(config: pytest.Config) -> None:
    if not HOOK_PAYLOADS.is_dir() or not TRANSCRIPTS.is_dir():
        raise pytest.UsageError(f"the shared fixtures are missing: expected them at {FIXTURES} (../shared)")


def fixture_payloads() -> list[tuple[str, dict[str, Any]]]:
    """(file id, payload) for every captured hook payload, both CLI versions."""
    found = []
    for path in sorted(HOOK_PAYLOADS.glob("*/*.json")):
        for i, payload in enumerate(json.loads(path.read_text())):
            found.append((f"{path.parent.name}/{path.stem}[{i}]", payload))
    return found


def wait_for(condition: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
    """Poll until `condition()` is truthy; its value. Fails the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


@pytest.fixture
def home() -> Iterator[str]:
    """A fresh, short REVERIE_HOME (unix socket paths must stay short)."""
    path = tempfile.mkdtemp(prefix="rv-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def env(home: str) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "CLAUDE_PROJECT_DIR")}
    environ["REVERIE_HOME"] = home
    return environ


@pytest.fixture
def settings(home: str) -> Settings:
    return Settings(home)


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
    """`reverie up` as a real process tree: embedded server, dispatcher, RQ worker."""

    def __init__(self, env: dict[str, str], settings: Settings, workers: int = 1) -> None:
        self.env = env
        self.settings = settings
        self.workers = workers
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> "Stack":
        from workers.status import stack_status

        with open(os.path.join(self.settings.home, "up.log"), "ab") as log:
            command = [str(BIN), "up", "--workers", str(self.workers)]
            self.process = subprocess.Popen(command, env=self.env, stdout=log, stderr=log)
        wait_for(
            lambda: (
                (s := stack_status(self.settings)).reachable
                and s.dispatchers
                and len(s.workers) == self.workers
            ),
            timeout=60,
            what="the stack to come up",
        )
        return self

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


@pytest.fixture
def stack(env: dict[str, str], settings: Settings) -> Iterator[Stack]:
    running = Stack(env, settings).start()
    yield running
    if running.process and running.process.poll() is None:
        running.stop()


@pytest.fixture(scope="session")
def claude() -> str:
    """The real Claude Code CLI (reverie.testing.claude_code), installed once per checkout."""
    return claude_code()
