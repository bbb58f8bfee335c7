"""The stack rides out an outage in process, says only what is true of it, and keeps its files
for its user alone."""

import json
import os
import signal
import stat

import pytest

from projections.store import new_store, remove_store
from schemas.disk.files import lock_directory
from tests.support.processes import Stack, run_hook, server_pid, wait_for
from workers.status import stack_status

pytestmark = pytest.mark.integration


def _pids(stack: Stack) -> tuple[set[int], set[str]]:
    state = stack_status(stack.settings)
    return {d.pid for d in state.dispatchers}, {w.name for w in state.workers}


def _exits(stack: Stack, process: str) -> int:
    """How often the supervisor saw `process` exit."""
    with open(os.path.join(stack.settings.home, "up.log"), "rb") as log:
        lines = [json.loads(line) for line in log if line.startswith(b"{")]
    return sum(
        1 for line in lines if line.get("event") == "process.exited" and line.get("process") == process
    )


def _started_at(process: str) -> float | None:
    """When the newest `reverie <process>` process started (seconds since boot), if one runs."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if f.read().split(b"\0")[-2:-1] == [process.encode()]:
                    with open(f"/proc/{entry}/stat") as s:
                        found.append(int(s.read().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK"))
        except (OSError, ValueError, IndexError):
            continue
    return max(found, default=None)


def _uptime() -> float:
    with open("/proc/uptime") as f:
        return float(f.read().split()[0])


def _restarted_while_away(stack: Stack, process: str, command: str, pid: int, away_s: float) -> None:
    """Kill `process` (`reverie <command>`) and await the one the supervisor starts again to
    have waited `away_s` (while the caller keeps the server away)."""
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: _exits(stack, process) == 1, what=f"the supervisor to see the {process} die")
    wait_for(
        lambda: (began := _started_at(command)) is not None and _uptime() - began > away_s,
        timeout=60,
        what=f"a new {process} to have waited {away_s} s for the server",
    )


def test_a_dispatcher_started_while_the_server_is_away_waits_for_it(
    stack: Stack, env: dict[str, str]
) -> None:
    [dispatcher] = wait_for(lambda: _pids(stack)[0], what="a dispatcher")
    server = server_pid(stack.settings)
    os.kill(server, signal.SIGSTOP)  # away: connections hang, and time out
    try:  # the new dispatcher meets the frozen server past its 5 s timeout
        _restarted_while_away(stack, "dispatcher", "dispatch", dispatcher, away_s=8)
    finally:
        os.kill(server, signal.SIGCONT)
    payload = {"session_id": "away", "hook_event_name": "UserPromptSubmit", "prompt": "while away"}
    assert run_hook(json.dumps(payload).encode(), env).returncode == 0
    archived = "select count(*) from events where payload->>'prompt' = 'while away'"
    wait_for(
        lambda: stack.query(archived) == [(1,)],
        timeout=60,
        what="the event, archived once the server is back",
    )
    assert _exits(stack, "dispatcher") == 1, "the dispatcher exited while the server was away"


def test_a_worker_started_while_the_server_is_away_waits(stack: Stack) -> None:
    [name] = wait_for(lambda: _pids(stack)[1], what="a worker")
    socket_path = stack.settings.socket_path
    os.rename(socket_path, socket_path + ".away")  # new connections are refused meanwhile
    try:
        _restarted_while_away(stack, "worker", "worker", int(name.split(".")[1]), away_s=3)
    finally:
        os.rename(socket_path + ".away", socket_path)
    wait_for(lambda: _pids(stack)[1] - {name}, timeout=60, what="the new worker at work")
    assert _exits(stack, "worker") == 1, "the worker exited while the server was away"


def test_a_killed_worker_is_not_listed(stack: Stack) -> None:
    [name] = wait_for(lambda: _pids(stack)[1], what="a worker")
    os.kill(int(name.split(".")[1]), signal.SIGKILL)
    wait_for(lambda: name not in _pids(stack)[1], timeout=10, what="the killed worker to leave the list")


def test_every_folder_and_file_of_the_data_directory_is_the_users_alone(
    stack: Stack, env: dict[str, str]
) -> None:
    payload = {"session_id": "mode", "hook_event_name": "UserPromptSubmit", "prompt": "private"}
    assert run_hook(json.dumps(payload).encode(), env).returncode == 0
    wait_for(lambda: stack.archived() >= 1, what="an archived event")
    wait_for(lambda: stack_status(stack.settings).projections_published_at, what="a snapshot")
    opened = []
    for root, folders, files in os.walk(stack.settings.home):
        for name in [*folders, *files]:
            path = os.path.join(root, name)
            mode = os.lstat(path).st_mode
            if name != "up.log" and not stat.S_ISLNK(mode) and stat.S_IMODE(mode) & 0o077:
                opened.append(path)
    assert opened == []


def test_a_store_a_killed_replay_left_is_removed_and_one_being_built_is_not(
    stack: Stack, env: dict[str, str]
) -> None:
    payload = {"session_id": "folded", "hook_event_name": "UserPromptSubmit", "prompt": "folded"}
    assert run_hook(json.dumps(payload).encode(), env).returncode == 0
    folded = "select count(*) from prompts where session_id = 'folded'"
    wait_for(lambda: stack.query(folded) == [(1,)], what="the projector to fold, past its start")
    root = stack.settings.projections_dir
    orphan = new_store(root)  # what a replay killed before its swap leaves
    built = new_store(root)
    with lock_directory(built.path, "a replay is building it"):
        wait_for(lambda: not os.path.exists(orphan.path), what="the projector to remove the orphan")
        assert os.path.isdir(built.path)
    remove_store(built)


def _children(pid: int) -> set[int]:
    found = set()
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as f:
                if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                    found.add(int(entry))
        except (OSError, ValueError, IndexError):
            continue
    return found


def test_a_worker_killed_outright_leaves_no_process_behind(stack: Stack) -> None:
    [name] = wait_for(lambda: _pids(stack)[1], what="a worker")
    worker = int(name.split(".")[1])
    [scheduler] = wait_for(lambda: _children(worker), what="the worker's scheduler, which RQ forks")
    os.kill(worker, signal.SIGKILL)
    wait_for(
        lambda: not os.path.exists(f"/proc/{scheduler}") or _zombie(scheduler), what="the scheduler gone too"
    )


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True
