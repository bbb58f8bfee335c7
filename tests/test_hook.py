"""The hook in-process: what it makes of good and bad input when Redis cannot be reached."""

import contextlib
import io
import json
import os

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.dead_letters import count_dead_letters
from ingest.envelope import Rejected
from ingest.hook import parse_payload, record_hook
from ingest.spool import spooled
from schemas.dead_letters import DeadLetter
from schemas.events import InvalidEvent, decode_event
from schemas.settings import Settings


class Pipe(io.BytesIO):
    def isatty(self) -> bool:
        return False


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


def test_secrets_in_a_dead_letter_head_are_redacted(home: str) -> None:
    record_hook([], Pipe(b"oops OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz {"), offline_env(home))
    [letter] = dead_letters(home)
    assert "abcdefghijklmnopqrstuvwxyz" not in letter.head


def test_parse_names_the_problem() -> None:
    try:
        parse_payload(b"NaN", None)
    except Rejected as e:
        assert "expected a JSON object" in str(e)
    else:
        raise AssertionError("NaN is not a payload")


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
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
