"""The scheduled jobs over a real store: the dream cycle consolidates the seed's example,
communities are detected (and dissolved), each settled recall is judged once, and
`reverie think` runs them from the command line."""

import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import fakeredis
import msgspec
import pytest

from projections.recall.memories import _ACTIVATIONS
from projections.sql import connect
from reverie.testing import Folding, event_at, streamed
from schemas import kinds, memory
from schemas.events import Event
from schemas.settings import Settings
from tests.support.processes import REVERIE
from workers.thinking.runner import run

PROJECT = "/home/u/app"
NOW = datetime.now(UTC).replace(microsecond=0)
RFG, USER, D3 = "library:rfg", "person:user", "library:d3"


def _event(
    kind: str, payload: Any, hours_ago: float, session: str | None, causes: tuple[str, ...] = ()
) -> Event:
    when = NOW - timedelta(hours=hours_ago)
    return event_at(kind, payload, when, project=PROJECT, session_id=session, caused_by=causes)


def entity(entity_id: str, name: str, cause: Event) -> Event:
    observed = memory.EntityObserved(entity_id=entity_id, type="library", name=name, normalized_name=name)
    return _event(kinds.ENTITY_OBSERVED, observed, 50, None, (cause.id,))


def session(n: int, entities: tuple[str, ...], hours_ago: float) -> list[Event]:
    said = _event(kinds.PROMPT_SUBMITTED, {"prompt": f"work {n}"}, hours_ago, f"s{n}")
    episode = memory.EpisodeRecorded(
        episode_id=f"ep{n}", session_id=f"s{n}", title=f"session {n}", summary="...",
        started_at=said.ts, ended_at=said.ts, entities=list(entities),
    )  # fmt: skip
    return [said, _event(kinds.EPISODE_RECORDED, episode, hours_ago, f"s{n}", (said.id,))]


def fact(fact_id: str, source: str, target: str, cause: Event, description: str = "") -> Event:
    asserted = memory.FactAsserted(
        fact_id=fact_id, source=source, relation="uses", target=target, description=description or fact_id
    )
    return _event(
        kinds.FACT_ASSERTED, asserted, (NOW - cause.ts).total_seconds() / 3600, cause.session_id, (cause.id,)
    )


@pytest.fixture
def store(settings: Settings) -> Iterator[Folding]:
    sessions = [
        session(1, (USER, RFG), 30), session(2, (USER, RFG, D3), 20), session(3, (USER, RFG), 10),
        session(4, ("file:README.md",), 5), session(5, ("tool:git",), 4),
    ]  # fmt: skip
    first = sessions[0][0]
    events = [e for s in sessions for e in s]
    events += [
        entity(RFG, "react-force-graph", first),
        entity(USER, "the user", first),
        entity(D3, "d3", first),
    ]
    events += [
        fact(f"f{n}", USER, RFG, s[0], "the user uses react-force-graph") for n, s in enumerate(sessions[:3])
    ]
    folding = Folding(settings)
    folding.fold(events)
    yield folding
    folding.close()


def said(emitted: list[Event], kind: str) -> list[dict[str, Any]]:
    return [msgspec.json.decode(e.payload) for e in emitted if e.kind == kind]


def test_the_dream_cycle_consolidates_the_seeds_example_in_a_store(
    store: Folding, settings: Settings
) -> None:
    client = fakeredis.FakeRedis()
    counts = run("dream", client=client, settings=settings, at=NOW)
    emitted = streamed(client)
    [consolidated] = said(emitted, kinds.EPISODE_CONSOLIDATED)
    assert consolidated["from_episodes"] == ["ep1", "ep2", "ep3"]
    duplicates = said(emitted, kinds.FACT_EXPIRED)  # f0, f1, f2 say the same: one stands for them
    assert sorted((d["fact_id"], d["duplicate_of"]) for d in duplicates) == [("f1", "f0"), ("f2", "f0")]
    assert counts[kinds.EPISODE_CONSOLIDATED] == 1
    store.fold(emitted)
    db = connect(settings)
    into = dict(
        db.execute(
            "SELECT episode_id, consolidated_into FROM episodes WHERE session_id IS NOT NULL"
        ).fetchall()
    )
    assert into["ep1"] == into["ep2"] == into["ep3"] == consolidated["episode_id"] and into["ep4"] is None
    assert db.execute("SELECT duplicate_of FROM facts WHERE fact_id = 'f1'").fetchone() == ("f0",)
    client = fakeredis.FakeRedis()
    run("dream", client=client, settings=settings, at=NOW)
    assert said(streamed(client), kinds.EPISODE_CONSOLIDATED) == []  # consolidated once


def _summary(title: str) -> str:
    return f"Goal: {title}\nOutcome: unknown"


def test_a_dream_consolidates_only_a_shared_subject_names_it_and_empties_no_episode(
    settings: Settings,
) -> None:
    """The five sessions once lumped as "5 sessions about one subject", and their episodes blanked
    where the sessions are listed: three about the users table migration are consolidated, under
    that name; every episode keeps its own title and summary, in the table, in recall's texts and
    on the dashboard's list of sessions."""
    from reverie.dashboard.reads import Projections, sessions
    from tests.test_dream import ELSEWHERE, FIVE

    titles = {**FIVE, **ELSEWHERE}
    events: list[Event] = []
    for n, (episode_id, title) in enumerate(titles.items()):
        asked = _event(kinds.PROMPT_SUBMITTED, {"prompt": title}, 10 - n, f"s{n}")
        episode = memory.EpisodeRecorded(
            episode_id=episode_id, session_id=f"s{n}", title=title, summary=_summary(title),
            started_at=asked.ts, ended_at=asked.ts,
        )  # fmt: skip
        events += [asked, _event(kinds.EPISODE_RECORDED, episode, 10 - n, f"s{n}", (asked.id,))]
    folding = Folding(settings)
    folding.fold(events)
    client = fakeredis.FakeRedis()
    run("dream", client=client, settings=settings, at=NOW)
    emitted = streamed(client)
    [consolidated] = said(emitted, kinds.EPISODE_CONSOLIDATED)
    assert consolidated["from_episodes"] == ["ep3", "ep4", "ep5"]
    assert consolidated["title"] == "3 sessions about the users table migration"
    assert all(FIVE[e] in consolidated["summary"] for e in ("ep3", "ep4", "ep5")), consolidated["summary"]
    folding.fold(emitted)
    folding.close()
    db = connect(settings)
    rows = db.execute(
        "SELECT episode_id, title, summary, consolidated_into FROM episodes "
        "WHERE session_id IS NOT NULL ORDER BY 1"
    ).fetchall()
    assert [(e, t, s) for e, t, s, _ in rows] == [(e, t, _summary(t)) for e, t in sorted(titles.items())]
    assert {e: into for e, _, _, into in rows if into} == dict.fromkeys(
        ("ep3", "ep4", "ep5"), consolidated["episode_id"]
    )
    texts = dict(db.execute("SELECT memory_id, text FROM memory_texts WHERE kind = 'episode'").fetchall())
    assert all(texts[e] == f"{t}. {_summary(t)}" for e, t in titles.items())
    assert texts[consolidated["episode_id"]].startswith("3 sessions about the users table migration. ")
    listed = Projections(settings)
    try:
        shown = {row["session_id"]: row["episode"] for row in sessions(listed, None)}
    finally:
        listed.close()
    assert shown == {f"s{n}": title for n, title in enumerate(titles.values())}


def test_communities_are_detected_and_dissolved_as_events(store: Folding, settings: Settings) -> None:
    client = fakeredis.FakeRedis()
    run("communities", client=client, settings=settings)
    emitted = streamed(client)
    [community] = said(emitted, kinds.COMMUNITY_DETECTED)
    assert (sorted(community["members"]), community["hub"]) == (sorted([USER, RFG]), RFG)
    assert community["label"] == "react-force-graph" and sorted(community["facts"]) == ["f0", "f1", "f2"]
    store.fold(emitted)
    ended = [
        _event(
            kinds.FACT_SUPERSEDED, memory.FactSuperseded(fact_id=f, reason="test"), 1, None, (emitted[0].id,)
        )
        for f in ("f0", "f1", "f2")
    ]
    store.fold(ended)
    client = fakeredis.FakeRedis()
    run("communities", client=client, settings=settings)
    [dissolved] = said(streamed(client), kinds.COMMUNITY_DETECTED)
    assert (dissolved["community_id"], dissolved["members"]) == (community["community_id"], [])


def test_each_settled_recall_is_judged_once_used_unused_or_failed(store: Folding, settings: Settings) -> None:
    recall = _event(
        kinds.MEMORY_RETRIEVED, {"query": "graph", "results": ["f0", "f1"], "session_id": "s9"}, 30, "s9"
    )
    answer = _event(
        kinds.ASSISTANT_STOPPED, {"last_assistant_message": "the user uses react-force-graph here"}, 29, "s9"
    )
    shown = _event(
        kinds.MEMORY_RETRIEVED, {"query": "graph", "results": ["f2"], "session_id": "s10"}, 30, "s10"
    )
    elsewhere = _event(kinds.ASSISTANT_STOPPED, {"last_assistant_message": "the tests pass now"}, 29, "s10")
    store.fold([recall, answer, shown, elsewhere])
    client = fakeredis.FakeRedis()
    run("decay", client=client, settings=settings, at=NOW)
    judged = sorted((j["memory_id"], j["cause"]) for j in said(streamed(client), kinds.ACTIVATION_RECORDED))
    assert judged == [("f0", "used"), ("f1", "used"), ("f2", "unused")]  # f2 was shown, never used
    store.fold(streamed(client))
    client = fakeredis.FakeRedis()
    run("decay", client=client, settings=settings, at=NOW)
    assert streamed(client) == []  # judged once
    with connect(settings) as db:
        used_at = dict(db.execute("SELECT memory_id, count(*) FROM activation_log GROUP BY ALL").fetchall())
        activations = {m: len(u) for m, u, _ in db.execute(_ACTIVATIONS).fetchall()}
    assert used_at == {"f0": 1, "f1": 1, "f2": 1} and activations == {"f0": 1, "f1": 1}  # unused: no use


def test_reverie_think_runs_a_job_here_with_a_progress_bar(env: dict[str, str]) -> None:
    down = subprocess.run([*REVERIE, "think", "lifecycle", "--now"], env=env, capture_output=True, text=True)
    assert down.returncode == 1 and "reverie up" in down.stderr and "Traceback" not in down.stderr
    helped = subprocess.run([*REVERIE, "think", "--help"], env=env, capture_output=True, text=True)
    assert "lifecycle" in helped.stdout and "every 6 hours" in helped.stdout


def used(recall: Event, memory_id: str, cause: str = "used") -> Event:
    """The decay job's judgment of what the agent did with `memory_id`, which `recall` gave it."""
    judged = memory.ActivationRecorded(memory_id=memory_id, at=recall.ts, cause=cause)  # type: ignore[arg-type]
    return event_at(
        kinds.ACTIVATION_RECORDED, judged, recall.ts, project=PROJECT, session_id="s8", caused_by=(recall.id,)
    )


def test_hebbian_weights_grow_with_use_not_with_being_shown_and_decay_when_unused(
    store: Folding, settings: Settings
) -> None:
    long_ago = _event(
        kinds.MEMORY_RETRIEVED, {"query": "g", "results": ["f0"], "session_id": "s8"}, 50 * 24, "s8"
    )
    store.fold([long_ago, used(long_ago, "f0", "unused")])
    assert connect(settings).execute("SELECT weight FROM associations").fetchall() == []  # shown, unused
    store.fold([used(long_ago, "f0")])
    [(weight,)] = connect(settings).execute("SELECT weight FROM associations").fetchall()
    assert weight == pytest.approx(0.1 * (1 - 0.01 * 50), rel=1e-3)  # one use, 50 days ago
    now = _event(kinds.MEMORY_RETRIEVED, {"query": "g", "results": ["f1"], "session_id": "s8"}, 0, "s8")
    store.fold([now, used(now, "f1")])
    [(weight,)] = connect(settings).execute("SELECT weight FROM associations").fetchall()
    assert weight == pytest.approx(1 - 0.9**2, rel=1e-3)  # used together again just now


def test_memory_health_has_horas_eight_metrics(store: Folding, settings: Settings) -> None:
    cursor = connect(settings).execute("SELECT * FROM memory_health")
    health = dict(zip([d[0] for d in cursor.description], cursor.fetchone() or (), strict=True))
    assert {
        "duplicate_ratio", "embedding_coverage", "average_activation", "reconsolidation_rate",
        "retrieval_hit_rate", "dream_efficiency", "memory_types", "average_confidence",
    } <= set(health)  # fmt: skip
    # three facts, each learned 10 to 30 hours ago (a day old at least): ln(1) = 0
    assert health["average_activation"] == pytest.approx(0.0, abs=0.05)
    assert health["duplicate_ratio"] == pytest.approx(2 / 3)  # three facts say the same
    assert health["dream_efficiency"] == 0  # no dream yet


def test_status_shows_no_ratio_over_nothing(settings: Settings, env: dict[str, str]) -> None:
    folding = Folding(settings)
    folding.fold([])  # a snapshot, and no fact, recall or episode yet
    folding.close()
    shown = subprocess.run([*REVERIE, "status"], env={**env, "COLUMNS": "80"}, capture_output=True, text=True)
    health = " ".join(shown.stdout.split("memory health", 1)[1].split())
    assert "facts 0, duplicate_ratio n/a, embedding_coverage n/a" in health and "None" not in health
    as_json = subprocess.run([*REVERIE, "status", "--json"], env=env, capture_output=True, text=True)
    health_json = msgspec.json.decode(as_json.stdout)["memory_health"]
    assert health_json["facts"] == 0 and health_json["duplicate_ratio"] is None


def test_a_failure_recurs_however_each_session_recorded_it(settings: Settings) -> None:
    """Past failures are read as this session's runs are: colours, a stdout/stderr error and a
    failure with no text make no difference, and none of them stops the job."""
    from workers.dynamics.session import failures

    said = "FAILED tests/test_x.py::test_x - AssertionError: 2 != 3"

    def failed(session: str, error: object, hours_ago: float) -> Event:
        payload = {"tool_name": "Bash", "tool_input": {"command": "pytest -x"}, "error": error}
        return _event(kinds.TOOL_FAILED, payload, hours_ago, session)

    folding = Folding(settings)
    folding.fold(
        [
            failed("s11", f"\x1b[31m{said}\x1b[0m", 30),
            failed("s12", {"stdout": said, "stderr": ""}, 20),
            failed("s13", None, 10),
        ]
    )
    [recurring] = list(failures(connect(settings), [failed("s14", said, 1)]))
    assert recurring.kind == kinds.FAILURE_RECURRING
    assert isinstance(recurring.payload, memory.FailureRecurring) and recurring.payload.occurrences == 3
    folding.close()


def test_frustration_is_a_signal_where_it_starts_rising() -> None:
    """4, 4, 4, 4 is one run of rising frustration; after a calm prompt, a second run is
    another."""
    from workers.dynamics.session import detected

    angry = "STOP, THIS IS WRONG AGAIN, broken!!!"
    said = [angry, angry, angry, angry, "thanks", angry, angry, angry]
    session = [_event(kinds.PROMPT_SUBMITTED, {"prompt": p}, 10 - n, "s20") for n, p in enumerate(said)]
    frustrated = [
        d
        for d in detected(session)
        if isinstance(d.payload, memory.SignalDetected) and d.payload.signal == "frustration"
    ]
    assert [d.caused_by[-1] for d in frustrated] == [session[2].id, session[6].id]  # 1, 5, 5 rises


def test_corrected_facts_and_facts_about_errors_weigh_more_in_recall(settings: Settings) -> None:
    from projections.recall.memories import Memories

    said = _event(kinds.PROMPT_SUBMITTED, {"prompt": "no, use uv"}, 5, "s30")

    def fact_of(fact_id: str, category: memory.Category = "context") -> Event:
        asserted = memory.FactAsserted(
            fact_id=fact_id, source=USER, relation="learned_that", description=fact_id, category=category
        )
        return _event(kinds.FACT_ASSERTED, asserted, 5, "s30", (said.id,))

    correction = memory.SignalDetected(
        signal_id="g1", signal="correction", text="use uv", subject="corrected"
    )
    folding = Folding(settings)
    folding.fold(
        [
            said,
            fact_of("plain"),
            fact_of("corrected"),
            fact_of("an error", category="errors"),
            _event(kinds.SIGNAL_DETECTED, correction, 5, "s30", (said.id,)),
        ]
    )
    folding.close()
    memories = Memories(settings, follow=False)
    try:
        features = memories.features(["plain", "corrected", "an error"])
    finally:
        memories.close()
    assert {m: f.emotional for m, f in features.items()} == {
        "plain": False,
        "corrected": True,
        "an error": True,
    }


def test_the_lifecycle_catches_up_on_what_sessions_ending_together_missed(settings: Settings) -> None:
    """Three sessions said one preference and met one failure, and their jobs, running at once,
    each saw two: the lifecycle crystallizes both, once."""

    story: list[Event] = []
    for n in (40, 41, 42):
        prompt = _event(kinds.PROMPT_SUBMITTED, {"prompt": "always run pytest -x"}, 3, f"s{n}")
        signal = memory.SignalDetected(
            signal_id=f"g{n}", signal="preference", text="run pytest -x before committing"
        )
        failed = {
            "tool_name": "Bash",
            "tool_input": {"command": "uv sync"},
            "error": "error: lockfile out of date",
        }
        story += [
            prompt,
            _event(kinds.SIGNAL_DETECTED, signal, 3, f"s{n}", (prompt.id,)),
            _event(kinds.TOOL_FAILED, failed, 3, f"s{n}"),
        ]
    folding = Folding(settings)
    folding.fold(story)
    client = fakeredis.FakeRedis()
    run("catch-up", client=client, settings=settings)
    emitted = streamed(client)
    [preference] = said(emitted, kinds.PREFERENCE_CRYSTALLIZED)
    [failure] = said(emitted, kinds.FAILURE_RECURRING)
    assert preference["statement"] == "run pytest -x before committing" and preference["evidence"] == 3
    assert failure["occurrences"] == 3
    folding.fold(emitted)
    again = fakeredis.FakeRedis()
    run("catch-up", client=again, settings=settings)
    assert (
        said(streamed(again), kinds.PREFERENCE_CRYSTALLIZED)
        == said(streamed(again), kinds.FAILURE_RECURRING)
        == []
    )
    folding.close()


def test_a_batch_of_recalls_alone_sets_no_worker_thinking() -> None:
    """Memory's own doings (a recall, a forgetting) teach extraction nothing: a batch holding
    only those queues no job; one with the work's events queues extraction over those alone."""
    from rq import Queue

    from workers.thinking.runner import Segment, dispatch

    queue = Queue(connection=fakeredis.FakeRedis())
    dispatch(queue, "seg-1", [("r1", kinds.MEMORY_RETRIEVED, "s1"), ("f1", kinds.MEMORY_FORGOTTEN, None)])
    assert queue.count == 0
    dispatch(queue, "seg-2", [("r2", kinds.MEMORY_RETRIEVED, "s1"), ("p1", kinds.PROMPT_SUBMITTED, "s1")])
    [job] = queue.get_jobs()
    assert job.args == ("extract", Segment("seg-2", ["p1"]))


def test_a_job_enqueued_without_tries_is_given_the_queues_and_one_with_tries_keeps_its_own() -> None:
    """RQ's cron scheduler enqueues its jobs with no Retry: a worker gives one the queue's tries
    as it starts it (workers/queue_worker.py), so a kill or an error leaves it two more, in Redis
    where whoever hands it back reads them; a job with tries of its own keeps them."""
    from rq import Queue, Retry
    from rq.job import Job

    from workers.abandoned import RETRY_AFTER_S, give_tries

    queue = Queue(connection=fakeredis.FakeRedis())
    scheduled = queue.enqueue(run, "communities")
    own = queue.enqueue(run, "communities", retry=Retry(max=1, interval=[7]))
    for job in (scheduled, own):
        give_tries(job)
    stored = Job.fetch_many([scheduled.id, own.id], connection=queue.connection)
    assert [(job.retries_left, job.retry_intervals) for job in stored if job] == [
        (len(RETRY_AFTER_S), RETRY_AFTER_S),
        (1, [7]),
    ]
