"""A full disk never stops the stack: on a 50 MB tmpfs filled up, every process survives,
`reverie status` says so, hooks lose nothing, and everything resumes once space returns."""

import contextlib
import errno
import json
import os
import subprocess
import tempfile
from collections.abc import Iterator

import pytest

from schemas.settings import Settings
from tests.support.processes import BIN, RECORDED, Stack, run_hook, wait_for

pytestmark = pytest.mark.integration


@pytest.fixture
def small_disk() -> Iterator[str]:
    """A 50 MB tmpfs of our own (the tests run as root, as CI does)."""
    path = tempfile.mkdtemp(prefix="rv-disk-")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=50m,mode=0700", "tmpfs", path], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", path], check=False)
        os.rmdir(path)


def fill(directory: str) -> str:
    """Write a file until the disk holding `directory` is full; its path."""
    path = os.path.join(directory, "filler")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (1 << 20, 1 << 12, 1):
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * size)
    finally:
        os.close(fd)
    with pytest.raises(OSError) as full, open(os.path.join(directory, "probe"), "wb") as f:
        f.write(b"x" * 8192)
        f.flush()
    assert full.value.errno == errno.ENOSPC
    return path


def status(env: dict[str, str]) -> dict[str, object]:
    done = subprocess.run([str(BIN), "status", "--json"], env=env, capture_output=True, timeout=60)
    return dict(json.loads(done.stdout))


def test_a_full_disk_never_stops_the_stack(small_disk: str, env: dict[str, str]) -> None:
    home = os.path.join(small_disk, "home")
    os.makedirs(home)
    env = {**env, "REVERIE_HOME": home}
    settings = Settings.from_env(env)
    stack = Stack(env, settings).start()
    assert stack.process is not None
    try:
        filler = fill(small_disk)
        sent = []
        for i in range(60):
            payload = {"session_id": "full", "hook_event_name": "UserPromptSubmit", "prompt": f"full-{i}"}
            done = run_hook(json.dumps(payload).encode(), env)
            assert (done.returncode, done.stderr) == (0, b"")
            sent.append(f"full-{i}")
        sent.sort()
        wait_for(lambda: status(env)["disk_full"], what="reverie status to say the disk is full")
        assert stack.process.poll() is None, "the supervisor died"
        os.unlink(filler)
        wait_for(
            lambda: (
                sorted(p for (p,) in stack.query(f"select payload->>'prompt' from events where {RECORDED}"))
                == sorted(sent)
            ),
            timeout=120,
            what="every event archived once space returned",
        )
        assert stack.query("select count(*) from dead_letters") == [(0,)]
        state = wait_for(
            lambda: (
                (s := status(env))["reachable"]
                and not s["disk_full"]
                and s["dispatchers"]
                and s["workers"]
                and s
            ),
            timeout=60,
            what="the stack to run as before",
        )
        assert state["spooled"] == 0
        assert stack.process.poll() is None
    finally:
        stack.stop()
