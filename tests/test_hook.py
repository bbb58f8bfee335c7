"""The hook, in-process and as the real process: what it makes of good and bad input when
Redis cannot be reached."""

import contextlib
import io
import json
import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import msgspec
import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest import hook
from ingest.dead_letters import count_dead_letters
from ingest.envelope import Rejected
from ingest.hook import handle_hook, parse_payload
from ingest.spool import spooled
from ingest.truncate import EVENT_LIMIT, MAX_DEPTH, MAX_INPUT
from schemas.events import DeadLetter, InvalidEvent, decode_event, payload_of
from schemas.kinds import HOOK_KINDS
from schemas.observed import ToolUsed
from schemas.settings import STREAM, Settings
from tests.support.processes import BIN, run_hook, wait_for


class Pipe(io.BytesIO):
    def isatty(self) -> bool:
        return False


def record_hook(argv: list[str], stdin: io.BytesIO, environ: dict[str, str]) -> str:
    """Where the hook put what it was given: stream, spool or dead-letter."""
    return handle_hook(argv, stdin, environ)[0]


def offline_env(home: str) -> dict[str, str]:
    return {"REVERIE_HOME": home, "REDIS_URL": f"unix://{home}/nobody.sock"}


def dead_letters(home: str) -> list[DeadLetter]:
    folder = Settings(home).dead_letter_dir
    return [
        msgspec.json.decode(open(os.path.join(folder, n), "rb").read(), type=DeadLetter)
        for n in sorted(os.listdir(folder))
    ]


def test_without_redis_the_event_is_spooled_whole(home: str) -> None:
    payload = {"session_id": "s1", "hook_event_name": "UserPromptSubmit", "prompt": "fix the build"}
    assert record_hook([], Pipe(json.dumps(payload).encode()), offline_env(home)) == "spool"
    [path] = spooled(Settings(home).spool_dir)
    event = decode_event(open(path, "rb").read())
    assert event.kind == "prompt.submitted"
    assert os.path.basename(path) == event.id + ".json"
    assert json.loads(bytes(event.payload))["prompt"] == "fix the build"


def test_with_hooks_off_the_hook_records_nothing_and_prints_nothing(env: dict[str, str], home: str) -> None:
    payload = {"session_id": "s1", "hook_event_name": "UserPromptSubmit", "prompt": "fix the build"}
    result = run_hook(
        json.dumps(payload).encode(), {**env, "REDIS_URL": "redis://127.0.0.1:1", "REVERIE_HOOKS_OFF": "1"}
    )
    assert (result.returncode, result.stdout) == (0, b"")
    assert spooled(Settings(home).spool_dir) == [] and count_dead_letters(Settings(home).dead_letter_dir) == 0
    recorded = run_hook(json.dumps(payload).encode(), {**env, "REDIS_URL": "redis://127.0.0.1:1"})
    assert recorded.returncode == 0 and len(spooled(Settings(home).spool_dir)) == 1  # the same, recorded


def test_a_bad_redis_url_still_spools(home: str) -> None:
    env = {"REVERIE_HOME": home, "REDIS_URL": "mongodb://nope"}
    assert record_hook(["Stop"], Pipe(b'{"session_id": "s"}'), env) == "spool"


def test_the_event_name_argument_wins_over_the_payload(home: str) -> None:
    record_hook(
        ["PostToolUse"], Pipe(b'{"hook_event_name": "PreToolUse", "tool_name": "Bash"}'), offline_env(home)
    )
    [path] = spooled(Settings(home).spool_dir)
    assert decode_event(open(path, "rb").read()).kind == "tool.used"


def test_malformed_input_becomes_a_dead_letter_with_reason_and_head(home: str) -> None:
    cases = {
        b"": "empty input",
        b"not json at all": "not JSON",
        b"[1, 2, 3]": "expected a JSON object, got list",
        b'{"hook_event_name": "Bogus"}': "unknown hook event 'Bogus'",
        b'{"session_id": 42, "hook_event_name": "Stop"}': "session_id must be a string",
        b'{"prompt": "x"}': "no hook event name",
        b"\xff\xfe\x00binary": "not JSON",
    }
    seen: set[str] = set()
    for raw, reason in cases.items():
        assert record_hook([], Pipe(raw), offline_env(home)) == "dead-letter"
        [letter] = [d for d in dead_letters(home) if d.id not in seen]
        seen.add(letter.id)
        assert reason in letter.reason
        assert letter.stage == "hook"
        assert letter.size == len(raw)
        assert letter.head == raw.decode("utf-8", "backslashreplace")
    assert spooled(Settings(home).spool_dir) == []


def test_a_terminal_on_stdin_is_not_waited_for(home: str) -> None:
    class Terminal(Pipe):
        def isatty(self) -> bool:
            return True

    assert record_hook(["Stop"], Terminal(b""), offline_env(home)) == "dead-letter"
    assert "stdin is not a pipe" in dead_letters(home)[0].reason


# what a person types; the last two, an option after the event or standing for stdin
ASKED_BY_HAND = [["--help"], ["-h"], ["--version"], ["-x", "Stop"], ["Stop", "--verbose"], ["-"]]


def hook_commands(*args: str) -> list[list[str]]:
    """The hook as `reverie hook` and as `reverie install` writes it (the launcher, without site)."""
    from reverie.installing.entries import launcher_command

    python, *flags, launcher, _, _, _ = shlex.split(launcher_command("Stop"))  # ... EVENT || true
    return [[str(BIN), "hook", *args], [python, *flags, launcher, *args]]


@pytest.mark.parametrize("args", ASKED_BY_HAND, ids=" ".join)
def test_a_person_asking_the_hook_for_help_is_told_and_nothing_is_recorded(
    tmp_path: str, args: list[str]
) -> None:
    missing = os.path.join(tmp_path, "no-memory-here")  # and nothing makes it
    env = {
        "PATH": os.environ["PATH"],
        "XDG_CACHE_HOME": os.path.join(tmp_path, "cache"),
        **offline_env(missing),
    }
    payload = json.dumps({"session_id": "s1", "hook_event_name": "Stop"}).encode()  # a payload, all the same
    for command in hook_commands(*args):
        result = subprocess.run(command, input=payload, env=env, capture_output=True, timeout=60)
        assert result.returncode == 0 and result.stderr == b"", result.stderr
        told = " ".join(result.stdout.decode().split())
        assert told.startswith("usage: reverie hook [EVENT]") and "payload on stdin" in told
        assert all(event in told for event in HOOK_KINDS)
    assert not os.path.exists(missing)  # no dead letter, no spool file, no folder


def test_a_terminal_on_the_hooks_stdin_is_a_person_told_its_usage(tmp_path: Path) -> None:
    import pty

    missing = os.path.join(tmp_path, "no-memory-here")
    env = {
        "PATH": os.environ["PATH"],
        "XDG_CACHE_HOME": os.path.join(tmp_path, "cache"),
        **offline_env(missing),
    }
    for command in hook_commands("Stop"):
        controller, terminal = pty.openpty()
        try:
            result = subprocess.run(command, stdin=terminal, env=env, capture_output=True, timeout=60)
        finally:
            os.close(terminal)
            os.close(controller)
        assert result.returncode == 0 and result.stdout.startswith(b"usage: reverie hook"), result.stderr
    assert not os.path.exists(missing)


def test_secrets_in_a_dead_letter_head_are_redacted(home: str) -> None:
    record_hook([], Pipe(b"oops OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz {"), offline_env(home))
    [letter] = dead_letters(home)
    assert "abcdefghijklmnopqrstuvwxyz" not in letter.head


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        (b'{"session_id": "a", "prompt": "abc', "Unterminated string"),
        (b'{"session_id": "a", "prompt": 1', "Expecting ',' delimiter"),
        (b'{"session_id" 1}', "Expecting ':' delimiter"),
    ],
)
def test_a_payload_cut_off_midway_is_a_dead_letter_that_says_it_is_not_json(
    env: dict[str, str], home: str, raw: bytes, said: str
) -> None:
    """As the real hook runs: no `json` imported, whose errors Python 3.11's `_json` raises."""
    offline = {**env, **offline_env(home)}
    assert run_hook(raw, offline, "UserPromptSubmit").returncode == 0
    [letter] = dead_letters(home)
    assert letter.reason.startswith(f"not JSON: {said}"), letter.reason
    assert letter.head == raw.decode()


def test_a_secret_in_a_payload_cut_off_midway_is_redacted_in_its_dead_letter(
    env: dict[str, str], home: str
) -> None:
    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    said = f"use AKIAIOSFODNN7EXAMPLE with secret {secret}, the password is hunter2-Xy9!"
    raw = f'{{"session_id": "a", "prompt": "{said}'
    assert run_hook(raw.encode(), {**env, **offline_env(home)}, "UserPromptSubmit").returncode == 0
    [letter] = dead_letters(home)
    stored = open(os.path.join(Settings(home).dead_letter_dir, letter.id + ".json")).read()
    for kept in (secret, "AKIAIOSFODNN7EXAMPLE", "hunter2-Xy9!"):
        assert kept not in stored
    assert letter.head.startswith('{"session_id": "a", "prompt": "use [REDACTED:')


def test_parse_names_the_problem() -> None:
    try:
        parse_payload(b"NaN", None)
    except Rejected as e:
        assert "expected a JSON object" in str(e)
    else:
        raise AssertionError("NaN is not a payload")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.one_of(
        st.binary(max_size=2000),
        st.text(max_size=2000).map(str.encode),
        st.recursive(
            st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=50),
            lambda children: (
                st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5)
            ),
            max_leaves=30,
        ).map(lambda v: json.dumps(v).encode()),
        st.fixed_dictionaries(
            {"hook_event_name": st.sampled_from(["Stop", "PostToolUse", "SessionStart", "x"])},
            optional={
                "session_id": st.none() | st.integers() | st.text(max_size=20),
                "tool_input": st.none()
                | st.text(max_size=20)
                | st.dictionaries(st.text(max_size=5), st.integers()),
                "agent_id": st.none() | st.integers() | st.text(max_size=20),
            },
        ).map(lambda v: json.dumps(v).encode()),
    )
)
def test_whatever_arrives_the_hook_keeps_exactly_one_record_of_it(home: str, raw: bytes) -> None:
    settings_ = Settings(home)

    def records() -> int:
        return len(spooled(settings_.spool_dir)) + count_dead_letters(settings_.dead_letter_dir)

    before = records()
    where = record_hook([], Pipe(raw), offline_env(home))
    assert where in ("spool", "dead-letter")
    assert records() == before + 1
    if where == "spool":
        newest = max(spooled(settings_.spool_dir), key=os.path.getmtime)
        # well-formed but mistyped is fine: the dispatcher dead-letters it, with the reason
        with contextlib.suppress(InvalidEvent):
            decode_event(open(newest, "rb").read())


def hook_process(raw: bytes, env: dict[str, str], home: str) -> dict[str, Any]:
    """Run the real `reverie hook` on `raw` with no Redis: the payload of the event it spooled,
    which must be a tool.used event that decodes as the dispatcher decodes it."""
    assert run_hook(raw, env, "PostToolUse").returncode == 0
    assert count_dead_letters(Settings(home).dead_letter_dir) == 0
    [path] = spooled(Settings(home).spool_dir)
    data = open(path, "rb").read()
    assert len(data) <= EVENT_LIMIT
    event = decode_event(data)
    assert event.session_id == "s1"
    assert isinstance(payload_of(event), ToolUsed)
    payload: dict[str, Any] = json.loads(bytes(event.payload))
    assert payload["tool_name"] == "Bash"
    return payload


PAYLOAD_HEAD = '{"session_id":"s1","hook_event_name":"PostToolUse","tool_name":"Bash","tool_response":'


@pytest.mark.parametrize("depth", [500, 5000])
@pytest.mark.parametrize("nest", [("[", "]"), ('{"a":', "}")], ids=["lists", "objects"])
def test_deep_nesting_is_cut_not_dead_lettered(
    env: dict[str, str], home: str, depth: int, nest: tuple[str, str]
) -> None:
    deep = nest[0] * depth + '"leaf"' + nest[1] * depth
    payload = hook_process(f'{PAYLOAD_HEAD}{deep},"tool_use_id":"t1"}}'.encode(), env, home)
    assert payload["tool_use_id"] == "t1"  # what follows the deep part is kept
    value, levels = payload["tool_response"], 0
    while not isinstance(value, str):
        value, levels = value[0] if isinstance(value, list) else value["a"], levels + 1
    assert levels == MAX_DEPTH - 1  # the payload itself is the first level
    assert value.startswith(f"…[reverie: nesting deeper than {MAX_DEPTH} cut")


def test_millions_of_items_keep_a_head_not_dead_lettered(env: dict[str, str], home: str) -> None:
    items = "[" + ",".join(['"x"'] * 3_300_000) + "]"
    response = hook_process(f"{PAYLOAD_HEAD}{items}}}".encode(), env, home)["tool_response"]
    assert 100 <= len(response) < 3_300_000
    assert response[:-1] == ["x"] * (len(response) - 1)
    assert response[-1].startswith("…[reverie:")


def test_a_million_keys_keep_a_head_not_dead_lettered(env: dict[str, str], home: str) -> None:
    keys = "{" + ",".join(f'"k{i:07d}":"v"' for i in range(1_000_000)) + "}"
    response = hook_process(f"{PAYLOAD_HEAD}{keys}}}".encode(), env, home)["tool_response"]
    kept = [k for k in response if k != "reverie_truncated"]
    assert 100 <= len(kept) < 1_000_000
    assert kept == [f"k{i:07d}" for i in range(len(kept))]
    assert all(response[k] == "v" for k in kept)
    assert "reverie" in response["reverie_truncated"]


def test_a_payload_over_max_input_keeps_its_fields_and_a_head(env: dict[str, str], home: str) -> None:
    raw = (
        b'{"session_id":"s1","hook_event_name":"PostToolUse","cwd":"/repo","tool_name":"Bash",'
        b'"tool_input":{"command":"cat build.log"},"tool_response":{"stdout":"'
        + b"y" * MAX_INPUT
        + b'","stderr":""},"tool_use_id":"t1"}'
    )
    payload = hook_process(raw, env, home)
    assert payload["cwd"] == "/repo"
    assert payload["tool_input"] == {"command": "cat build.log"}
    stdout = payload["tool_response"]["stdout"]
    assert stdout.startswith("y" * 1000)
    assert stdout.endswith(f"…[reverie: the payload ran past {MAX_INPUT} bytes: the rest is cut]")
    assert "ran past" in payload["tool_response"]["reverie_truncated"]
    assert "ran past" in payload["reverie_truncated"]
    assert "tool_use_id" not in payload  # it came after the cut


def test_an_oversized_payload_that_is_no_json_keeps_its_head(
    home: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(hook, "MAX_INPUT", 4096)
    assert record_hook(["Stop"], Pipe(b"x" * 10_000), offline_env(home)) == "dead-letter"
    [letter] = dead_letters(home)
    assert "larger than 4096 bytes" in letter.reason
    assert letter.head == "x" * 512
    assert letter.size == 4096


def test_with_a_redis_elsewhere_a_hook_that_reaches_it_delivers_what_waited_in_the_spool(
    env: dict[str, str], home: str
) -> None:
    """A compose stack's dispatcher never sees this host's spool: the hooks deliver it."""
    server_home = tempfile.mkdtemp(prefix="rv-srv-")
    server = subprocess.Popen([str(BIN), "server"], env={**env, "REVERIE_HOME": server_home})
    try:
        elsewhere = Settings(server_home)
        down = {**env, "REDIS_URL": f"unix://{server_home}/nobody.sock"}
        up = {**env, "REDIS_URL": elsewhere.redis_url}
        for n in range(3):
            prompt = {"session_id": "s1", "hook_event_name": "UserPromptSubmit", "prompt": f"while down {n}"}
            assert run_hook(json.dumps(prompt).encode(), down).returncode == 0
        assert len(spooled(Settings(home).spool_dir)) == 3
        client: Any = redis.Redis.from_url(elsewhere.redis_url)
        wait_for(lambda: os.path.exists(elsewhere.socket_path) and client.ping(), what="the server")
        prompt = {"session_id": "s1", "hook_event_name": "UserPromptSubmit", "prompt": "back up"}
        assert run_hook(json.dumps(prompt).encode(), up).returncode == 0
        wait_for(lambda: not spooled(Settings(home).spool_dir), what="the spool to be delivered")
        sent = [json.loads(bytes(decode_event(fields[b"e"]).payload)) for _, fields in client.xrange(STREAM)]
        assert sorted(p["prompt"] for p in sent) == [
            "back up",
            "while down 0",
            "while down 1",
            "while down 2",
        ]
    finally:
        server.terminate()
        server.wait(30)
        shutil.rmtree(server_home, ignore_errors=True)


def test_a_hook_hung_up_on_and_told_to_end_still_records_its_event(home: str) -> None:
    """A closed terminal hangs up on the whole session, and Claude Code may end a hook it runs
    as it exits: the installed hook takes its payload and records it all the same."""
    from reverie.installing.entries import launcher_command

    env = {"PATH": os.environ["PATH"], **offline_env(home)}
    hook_process = subprocess.Popen(
        ["/bin/sh", "-c", f"exec {launcher_command('Stop').removesuffix(' || true')}"],
        stdin=subprocess.PIPE, env=env, start_new_session=True,
    )  # fmt: skip

    def ignoring(signal_number: int) -> bool:
        """Whether the hook has set `signal_number` aside (its SigIgn mask says so)."""
        with open(f"/proc/{hook_process.pid}/status") as status:
            mask = next(line.split()[1] for line in status if line.startswith("SigIgn:"))
        return bool(int(mask, 16) >> (signal_number - 1) & 1)

    wait_for(lambda: ignoring(15) and ignoring(1), timeout=60, what="the hook to set the signals aside")
    os.killpg(hook_process.pid, 1)  # SIGHUP, then SIGTERM, before it has read its payload
    os.killpg(hook_process.pid, 15)
    assert hook_process.stdin is not None
    hook_process.stdin.write(b'{"session_id": "s1", "hook_event_name": "Stop"}')
    hook_process.stdin.close()
    assert hook_process.wait(60) == 0
    [path] = spooled(Settings(home).spool_dir)
    assert decode_event(open(path, "rb").read()).kind == "assistant.stopped"


@pytest.mark.parametrize("hook_name", ["UserPromptSubmit", "SessionStart", "PostToolUse", "Stop"])
def test_the_installed_hook_imports_no_re_for_a_usual_payload(home: str, hook_name: str) -> None:
    """`re` would cost every hook about 5 ms: a prompt of usual length goes to the service whole,
    and it is `re` that reads its gist there."""
    from ingest.envelope import compile_patterns
    from reverie.installing.entries import launcher_command

    cache = os.path.join(home, "cache")  # this test's own: no other process stores into it meanwhile
    with pytest.MonkeyPatch.context() as patched:
        patched.setenv("XDG_CACHE_HOME", cache)
        compile_patterns()  # as `reverie install` does: a fresh machine's first hook would compile them
    payload = {
        "session_id": "s1", "hook_event_name": hook_name, "source": "startup", "tool_name": "Bash",
        "prompt": "why does the upload fail with ERR_QUOTA_4711 since the deploy? " * 30,
        "tool_input": {"command": "make test"}, "last_assistant_message": "The build passes.",
    }  # fmt: skip
    python, *flags, launcher, _, _, _ = shlex.split(launcher_command(hook_name))  # ... EVENT || true
    told = "import atexit, sys; atexit.register(lambda: print('re' in sys.modules, file=sys.stderr))"
    env = {"PATH": os.environ["PATH"], "XDG_CACHE_HOME": cache, **offline_env(home)}
    result = subprocess.run(
        [python, *flags, "-c", f"{told}; sys.argv = [{launcher!r}, {hook_name!r}]; "
         f"exec(open({launcher!r}).read(), {{'__name__': '__main__', '__file__': {launcher!r}}})"],
        input=json.dumps(payload).encode(), env=env, capture_output=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0 and result.stderr.decode().strip() == "False", result.stderr
    [path] = spooled(Settings(home).spool_dir)
    assert decode_event(open(path, "rb").read()).kind == HOOK_KINDS[hook_name]
