"""The whole backbone with real parts: the embedded server, `reverie up`, hook processes, the log."""

import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given
from hypothesis import settings as examples
from hypothesis import strategies as st
from rq import Queue

from ingest.project import ROOT_FIELD, place_of
from ingest.redact import redact, redact_text
from ingest.truncate import cut
from schemas.kinds import HOOK_KINDS
from schemas.settings import QUEUE, STREAM, Settings
from tests.support.captures import SHARED, TRANSCRIPTS, fixture_payloads
from tests.support.processes import BIN, RECORDED, Stack, run_hook, server_pid, stack_processes, wait_for
from workers.supervisor import running_pid

pytestmark = pytest.mark.integration


def prompt(marker: str, session: str = "s-int") -> bytes:
    return json.dumps(
        {"session_id": session, "hook_event_name": "UserPromptSubmit", "prompt": marker, "cwd": "/tmp"}
    ).encode()


def canonical(value: Any) -> str:
    """Comparable JSON, lone surrogates replaced as the hook replaces them."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def test_every_fixture_payload_is_archived_with_its_fields(stack: Stack, env: dict[str, str]) -> None:
    payloads = fixture_payloads()
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda p: run_hook(json.dumps(p[1]).encode(), env), payloads))
    assert all(r.returncode == 0 and r.stdout == b"" for r in results)
    wait_for(lambda: stack.recorded() == len(payloads), what=f"{len(payloads)} archived events")
    stored = stack.query(
        f"select kind, session_id, agent, source, payload::varchar from events where {RECORDED}"
    )
    expected = sorted(
        (HOOK_KINDS[p["hook_event_name"]], p["session_id"], p.get("agent_id", "main"), "claude-code",
         canonical(redact(p, text=lambda s: cut(s, clean=redact_text))))
        for _, p in payloads
    )  # fmt: skip
    roots: dict[str, set[str]] = {}
    got = []
    for kind, sid, agent, source, body in stored:
        payload = json.loads(body)
        roots.setdefault(sid, set()).add(payload.pop(ROOT_FIELD))
        got.append((kind, sid, agent, source, canonical(payload)))
    assert sorted(got) == expected
    # and the root of the worktree its session works in: one a session, where its first hook
    # placed it (these sessions' folders are not on this disk, and Claude Code names one of
    # them two ways, C:\ and c:\: the hooks ran at once, so either may have come first)
    for session, found in roots.items():
        began = {place_of(p, {})[1] for _, p in payloads if p["session_id"] == session}
        assert len(found) == 1 and found <= began, (session, found, began)
    assert stack.query("select count(*) from dead_letters") == [(0,)]


def test_eight_concurrent_hook_processes_lose_nothing(stack: Stack, env: dict[str, str]) -> None:
    def hook_a_hundred(writer: int) -> list[int]:
        return [run_hook(prompt(f"w{writer}-e{i}"), env).returncode for i in range(100)]

    with ThreadPoolExecutor(8) as pool:
        codes = [c for batch in pool.map(hook_a_hundred, range(8)) for c in batch]
    assert codes == [0] * 800
    wait_for(lambda: stack.recorded() == 800, timeout=60, what="800 archived events")
    [(count, distinct_ids, distinct_prompts)] = stack.query(
        "select count(*), count(distinct id), count(distinct payload->>'prompt') "
        f"from events where {RECORDED}"
    )
    assert count == distinct_ids == distinct_prompts == 800


def test_with_redis_down_hooks_spool_and_everything_arrives_once(
    env: dict[str, str], settings: Settings
) -> None:
    for i in range(30):
        result = run_hook(prompt(f"offline-{i}"), env)
        assert (result.returncode, result.stdout) == (0, b"")
    assert len(os.listdir(settings.spool_dir)) == 30
    stack = Stack(env, settings).start()
    try:
        wait_for(lambda: stack.recorded() == 30, what="the spool to be delivered")
        assert os.listdir(settings.spool_dir) == []
        [(count, distinct)] = stack.query(
            f"select count(*), count(distinct payload->>'prompt') from events where {RECORDED}"
        )
        assert count == distinct == 30
    finally:
        stack.stop()


def test_a_frozen_server_makes_hooks_spool_and_nothing_is_doubled(stack: Stack, env: dict[str, str]) -> None:
    pid = server_pid(stack.settings)
    os.kill(pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        results = [run_hook(prompt(f"frozen-{i}"), env) for i in range(10)]
        elapsed = time.monotonic() - started
    finally:
        os.kill(pid, signal.SIGCONT)
    assert all((r.returncode, r.stdout) == (0, b"") for r in results)
    assert elapsed < 10 * 2  # each hook gave up on the frozen server within its deadline
    # The commands the frozen server had queued are applied when it wakes, and the spool is
    # drained too: every event reaches the stream twice, and the log must keep each once.
    from workers.status import stack_status

    def settled() -> bool:
        state = stack_status(stack.settings)
        return state.spooled == 0 and state.stream_length == 0 and state.pending == 0 and state.archived >= 10

    wait_for(settled, what="the spool and the stream to be archived")
    [(count, distinct)] = stack.query(
        f"select count(*), count(distinct payload->>'prompt') from events where {RECORDED}"
    )
    assert count == distinct == 10
    history = b"".join(p.read_bytes() for p in Path(stack.settings.redis_dir).rglob("*.aof"))
    assert history.count(b"frozen-3") == 2  # it was delivered twice indeed


def test_the_dispatcher_killed_at_any_moment_loses_nothing_and_doubles_nothing(
    env: dict[str, str], settings: Settings
) -> None:
    server = subprocess.Popen([str(BIN), "server"], env=env)
    try:
        wait_for(lambda: os.path.exists(settings.socket_path), what="the server socket")
        client = redis.Redis.from_url(settings.redis_url)
        wait_for(lambda: client.ping(), what="the server")
        sent = _fill_stream(client, 30_000)
        rng = random.Random(7)
        for _ in range(6):
            dispatcher = subprocess.Popen([str(BIN), "dispatch"], env=env, stderr=subprocess.DEVNULL)
            time.sleep(rng.uniform(0.8, 2.5))  # import time, then somewhere inside a batch
            dispatcher.send_signal(signal.SIGKILL)
            dispatcher.wait()
        dispatcher = subprocess.Popen([str(BIN), "dispatch"], env=env, stderr=subprocess.DEVNULL)
        try:
            wait_for(lambda: client.xlen(STREAM) == 0, timeout=120, what="the stream to be archived")
        finally:
            dispatcher.terminate()
            dispatcher.wait(30)
    finally:
        server.terminate()
        server.wait(30)
    stack = Stack(env, settings)
    [(count, distinct)] = stack.query("select count(*), count(distinct id) from events")  # no worker ran
    assert count == distinct == 30_000
    assert {row[0] for row in stack.query("select id from events")} == sent


def _fill_stream(client: redis.Redis, n: int) -> set[str]:
    from ingest.emit import append
    from ingest.envelope import encode_event
    from schemas.ids import new_event_id, utc_now_iso

    ids, batch = set(), []
    for i in range(n):
        event_id, now = new_event_id(), utc_now_iso()
        ids.add(event_id)
        batch.append(
            encode_event(
                "prompt.submitted",
                {"session_id": "k", "prompt": f"p{i}"},
                event_id=event_id,
                ts=now,
                recorded_at=now,
                project="p",
                source="test",
            )
        )
    for start in range(0, n, 1000):
        append(client, batch[start : start + 1000])
    return ids


def test_secrets_never_reach_the_stream_or_the_log(stack: Stack, env: dict[str, str]) -> None:
    secrets = ["sk-ant-api03-SECRETSECRETSECRET0001", "hunter2hunter2", "ghp_SECRETSECRETSECRETSECRET0002"]
    payload: dict[str, Any] = {
        "session_id": "s",
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": f"curl -u me postgres://me:{secrets[1]}@db/x -H 'x-api-key: {secrets[0]}'"},
        "tool_response": {"stdout": f"GITHUB_TOKEN={secrets[2]}", "stderr": ""},
    }
    assert run_hook(json.dumps(payload).encode(), env).returncode == 0
    run_hook(f"broken {secrets[0]} {{".encode(), env)
    wait_for(lambda: stack.recorded() == 1, what="the event")
    client = redis.Redis.from_url(stack.settings.redis_url)
    client.bgrewriteaof()  # nothing in the server's own history either
    for path in Path(stack.settings.home).rglob("*"):
        if path.is_file() and not path.is_socket():
            data = path.read_bytes()
            assert not [s for s in secrets if s.encode() in data], path


def test_fifty_megabytes_of_input_never_fail_the_hook(stack: Stack, env: dict[str, str]) -> None:
    huge = {"session_id": "s", "hook_event_name": "PostToolUse", "tool_name": "Read",
            "tool_response": {"content": "z" * 50_000_000}}  # fmt: skip
    result = run_hook(json.dumps(huge).encode(), env)
    assert (result.returncode, result.stdout) == (0, b"")
    garbage = run_hook(os.urandom(50_000_000), env)
    assert (garbage.returncode, garbage.stdout) == (0, b"")
    wait_for(lambda: stack.recorded() == 1, what="the truncated event")
    [(size, marker)] = stack.query(
        "select length(payload->>'$.tool_response.content'), "
        "contains(payload->>'$.tool_response.content', 'reverie: truncated') from events"
    )
    assert marker and size < 100_000
    assert stack.query("select size from dead_letters") == [(50_000_000,)]


def test_import_is_idempotent_and_reports_what_it_did(stack: Stack, env: dict[str, str]) -> None:
    first = subprocess.run([str(BIN), "import", str(TRANSCRIPTS)], env=env, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    [(count,)] = stack.query(f"select count(*) from events where {RECORDED}")
    assert f"{count} new" in first.stdout
    assert "tool.used" in first.stdout  # the summary table
    second = subprocess.run([str(BIN), "import", str(TRANSCRIPTS)], env=env, capture_output=True, text=True)
    assert second.returncode == 0, second.stderr
    assert "0 new" in second.stdout
    recorded = f"select count(*), count(distinct id) from events where {RECORDED}"
    assert stack.query(recorded) == [(count, count)]
    finished = Queue(QUEUE, connection=redis.Redis.from_url(stack.settings.redis_url)).finished_job_registry
    wait_for(lambda: finished.count > 0, what="the worker to run the batch jobs")


def test_import_without_a_stack_says_how_to_start_one(env: dict[str, str]) -> None:
    result = subprocess.run([str(BIN), "import", str(TRANSCRIPTS)], env=env, capture_output=True, text=True)
    assert result.returncode == 1
    assert "reverie up --detach" in result.stderr and "Traceback" not in result.stderr
    missing = subprocess.run([str(BIN), "import", "/no/such/dir"], env=env, capture_output=True, text=True)
    assert missing.returncode == 1 and "no such file or folder" in missing.stderr


def test_up_detached_status_and_down(env: dict[str, str], settings: Settings) -> None:
    up = subprocess.run([str(BIN), "up", "--detach"], env=env, capture_output=True, text=True, timeout=120)
    assert up.returncode == 0, up.stderr
    try:
        status = subprocess.run([str(BIN), "status", "--json"], env=env, capture_output=True, text=True)
        state = json.loads(status.stdout)
        assert state["reachable"] and state["stack_pid"] and state["dispatchers"] and state["workers"]
        assert state["stream_length"] == 0 and state["spooled"] == 0

        def published() -> object:
            status = subprocess.run([str(BIN), "status", "--json"], env=env, capture_output=True, text=True)
            state = json.loads(status.stdout)
            return state["projections_published_at"] and state["vectors_published_at"]

        wait_for(
            published, timeout=60, what="the projector's first snapshot and the embedder's first manifest"
        )
        human = subprocess.run([str(BIN), "status"], env=env, capture_output=True, text=True)
        assert "snapshot published" in human.stdout and "manifest published" in human.stdout

        def mcp_server() -> object:
            status = subprocess.run([str(BIN), "status", "--json"], env=env, capture_output=True, text=True)
            return json.loads(status.stdout)["mcp_server"].endswith("(listening)") and status.stdout

        said = json.loads(wait_for(mcp_server, timeout=60, what="status to see the MCP server listen"))
        port = json.loads(Path(settings.mcp_file).read_text())["port"]
        assert said["mcp_server"] == f"http://127.0.0.1:{port}/mcp (listening)"
        human = subprocess.run([str(BIN), "status"], env=env, capture_output=True, text=True)
        assert said["mcp_server"] in human.stdout
        again = subprocess.run([str(BIN), "up", "--detach"], env=env, capture_output=True, text=True)
        assert again.returncode == 0 and "already running" in again.stdout
        server = server_pid(settings)
    finally:
        down = subprocess.run([str(BIN), "down"], env=env, capture_output=True, text=True, timeout=120)
    assert down.returncode == 0 and "stopped" in down.stdout
    assert running_pid(settings) is None
    assert Path(settings.run_dir, "reverie.pid").read_text() == ""
    assert not Path(f"/proc/{server}").exists()
    assert stack_processes(settings) == {}, "down returned while a process of the stack still ran"
    down_status = subprocess.run([str(BIN), "status", "--json"], env=env, capture_output=True, text=True)
    assert down_status.returncode == 1 and json.loads(down_status.stdout)["reachable"] is False
    assert json.loads(down_status.stdout)["mcp_server"].startswith("not running")


def readme_run_it() -> str:
    """The README's "Run it" commands as a user pastes them into one shell, but for the set-up
    of the virtual environment, which this one is."""
    section = (Path(__file__).resolve().parents[1] / "README.md").read_text().split("## Run it", 1)[1]
    blocks = re.findall(r"```sh\n(.*?)```", section.split("\n## ", 1)[0], re.DOTALL)
    first, *rest = [line for block in blocks for line in block.splitlines() if line.strip()]
    kept = [c for c in first.split(" && ") if not c.startswith(("python3 -m venv", ".venv/bin/pip"))]
    return "\n".join([" && ".join(kept), *rest])


def test_the_readmes_first_commands_keep_the_demo_apart_from_your_memory() -> None:
    scratch = Path(tempfile.mkdtemp(prefix="rv-"))  # short: the stack's sockets live under it
    checkout, home = scratch / "reverie", scratch / "home"
    checkout.mkdir()
    home.mkdir()
    (checkout / ".venv").symlink_to(Path(sys.executable).parents[1])
    (scratch / "shared").symlink_to(SHARED)
    unset = ("REVERIE_HOME", "REDIS_URL", "XDG_DATA_HOME", "CLAUDE_PROJECT_DIR")
    env = {k: v for k, v in os.environ.items() if k not in unset} | {"HOME": str(home)}
    # then what memory the user has, with the demo's REVERIE_HOME unset as the README says
    mine = '.venv/bin/reverie sql "select count(*) from events" --csv 2>&1 || echo "exit $?"'
    script = f"set -e\n{readme_run_it()}\necho mine:\n{mine}\n"
    try:
        done = subprocess.run(
            ["bash", "-c", script], cwd=checkout, env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "reverie is up" in done.stdout and "reverie stopped" in done.stdout
        said = done.stdout.split("mine:\n", 1)[1]  # nothing of the demo: no memory there at all
        assert said.startswith("error: no memory in ") and said.endswith("exit 1\n"), said
        assert not (home / ".local" / "share" / "reverie").exists()
        demo = {**env, "REVERIE_HOME": str(checkout / ".demo")}
        counted = subprocess.run(
            [str(BIN), "sql", "select count(distinct session_id) from events", "--csv"],
            env=demo, capture_output=True, text=True, check=True,
        )  # fmt: skip
        assert int(counted.stdout.splitlines()[1]) >= len(list(TRANSCRIPTS.glob("*.jsonl")))
    finally:
        subprocess.run([str(BIN), "down"], env={**env, "REVERIE_HOME": str(checkout / ".demo")}, timeout=120)
        shutil.rmtree(scratch, ignore_errors=True)


def test_sigterm_stops_the_stack_and_all_its_processes(stack: Stack) -> None:
    server = server_pid(stack.settings)
    assert stack.stop() == 0
    assert not Path(f"/proc/{server}").exists()
    assert running_pid(stack.settings) is None


def test_the_stack_restarts_a_process_that_dies(stack: Stack) -> None:
    from workers.status import stack_status

    [before] = stack_status(stack.settings).dispatchers
    os.kill(before.pid, signal.SIGKILL)
    wait_for(
        lambda: [d for d in stack_status(stack.settings).dispatchers if d.pid != before.pid],
        timeout=30,
        what="a new dispatcher",
    )


def test_the_server_killed_mid_session_comes_back_and_nothing_is_lost(
    stack: Stack, env: dict[str, str]
) -> None:
    from workers.status import stack_status

    for phase in ("before", "during", "after"):
        if phase == "during":
            os.kill(server_pid(stack.settings), signal.SIGKILL)
        for i in range(10):
            assert run_hook(prompt(f"{phase}-{i}"), env).returncode == 0

    def settled() -> bool:
        state = stack_status(stack.settings)
        return state.reachable and state.spooled == 0 and state.stream_length == 0 and state.archived >= 30

    wait_for(settled, timeout=60, what="the restarted server and the dispatcher to catch up")
    [(count, distinct)] = stack.query(
        f"select count(*), count(distinct payload->>'prompt') from events where {RECORDED}"
    )
    assert count == distinct == 30


def test_a_stdin_never_closed_cannot_hold_the_agent(env: dict[str, str], settings: Settings) -> None:
    from ingest.hook import DEADLINE_S

    hook = subprocess.Popen(
        [str(BIN), "hook", "Stop"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert hook.stdin is not None
    hook.stdin.write(b'{"session_id": "s", "hook_event')  # ... and never finishes, never closes
    hook.stdin.flush()
    started = time.monotonic()
    assert hook.wait(timeout=DEADLINE_S + 10) == 0
    assert time.monotonic() - started < DEADLINE_S + 5
    assert hook.stdout is not None and hook.stdout.read() == b""
    hook.stdin.close()
    [letter] = os.listdir(settings.dead_letter_dir)
    assert "ran out of its" in Path(settings.dead_letter_dir, letter).read_text()


def test_a_second_stack_on_the_same_data_is_refused(stack: Stack, env: dict[str, str]) -> None:
    second = subprocess.run([str(BIN), "up"], env=env, capture_output=True, text=True, timeout=60)
    assert second.returncode == 1
    assert f"already running (pid {stack.process.pid if stack.process else '?'})" in second.stderr


def test_killing_the_supervisor_takes_its_processes_with_it(stack: Stack, env: dict[str, str]) -> None:
    assert stack.process is not None
    server = server_pid(stack.settings)
    stack.process.kill()
    stack.process.wait()
    wait_for(lambda: not Path(f"/proc/{server}").exists(), timeout=30, what="the orphaned server to stop")
    Stack(env, stack.settings).start().stop()  # the data directory is free again


def test_ctrl_c_stops_the_stack_cleanly(stack: Stack) -> None:
    assert stack.process is not None
    server = server_pid(stack.settings)
    stack.process.send_signal(signal.SIGINT)
    assert stack.process.wait(60) == 0
    assert not Path(f"/proc/{server}").exists()


def test_import_skips_sessions_the_hooks_recorded_live(stack: Stack, env: dict[str, str]) -> None:
    live = json.dumps({"session_id": "55604662-cf2a-4331-851a-ec234028f8ca", "hook_event_name": "Stop"})
    assert run_hook(live.encode(), env).returncode == 0
    wait_for(lambda: stack.recorded() == 1, what="the live event")
    result = subprocess.run(
        [str(BIN), "import", str(TRANSCRIPTS / "short.jsonl")], env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert "0 new" in result.stdout and "from sessions the hooks recorded live" in result.stdout
    assert stack.query(f"select count(*) from events where {RECORDED}") == [(1,)]


@examples(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.one_of(
        st.binary(max_size=4000),
        st.text(max_size=2000).map(str.encode),
        st.dictionaries(
            st.sampled_from(["hook_event_name", "session_id", "tool_input", "prompt", "agent_id", "cwd"]),
            st.none() | st.integers() | st.text(max_size=30) | st.lists(st.integers(), max_size=3),
        ).map(lambda v: json.dumps(v).encode()),
    ),
    st.sampled_from([[], ["Stop"], ["PostToolUse"], ["NoSuchEvent"]]),
)
def test_whatever_arrives_the_hook_process_exits_0_and_prints_nothing(
    env: dict[str, str], raw: bytes, args: list[str]
) -> None:
    result = run_hook(raw, env, *args)
    assert (result.returncode, result.stdout, result.stderr) == (0, b"", b"")


def test_sql_reads_the_projections_while_the_projector_writes(stack: Stack, env: dict[str, str]) -> None:
    import threading

    writer = threading.Thread(target=lambda: [run_hook(prompt(f"p{i}"), env) for i in range(120)])
    writer.start()
    counts: list[int] = []
    try:
        while writer.is_alive() or (counts and counts[-1] < 120):
            result = subprocess.run(
                [str(BIN), "sql", "select count(*) from prompts", "--csv"],
                env=env,
                capture_output=True,
                text=True,
            )
            assert result.returncode == 0, result.stderr
            counts.append(int(result.stdout.splitlines()[1]))
            assert len(counts) < 500, "the projections never caught up"
    finally:
        writer.join()
    assert counts == sorted(counts)  # each read sees a consistent snapshot, never going back
    assert counts[-1] == 120
    assert stack.query("select count(*) from sessions") == [(1,)]


def test_the_stack_embeds_what_it_projects(stack: Stack, env: dict[str, str]) -> None:
    imported = subprocess.run([str(BIN), "import", str(TRANSCRIPTS)], env=env, capture_output=True, text=True)
    assert imported.returncode == 0, imported.stderr

    def all_embedded() -> bool:
        [(submitted, projected, covered)] = stack.query(
            "select (select count(*) from events where kind = 'prompt.submitted'), "
            "(select count(*) from prompts) + (select count(*) from harness_messages), embedding_coverage "
            "from memory_health"
        )
        return bool(submitted and projected == submitted and covered == 1.0)

    wait_for(all_embedded, timeout=180, what="the embedder to embed every memory text")


def test_the_background_processes_give_way_to_the_hooks_and_the_recall_service(stack: Stack) -> None:
    from schemas.settings import BACKGROUND_NICENESS
    from workers.status import stack_status

    def niceness() -> dict[str, list[int]]:
        """The niceness of each thread of each process the stack started, by its command; the
        main thread's first."""
        pid = stack_status(stack.settings).stack_pid
        assert pid is not None
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        found = {}
        for child in children:
            command = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
            if b"reverie" in command:  # not the embedded server's binary
                threads = sorted(int(t.name) for t in Path(f"/proc/{child}/task").iterdir())
                found[command[command.index(b"reverie") + 1].decode()] = [
                    os.getpriority(os.PRIO_PROCESS, t) for t in threads
                ]
        return found

    base = os.getpriority(os.PRIO_PROCESS, 0)  # the stack's, as this test's
    background = min(base + BACKGROUND_NICENESS, 19)
    found = wait_for(  # each lowers itself as it starts: once they all run, the background ones have
        lambda: (
            (n := niceness()).keys() >= {"dispatch", "project", "worker", "serve"}
            and all(n[p][0] == background for p in ("project", "worker"))
            and n["serve"][0] == background  # its main thread, which reads new memories
            and background in n["serve"][1:]  # its embedding thread
            and n
        ),
        timeout=90,  # the service lowers its reading thread once its model is loaded: slow on busy cores
        what="the stack's background processes, the recall service's embedder and its reading at nice 10",
    )
    assert found["dispatch"][0] == base  # the dispatcher does not wait
    assert base in found["serve"]  # nor do the threads that answer recalls (and start their own)
