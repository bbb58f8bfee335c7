"""Sessions that never end: a session the hooks recorded, silent for the idle time and never
ended since its last event, is taken for ended (`session.idled`) and drawn as one that ended;
one that resumes and goes silent again is drawn again, its episode replaced, not doubled. The
sweep's choice and its ids over a real store; the stack's own path through hooks, the sweep, the
dispatcher and its workers (slow)."""

import json
import subprocess
from datetime import UTC, datetime, timedelta
from typing import Any

import fakeredis
import msgspec
import pytest
from rq import Queue

from ingest.emit import append
from projections.sql import connect
from reverie.testing import Folding, event_at, make_event, streamed
from schemas import kinds
from schemas.events import Event
from schemas.ids import new_event_id
from schemas.settings import DEFAULT_SESSION_IDLE_MINUTES, QUEUE, Settings
from tests.support.events import rows
from tests.support.processes import BIN, Stack, run_hook, wait_for
from workers.dispatcher import Dispatcher
from workers.dynamics.idle import PER_SWEEP, idle
from workers.thinking.runner import Session, run

PROJECT = "/home/u/app"
NOW = datetime.now(UTC).replace(microsecond=0)


def said(kind: str, minutes_ago: float, session: str, **payload: Any) -> Event:
    """What Claude Code's hooks recorded `minutes_ago`."""
    return event_at(
        kind, {"session_id": session, **payload}, NOW - timedelta(minutes=minutes_ago), project=PROJECT,
        session_id=session,
    )  # fmt: skip


def imported(kind: str, minutes_ago: float, session: str, **payload: Any) -> Event:
    when = NOW - timedelta(minutes=minutes_ago)
    return make_event(
        kind, {"session_id": session, **payload}, id=new_event_id(int(when.timestamp() * 1000)), ts=when,
        recorded_at=when, project=PROJECT, source=kinds.SOURCE_IMPORT, session_id=session,
    )  # fmt: skip


def turn(minutes_ago: float, session: str, prompt: str, answer: str) -> list[Event]:
    """A prompt, and the agent's answer a minute later."""
    return [
        said(kinds.PROMPT_SUBMITTED, minutes_ago, session, prompt=prompt),
        said(kinds.ASSISTANT_STOPPED, minutes_ago - 1, session, last_assistant_message=answer),
    ]


def sweep(settings: Settings, at: datetime = NOW) -> list[Event]:
    """What the follower `idle` emits over the store's snapshot at `at`."""
    client = fakeredis.FakeRedis()
    run("idle", client=client, settings=settings, at=at)
    return streamed(client)


def idled(emitted: list[Event]) -> dict[str, dict[str, Any]]:
    return {
        e.session_id or "": msgspec.json.decode(e.payload) for e in emitted if e.kind == kinds.SESSION_IDLED
    }


def test_only_sessions_the_hooks_recorded_that_went_silent_without_ending_are_taken_for_ended(
    folding: Folding, settings: Settings
) -> None:
    quiet = turn(90, "quiet", "Fix the login redirect", "Fixed.")
    resumed = [
        *turn(180, "resumed", "Add a health check", "Added."),
        said(kinds.SESSION_ENDED, 170, "resumed", reason="exit"),
        *turn(60, "resumed", "Now log its failures", "Logged."),
    ]
    left_alone = [
        *turn(90, "ended", "Bump the version", "Bumped."),
        said(kinds.SESSION_ENDED, 88, "ended", reason="exit"),
        *turn(10, "busy", "Still at it", "Working."),  # silent for 9 minutes only
        imported(kinds.PROMPT_SUBMITTED, 90, "imported", prompt="An old transcript"),  # the import drew it
        said(kinds.SESSION_STARTED, 90, "empty", source="startup"),  # nothing to draw
    ]
    folding.fold([*quiet, *resumed, *left_alone])

    emitted = sweep(settings)
    found = idled(emitted)
    assert sorted(found) == ["quiet", "resumed"]
    by_session = {e.session_id: e for e in emitted}
    # as of its last event, caused by its newest work, at that work's time
    for session, events in (("quiet", quiet), ("resumed", resumed)):
        last = events[-1]
        assert datetime.fromisoformat(found[session]["last_event_at"]) == last.ts
        assert found[session]["idle_minutes"] == DEFAULT_SESSION_IDLE_MINUTES
        assert by_session[session].caused_by == (last.id,) and by_session[session].ts == last.ts
        assert by_session[session].project == PROJECT
    # another sweep, on this machine or another, emits the same events: the dispatcher keeps one
    assert [e.id for e in sweep(settings, NOW + timedelta(minutes=5))] == [e.id for e in emitted]

    # once folded, a session is not taken for ended again until it says something new
    db = folding.fold(emitted)
    assert sweep(settings, NOW + timedelta(minutes=5)) == []
    how = "SELECT session_id, from_hooks, ended_at IS NOT NULL, idled_at = last_event_at FROM sessions"
    assert rows(db, how + " ORDER BY 1") == [
        ("busy", True, False, None),
        ("empty", True, False, None),
        ("ended", True, True, None),
        ("imported", False, False, None),
        ("quiet", True, False, True),
        ("resumed", True, True, True),  # it ended once, then resumed and went idle
    ]

    # the idle time is a setting: silent for 99 minutes is not idle by two hours
    folding.fold(turn(100, "later", "One more thing", "Done."))
    slow = Settings(settings.home, session_idle_minutes=120)
    assert sweep(slow) == [] and sorted(idled(sweep(settings))) == ["later"]


def test_a_sweep_takes_the_newest_sessions_first_and_at_most_its_share(
    folding: Folding, settings: Settings
) -> None:
    folding.fold(
        [e for n in range(PER_SWEEP + 3) for e in turn(60 + n, f"s{n:03}", "Look at this", "Looked.")]
    )
    found = idled(sweep(settings))
    assert len(found) == PER_SWEEP and "s000" in found and f"s{PER_SWEEP + 2:03}" not in found


def test_the_ids_do_not_depend_on_the_machines_time_zone(folding: Folding, settings: Settings) -> None:
    folding.fold(turn(90, "quiet", "Fix the login redirect", "Fixed."))
    keys = []
    for zone in ("UTC", "Asia/Tokyo"):
        db = connect(settings)
        db.execute(f"SET TimeZone = '{zone}'")
        keys.append([(d.key, msgspec.json.encode(d.payload)) for d in idle(db, NOW, 30)])
    assert keys[0] == keys[1] and len(keys[0]) == 1


def test_the_dispatcher_draws_a_session_that_went_idle_as_one_that_ended(
    folding: Folding, settings: Settings
) -> None:
    folding.fold(turn(90, "quiet", "Fix the login redirect", "Fixed."))
    [went_idle] = sweep(settings)
    client = fakeredis.FakeRedis()
    dispatcher = Dispatcher(settings, client, consumer="test", block_ms=10)
    dispatcher.start()
    append(client, [msgspec.json.encode(went_idle)])
    dispatcher.archive(dispatcher.read(">"))
    queued = Queue(QUEUE, connection=client).jobs
    jobs = [job.args for job in queued if job.func_name == "workers.thinking.runner.run"]
    # its session's followers; no extraction (starting, the dispatcher gave the newest segment's)
    assert [name for name, _ in jobs].count("extract") == 1
    assert sorted(job for job in jobs if job[0] != "extract") == [
        ("episodes", Session("quiet")),
        ("signals", Session("quiet")),
    ]


def test_a_session_resumed_after_it_went_idle_is_drawn_again_one_episode_updated(
    folding: Folding, settings: Settings
) -> None:
    def drawn() -> list[Event]:
        """A sweep, then what the followers of session ends draw of each session it found."""
        found = sweep(settings)
        folding.fold(found)
        client = fakeredis.FakeRedis()
        for session in idled(found):
            run("episodes", Session(session), client, settings)
            run("signals", Session(session), client, settings)
        folding.fold(derived := streamed(client))
        return derived

    first = turn(
        180, "s1", "Fix the login redirect in auth.py", "Fixed the redirect: it keeps the next page."
    )
    db = folding.fold(first)
    [episode] = [e for e in drawn() if e.kind == kinds.EPISODE_RECORDED]
    [(episode_id, summary, ended_at, updated_by)] = rows(
        db, "SELECT episode_id, summary, ended_at, updated_by FROM episodes WHERE session_id = 's1'"
    )
    assert updated_by == episode.id and ended_at == first[-1].ts and "keeps the next page" in summary
    assert rows(db, "SELECT text FROM signals WHERE session_id = 's1' AND signal = 'mood'") == [
        ("mean frustration 1.00 of 5 over 1 prompts",)
    ]
    assert drawn() == []  # nothing new: nothing drawn again

    resumed = turn(120, "s1", "Now send logout home too", "Logout now goes to the home page.")
    folding.fold(resumed)
    [again] = [e for e in drawn() if e.kind == kinds.EPISODE_RECORDED]
    assert again.id != episode.id and again.id > episode.id  # newer causes: a newer event, same episode
    [(same_id, summary, ended_at, updated_by)] = rows(
        db, "SELECT episode_id, summary, ended_at, updated_by FROM episodes WHERE session_id = 's1'"
    )
    assert (same_id, updated_by, ended_at) == (episode_id, again.id, resumed[-1].ts)
    assert "Logout now goes to the home page" in summary
    assert rows(db, "SELECT text FROM signals WHERE session_id = 's1' AND signal = 'mood'") == [
        ("mean frustration 1.00 of 5 over 2 prompts",)
    ]
    # what recall reads: the one episode, as it is now
    shown = connect(settings).execute("SELECT text FROM memory_texts WHERE kind = 'episode'").fetchall()
    assert len(shown) == 1 and "Logout now goes to the home page" in shown[0][0]


@pytest.mark.parametrize(
    ("value", "minutes"),
    [("5", 5.0), ("0.5", 0.5), ("", 30.0), ("soon", 30.0), ("0", 30.0), ("-3", 30.0), ("nan", 30.0)],
)
def test_the_idle_time_comes_from_the_environment(value: str, minutes: float, home: str) -> None:
    settings = Settings.from_env({"REVERIE_HOME": home, "REVERIE_SESSION_IDLE_MINUTES": value})
    assert settings.session_idle_minutes == minutes


@pytest.mark.integration
def test_a_session_closed_with_its_terminal_is_drawn_and_drawn_again_when_it_resumes(
    stack: Stack, env: dict[str, str]
) -> None:
    """Through the hooks, the sweep (`reverie think idle`, as the scheduler queues it every 5
    minutes, here with an idle time of 0.6 s), the dispatcher and the stack's worker."""

    def hook(event: str, **payload: str) -> None:
        body = {"hook_event_name": event, "session_id": "tty", "cwd": "/tmp", **payload}
        assert run_hook(json.dumps(body).encode(), env).returncode == 0

    quick = {**env, "REVERIE_SESSION_IDLE_MINUTES": "0.01"}

    def episode(saying: str) -> tuple[str, str, str] | None:
        """Sweep; the session's episode once it says `saying`."""
        swept = subprocess.run(
            [str(BIN), "think", "idle", "--now"], env=quick, capture_output=True, text=True
        )
        assert swept.returncode == 0, swept.stderr
        found = stack.query("SELECT episode_id, summary, updated_by FROM episodes WHERE session_id = 'tty'")
        assert len(found) <= 1
        return found[0] if found and saying in found[0][1] else None

    def answered(turns: int) -> bool:
        return bool(stack.query(f"SELECT count(*) = {turns} FROM messages WHERE session_id = 'tty'")[0][0])

    hook("SessionStart", source="startup")
    hook("UserPromptSubmit", prompt="Fix the login redirect in auth.py")
    hook("Stop", last_assistant_message="Fixed the redirect: it keeps the next page.")
    wait_for(lambda: answered(1), timeout=60, what="the session's first turn in the projections")
    first = wait_for(
        lambda: episode("keeps the next page"), timeout=90, what="the idle session's episode", every=1
    )
    [(ended, idled, live)] = stack.query(
        "SELECT ended_at, idled_at = last_event_at, from_hooks FROM sessions WHERE session_id = 'tty'"
    )
    assert (ended, idled, live) == (None, True, True)

    hook("UserPromptSubmit", prompt="Now send logout home too")
    hook("Stop", last_assistant_message="Logout now goes to the home page.")
    wait_for(lambda: answered(2), timeout=60, what="the session's second turn in the projections")
    again = wait_for(lambda: episode("home page"), timeout=90, what="the resumed session's episode", every=1)
    assert again[0] == first[0] and again[2] > first[2]  # the same episode, by a newer event
    [(idled_events,)] = stack.query(
        "SELECT count(*) FROM events WHERE kind = 'session.idled' AND session_id = 'tty'"
    )
    assert idled_events == 2  # once per silence, however many sweeps saw it
