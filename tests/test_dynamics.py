"""Memory's dynamics with real parts: the stack (`reverie up`), hook processes, RQ workers."""

import json
import pathlib
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from functools import partial

import pytest
from rq import Queue

from ingest.emit import Worker, append, encode
from schemas import kinds, memory
from schemas.ids import new_event_id
from schemas.settings import QUEUE, Settings
from tests.support.processes import REVERIE, Stack, run_hook, wait_for
from workers.redis_client import connect
from workers.thinking.runner import run

pytestmark = pytest.mark.integration


def _hook(env: dict[str, str], event: str, session: str, **payload: str) -> bytes:
    body = {"hook_event_name": event, "session_id": session, **payload}
    done = run_hook(json.dumps(body).encode(), env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _session(env: dict[str, str], session: str, prompt: str) -> None:
    _hook(env, "SessionStart", session, source="startup")
    _hook(env, "UserPromptSubmit", session, prompt=prompt)
    _hook(env, "SessionEnd", session, reason="exit")


def _in_project(env: dict[str, str], folder: pathlib.Path) -> dict[str, str]:
    folder.mkdir()
    return {**env, "CLAUDE_PROJECT_DIR": str(folder)}


def _told_at_start(env: dict[str, str], session: str, holding: str) -> str:
    """What a new session is told as it starts, once it holds `holding`."""

    def started() -> str:
        said = _hook(env, "SessionStart", session, source="startup")
        return str(json.loads(said)["hookSpecificOutput"]["additionalContext"]) if said else ""

    context: str = wait_for(lambda: (c := started()) and holding in c and c, timeout=90, what=holding)
    return context


def test_a_preference_said_in_three_sessions_reaches_the_fourth_sessions_start(
    stack: Stack, env: dict[str, str], tmp_path: pathlib.Path
) -> None:
    here = _in_project(env, tmp_path / "app")
    wordings = [
        "Always run the tests with pytest -x before committing.",
        "I think we should always run the tests with pytest -x before committing!",
        "always   run the tests with PYTEST -x before committing",
    ]

    def signalled(session: str) -> bool:
        return bool(stack.query(f"SELECT count(*) FROM signals WHERE session_id = '{session}'")[0][0])

    for n, prompt in enumerate(wordings, start=1):
        _session(here, f"pref-{n}", prompt)
        wait_for(partial(signalled, f"pref-{n}"), timeout=90, what=f"session {n}'s signal in the projections")
        crystallized = stack.query("SELECT count(*) FROM preferences")[0][0]
        assert crystallized == (1 if n == 3 else 0)  # two sessions are not enough

    context = _told_at_start(here, "pref-4", "pytest -x")
    assert "run the tests with pytest -x before committing" in context.lower()
    [(evidence, strength)] = stack.query("SELECT evidence, strength FROM preferences")
    assert strength == 0.6 and evidence >= 3  # 3 sessions; their signals, and the rule extraction made


def test_a_rule_stated_once_reaches_the_next_sessions_start_labelled_as_stated_once(
    stack: Stack, env: dict[str, str], tmp_path: pathlib.Path
) -> None:
    here = _in_project(env, tmp_path / "svc")
    _session(here, "rule-1", "From now on always use uv, never pip. Now add httpx to the project.")
    context = _told_at_start(here, "rule-2", "use uv")
    assert "From now on always use uv, never pip (stated once)" in context
    assert "## Preferences\n" in context


@pytest.fixture
def two_workers(env: dict[str, str], settings: Settings) -> Iterator[Stack]:
    running = Stack(env, settings, workers=2).start()
    yield running
    if running.process and running.process.poll() is None:
        running.stop()


def test_the_lifecycle_run_by_two_workers_at_once_emits_each_event_once(
    two_workers: Stack, settings: Settings, env: dict[str, str]
) -> None:
    client = connect(settings, timeout=None)  # it waits on the jobs' results
    now = datetime.now(UTC)
    sent = []
    for n, days_ago in enumerate([70, 65, 62, 5]):
        when = now - timedelta(days=days_ago)
        prompt_id, prompt = encode(
            kinds.PROMPT_SUBMITTED, {"prompt": f"note {n}"}, project="/p", source=kinds.SOURCE_CLAUDE_CODE,
            session_id=f"old-{n}", ts=when, event_id=new_event_id(int(when.timestamp() * 1000)),
        )  # fmt: skip
        fact = memory.FactAsserted(
            fact_id=f"fact-{n}", source="project:p", relation="uses", description=f"uses {n}"
        )
        _, asserted = encode(
            kinds.FACT_ASSERTED, fact, project="/p", source=kinds.SOURCE_WORKER, session_id=f"old-{n}",
            caused_by=[prompt_id], worker=Worker("test", 1),
        )  # fmt: skip
        sent += [prompt, asserted]
    append(client, sent)
    wait_for(lambda: two_workers.query("SELECT count(*) FROM facts")[0][0] == 4, timeout=60, what="the facts")
    queue = Queue(QUEUE, connection=client)
    runs = [queue.enqueue(run, "lifecycle") for _ in range(2)]
    for job in runs:
        result = job.latest_result(timeout=120)
        assert result is not None and result.type == result.Type.SUCCESSFUL, result and result.exc_string

    def emitted() -> list[tuple[str, str]]:  # each event's kind and subject
        rows = two_workers.query(
            f"SELECT kind, coalesce(payload->>'fact_id', payload->>'memory_id') FROM events "
            f"WHERE kind IN ('{kinds.FACT_EXPIRED}', '{kinds.TIER_PROMOTED}') ORDER BY 2"
        )
        return [(str(k), str(s)) for k, s in rows]

    # the scheduler's own run at start, and two more at once, each on whichever worker is free
    # sessions idle for 30 days are archived; facts never used in 60 days stay (decay hides nothing)
    expected = [(kinds.TIER_PROMOTED, f"old-{n}") for n in range(3)]
    found = wait_for(
        lambda: len(e := emitted()) >= len(expected) and e, timeout=60, what="the lifecycle's events"
    )
    assert sorted(found) == sorted(expected)  # each once

    thought = subprocess.run(
        [*REVERIE, "think", "dream"], env=env, capture_output=True, text=True, timeout=300
    )
    assert thought.returncode == 0 and "dream: " in thought.stderr, thought.stderr  # a worker ran it
    status = json.loads(subprocess.run([*REVERIE, "status", "--json"], env=env, capture_output=True).stdout)
    planned = {job["name"]: job for job in status["scheduled"]}
    assert set(planned) == {"idle", "lifecycle", "catch-up", "dream", "communities", "decay", "retry-failed"}
    assert all(job["next_run"] for job in planned.values())  # RQ's cron scheduler has them
    assert status["memory_health"]["facts"] >= 1
