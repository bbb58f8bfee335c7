"""`reverie friction`: seed 004's signals on the fixture transcripts (counted by hand), each
signal on a small built session, the classes, the antigens, the behavioural preferences and
their events, and the five files written by the real command with no stack running."""

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import pytest

from ingest.emit import encode
from ingest.redact import redact_text
from ingest.transcripts import ImportedEvent, read_transcript
from reverie.friction import FRICTION, Session, as_event, write
from schemas import kinds
from schemas.events import Event
from tests.support.events import at, observed
from workers.friction import lessons, report
from workers.friction.signals import analyze, quality

TRANSCRIPTS = os.path.join(
    os.path.dirname(__file__), "..", "..", "shared", "fixtures", "claude-code", "transcripts"
)
LATER = at(0) + timedelta(days=1)  # every built session is over by then
NOW = datetime(2026, 11, 27, tzinfo=UTC)  # the fixtures' sessions are over by then


def fixture(name: str) -> list[Event]:
    path = os.path.join(TRANSCRIPTS, name)
    return [as_event(i) for i in read_transcript(path) if isinstance(i, ImportedEvent)]


def counted(events: list[Event]) -> dict[str, int]:
    return analyze(events, LATER).counts


# Each count found by hand with jq/grep in the transcript (line numbers are the file's):
@pytest.mark.parametrize(
    ("name", "counts"),
    [
        # lines 11-12: two tool_results "User rejected tool use" in one turn (one intervention);
        # line 13: "[Request interrupted by user for tool use]", the user's last word after one
        # prompt (line 4): abandoned, and a rapid exit
        (
            "short.jsonl",
            {"user_intervention": 1, "request_interrupted": 1, "session_abandoned": 1, "rapid_exit": 1},
        ),
        # lines 18 and 39: "[Request interrupted by user]", 103 s apart (no cascade); two prompts of
        # the user's own (lines 4, 26; the /mcp command at 21-22 is Claude Code's), the last word an
        # interruption
        ("tool_heavy.jsonl", {"request_interrupted": 2, "session_abandoned": 1, "rapid_exit": 1}),
        # line 69: "[Request interrupted by user]", then "create the beads" (line 71): not abandoned
        ("subagent.jsonl", {"request_interrupted": 1}),
        # 9 Bash tool_results with is_error (lines 661, 916, 1209, 1343, 1366, 1389, 1419, 1447,
        # 1463; the Edit and Read errors at 259, 1300, 2186 are no commands) and `mix test 2>&1 |
        # tail` at line 1103 printing "297 tests, 11 failures"; every failed `git commit` passed
        # later; compact_boundary at line 1481
        ("ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl", {"exit_error": 10, "compaction": 1}),
        # 8 Bash tool_results with is_error (lines 401, 494, 519, 639, 1032, 1105, 1358, 1781);
        # compact_boundary at line 1584; `mix compile 2>&1` called at lines 1593, 1656 and 1691 in
        # one turn, each answering nothing (the third's result at line 1698)
        ("fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl", {"exit_error": 8, "compaction": 1, "tool_loop": 1}),
    ],
)
def test_signals_on_the_fixture_transcripts(name: str, counts: dict[str, int]) -> None:
    assert analyze(fixture(name), NOW).counts == counts


def test_the_fixture_classes() -> None:
    scores = {name: analyze(fixture(name), NOW) for name in ("short.jsonl", "subagent.jsonl")}
    assert (scores["short.jsonl"].score, scores["short.jsonl"].quality) == (28.5, "BAD")
    assert (scores["subagent.jsonl"].score, scores["subagent.jsonl"].quality) == (2.5, "OK")


def prompt(seconds: float, text: str, **more: Any) -> Event:
    return observed(kinds.PROMPT_SUBMITTED, seconds, prompt=text, **more)


def bash(seconds: float, command: str, failed: bool = False, output: str = "", use: str = "") -> Event:
    call: dict[str, Any] = {
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_use_id": use or f"t{seconds}",
    }
    if failed:
        return observed(kinds.TOOL_FAILED, seconds, error=f"Exit code 1\n{output}", **call)
    return observed(kinds.TOOL_USED, seconds, tool_response={"stdout": output, "stderr": ""}, **call)


def stopped(seconds: float, text: str) -> Event:
    return observed(kinds.ASSISTANT_STOPPED, seconds, last_assistant_message=text)


def refusal(seconds: float, command: str) -> Event:
    return observed(
        kinds.TOOL_FAILED,
        seconds,
        tool_name="Bash",
        tool_input={"command": command},
        error="User rejected tool use",
    )


@pytest.mark.parametrize(
    ("events", "signal", "n"),
    [
        ([prompt(0, "fix it"), prompt(9, "/reverie:stash auth")], "user_intervention", 1),
        (
            [prompt(0, "fix it"), refusal(1, "git push"), refusal(1, "rm -rf x"), prompt(2, "ok")],
            "user_intervention",
            1,
        ),
        (
            [prompt(0, "push"), bash(1, "ls"), prompt(2, "[Request interrupted by user]")],
            "session_abandoned",
            1,
        ),
        ([prompt(0, "push"), bash(1, "ls"), prompt(2, "this is shit, fix it")], "session_abandoned", 1),
        (
            [prompt(0, "push"), prompt(2, "[Request interrupted by user]"), prompt(3, "go on")],
            "session_abandoned",
            0,
        ),
        (
            [
                prompt(0, "fix"),
                stopped(1, "Fixed: all tests pass."),
                prompt(2, "go"),
                bash(3, "pytest", True, "E"),
            ],
            "false_success",
            1,
        ),
        ([prompt(0, "fix"), stopped(1, "Done."), prompt(2, "no, it still fails")], "false_success", 1),
        (
            [prompt(0, "fix"), stopped(1, "Done."), bash(2, "pytest"), bash(3, "pytest", True, "E")],
            "false_success",
            0,
        ),
        ([prompt(0, "a"), bash(1, "pytest", True, "E x"), bash(2, "ls")], "no_resolution", 1),
        ([prompt(0, "a"), bash(1, "pytest", True, "E x"), bash(2, "pytest -x")], "no_resolution", 0),
        ([prompt(0, "a"), *(bash(i, "make", use=f"u{i}") for i in (1, 2, 3, 4))], "tool_loop", 1),
        (
            [
                prompt(0, "a"),
                bash(1, "cat f", output="1"),
                bash(2, "cat f", output="2"),
                bash(3, "cat f", output="3"),
            ],
            "tool_loop",
            0,
        ),
        (
            [
                prompt(0, "a"),
                bash(1, "make"),
                prompt(2, "b"),
                bash(3, "make"),
                prompt(4, "c"),
                bash(5, "make"),
            ],
            "tool_loop",
            0,
        ),
        ([prompt(0, "a"), bash(1, "make", True, "E")], "rapid_exit", 1),
        ([prompt(0, "a"), prompt(1, "b"), prompt(2, "c"), bash(3, "make", True, "E")], "rapid_exit", 0),
        (
            [
                prompt(0, "a"),
                prompt(10, "[Request interrupted by user]"),
                prompt(50, "[Request interrupted by user]"),
                prompt(200, "[Request interrupted by user]"),
                prompt(201, "go"),
            ],
            "interrupt_cascade",
            1,
        ),
        ([prompt(0, "wtf is this"), prompt(1, "putain"), prompt(2, "grab the shell")], "user_curse", 2),
        (
            [prompt(0, "a"), prompt(1, "[Request interrupted by user for tool use]"), prompt(2, "b")],
            "request_interrupted",
            1,
        ),
        (
            [
                prompt(0, "a"),
                bash(1, "make", True, "E"),
                bash(2, "make"),
                bash(3, "pytest | tail", output="3 failed"),
            ],
            "exit_error",
            2,
        ),
        (
            [
                prompt(0, "where do the integration tests start docker?"),
                prompt(5, "ok"),
                prompt(9, "so where do integration tests start docker?"),
            ],
            "repeated_question",
            1,
        ),
        ([prompt(0, "a"), bash(1, "ls"), prompt(700, "b"), prompt(900, "c")], "long_silence", 1),
        (
            [prompt(0, "No, use uv"), prompt(1, "no thanks, fine"), prompt(2, "it still doesn't work")],
            "user_negation",
            2,
        ),
        (
            [prompt(0, "a"), observed(kinds.COMPACTION_STARTED, 1), observed(kinds.COMPACTION_FINISHED, 2)],
            "compaction",
            1,
        ),
    ],
)
def test_each_signal_on_a_built_session(events: list[Event], signal: str, n: int) -> None:
    assert counted(events).get(signal, 0) == n


def test_a_session_still_going_is_not_abandoned() -> None:
    events = [prompt(0, "push"), prompt(2, "[Request interrupted by user]")]
    assert "session_abandoned" not in analyze(events, at(60)).counts
    assert analyze(events, at(60 * 31)).counts["session_abandoned"] == 1


def test_the_score_is_weights_times_counts_and_its_class() -> None:
    events = [prompt(0, "a"), bash(1, "make", True, "E"), prompt(2, "[Request interrupted by user]")]
    friction = analyze(events, LATER)
    # exit_error 1 + request_interrupted 2.5 + session_abandoned 10 + rapid_exit 6 + no_resolution 8
    assert friction.score == 27.5 and friction.quality == "BAD"
    assert [quality(s) for s in (0, 2.9, 3, 10, 19.5, 20)] == [
        "OK",
        "OK",
        "ROUGH",
        "FRICTION",
        "FRICTION",
        "BAD",
    ]


def test_antigens_of_a_bad_session_name_the_failure_and_the_user_s_words() -> None:
    events = [
        prompt(0, "deploy the app"),
        bash(1, "fly deploy", True, "Error: app not found"),
        stopped(2, "Done, it is deployed."),
        prompt(3, "no, it is not deployed, wtf"),
        bash(4, "fly deploy", True, "Error: app not found"),
    ]
    friction = analyze(events, LATER)
    assert friction.quality == "BAD"
    found = lessons.antigens(friction, events)
    false_success = next(a for a in found if a.signal == "false_success")
    assert false_success.command == "fly" and false_success.error == "Error: app not found"
    assert false_success.user_said == ("deploy the app", "no, it is not deployed, wtf")
    groups = report.groups(found)
    assert groups[0].score == max(g.score for g in groups)
    assert "false_success" in report.review(report.Antigens(LATER, 1, found, groups))


def test_the_files_quote_the_user_whole_with_only_the_secrets_taken_out(tmp_path: Any) -> None:
    said = [
        'I can\'t connect with mysql -u root -p"hunter 22" to /srv/app/db.sock',
        "no, it's still broken: I can't log in, the password is wrong, see /srv/app/db.conf",
    ]
    events = [
        prompt(0, said[0]),
        bash(1, "mysql -u root app", True, "ERROR 1045: can't connect"),
        stopped(2, "Done, it is fixed."),
        prompt(3, said[1]),
        bash(4, "mysql -u root app", True, "ERROR 1045: can't connect"),
    ]
    write(str(tmp_path), {"s1": Session("log", events, {})}, {"s1": analyze(events, LATER)}, [], LATER)
    # each file decodes: no redaction ran across the quotes of its JSON
    antigens = msgspec.json.decode((tmp_path / "antigen_candidates.json").read_bytes(), type=report.Antigens)
    for line in (tmp_path / "friction_raw.jsonl").read_bytes().splitlines():
        msgspec.json.decode(line, type=report.Raw)
    quoted = {words for candidate in antigens.candidates for words in candidate.user_said}
    assert quoted == {redact_text(words) for words in said}
    assert redact_text(said[1]) == said[1]
    review = (tmp_path / "antigen_review.md").read_text()
    assert f"> {said[1]}" in review and "> I can't connect with mysql -u root -p[REDACTED:" in review
    assert not any("hunter 22" in path.read_text() for path in tmp_path.iterdir())


def refusals(n: int, command: str, session: str) -> list[Event]:
    """`n` turns in which the user refuses `command`."""
    return [
        e
        for i in range(n)
        for e in (prompt(10 * i, f"step {i}", session=session), _refused(10 * i + 1, command, session))
    ]


def _refused(seconds: float, command: str, session: str) -> Event:
    return observed(
        kinds.TOOL_FAILED,
        seconds,
        session,
        tool_name="Bash",
        tool_input={"command": command},
        error="The user doesn't want to proceed with this tool use.",
    )


def test_behavioural_preferences_medium_at_three_high_at_five_with_stable_ids() -> None:
    assert lessons.behaviours([refusals(2, "git push origin main", "s1")]) == []
    [medium] = lessons.behaviours([refusals(2, "git push", "s1"), refusals(1, "git push -f", "s2")])
    assert (medium.statement, medium.observations, medium.confidence) == (
        "Ask the user before running `git push`",
        3,
        "medium",
    )
    five = refusals(5, "git push", "s1")
    [high] = lessons.behaviours([five])
    assert (high.confidence, high.strength) == ("high", round(5 / 7, 6))
    [event] = lessons.crystallized([high])
    [again] = lessons.crystallized(lessons.behaviours([list(reversed(five))]))
    ids = [
        encode(e.kind, e.payload, source="worker", worker=FRICTION, **e.placed())[0] for e in (event, again)
    ]
    assert ids[0] == ids[1] and event.kind == kinds.PREFERENCE_CRYSTALLIZED
    assert len(event.caused_by) == 5 and event.payload.evidence == 5  # type: ignore[attr-defined]


@pytest.mark.slow
def test_the_command_writes_five_files_without_a_stack(tmp_path: Any) -> None:
    out = tmp_path / "friction"
    env = {**os.environ, "REVERIE_HOME": str(tmp_path / "home"), "COLUMNS": "200"}
    reverie = os.path.join(os.path.dirname(sys.executable), "reverie")
    done = subprocess.run(
        [reverie, "friction", TRANSCRIPTS, "--out", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "5 sessions (10 transcripts): 2 BAD, 2 FRICTION, 0 ROUGH, 1 OK" in done.stdout
    analysis = msgspec.json.decode((out / "friction_analysis.json").read_bytes(), type=report.Analysis)
    assert len(analysis.sessions) == 5 and {s.source for s in analysis.sessions} == {"transcript"}
    summary = msgspec.json.decode((out / "friction_summary.json").read_bytes(), type=report.Summary)
    assert summary.classes == {"BAD": 2, "FRICTION": 2, "ROUGH": 0, "OK": 1}
    assert [d.day for d in summary.daily] == ["2026-02-10", "2026-02-12"] and summary.signals[
        "exit_error"
    ] == 18
    raw = [
        msgspec.json.decode(line, type=report.Raw)
        for line in (out / "friction_raw.jsonl").read_bytes().splitlines()
    ]
    assert len(raw) == sum(summary.signals.values())
    antigens = msgspec.json.decode((out / "antigen_candidates.json").read_bytes(), type=report.Antigens)
    assert antigens.bad_sessions == 2 and antigens.candidates
    assert (out / "antigen_review.md").read_text().startswith("# Friction antigen candidates")


@pytest.mark.slow
def test_the_reports_never_go_through_a_link_out_of_the_project(tmp_path: Any) -> None:
    project, elsewhere = tmp_path / "app", tmp_path / "elsewhere"
    (project / ".claude").mkdir(parents=True)
    elsewhere.mkdir()
    (project / ".claude" / "friction").symlink_to(elsewhere)  # a cloned repository's link
    env = {**os.environ, "REVERIE_HOME": str(tmp_path / "home"), "COLUMNS": "200"}
    reverie = os.path.join(os.path.dirname(sys.executable), "reverie")
    done = subprocess.run(
        [reverie, "friction", TRANSCRIPTS, "--project", str(project)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1 and "leads out of" in done.stderr and "Traceback" not in done.stderr
    assert list(elsewhere.iterdir()) == []
