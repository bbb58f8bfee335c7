"""What a finished session changes in how memory behaves: the signals its prompts carry
(preferences, principles, corrections, rising frustration, its mood), the preferences that now recur in
enough sessions to crystallize, and the failures met often enough to be recurring.

`think` takes the session's events (from the log) and a snapshot of the projections (the other
sessions' signals and failures); it derives events, never writes a table. A correction's
signal names the fact its words made (`subject`), so that fact weighs 1.5 in ACT-R
(projections/recall/scoring.py).
"""

import hashlib
from collections.abc import Iterator, Sequence
from datetime import datetime

import duckdb
import msgspec

from schemas import kinds, memory
from schemas.events import Event
from schemas.memory import fact_id
from workers.dynamics import crystallize, signals
from workers.dynamics.crystallize import Encode, Occurrence, Utterance
from workers.evidence.failures import output_of, runs, signature
from workers.evidence.statements import statements
from workers.thinking.follower import Derived

_STATED_AS = {"decision": "decided_for", "rule": "prefers", "remember": "learned_that"}
# what the user prefers, as the graph holds it (the facts a statement or a summary asserts)
GRAPH_PREFERENCES = ("prefers", "decided_for", "decided_against", "uses")
_PREFERRING = ("preference", "principle", "correction")


def signal_id(session_id: str, text: str) -> str:
    return "signal:" + hashlib.blake2b(f"{session_id}\0{text}".encode(), digest_size=10).hexdigest()


def valence(score: float) -> float:
    """HORA's frustration score (1 calm .. 5 furious) as a sentiment in -1..1 (0 calm)."""
    return -min(max(score - 1.0, 0.0), 4.0) / 4.0


def prompts(events: Sequence[Event]) -> list[tuple[Event, str]]:
    """The user's prompts of the session, in order, with their text (a subagent's prompt is the
    agent's task, not the user's words)."""
    found = []
    for event in sorted(events, key=lambda e: (e.ts, e.id)):
        if event.kind == kinds.PROMPT_SUBMITTED and event.agent == "main":
            prompt = msgspec.json.decode(event.payload).get("prompt")
            if isinstance(prompt, str):
                found.append((event, prompt))
    return found


def detected(events: Sequence[Event]) -> Iterator[Derived]:
    """The session's signals: each preference, principle and correction once (at most
    signals.MAX_PER_SESSION), and a frustration signal where its sentiment starts rising (HORA's
    trend rule)."""
    said = prompts(events)
    if not said:
        return
    by_id = {event.id: (event, prompt) for event, prompt in said}
    scores = {event.id: signals.sentiment(prompt) for event, prompt in said}
    for event_id, signal in signals.session_signals((e.id, p) for e, p in said):
        event, prompt = by_id[event_id]
        payload = memory.SignalDetected(
            signal_id=signal_id(event.session_id or "", signal.text),
            signal=signal.kind,
            text=signal.text,
            subject=_stated_fact(event.project, prompt, signal) if signal.kind == "correction" else None,
            sentiment=valence(scores[event_id]),
        )
        yield Derived(
            kinds.SIGNAL_DETECTED, payload, event.project, (event.id,), event.session_id, payload.signal_id
        )
    yield from _frustration([e for e, _ in said], [scores[e.id] for e, _ in said])
    yield _mood([e for e, _ in said], [scores[e.id] for e, _ in said])


def _mood(events: list[Event], scores: list[float]) -> Derived:
    """The session's mood: its prompts' mean frustration (the monthly aggregates average it)."""
    mean = sum(scores) / len(scores)
    first, last = events[0], events[-1]
    payload = memory.SignalDetected(
        signal_id=signal_id(first.session_id or "", "mood"),
        signal="mood",
        text=f"mean frustration {mean:.2f} of 5 over {len(scores)} prompts",
        sentiment=round(valence(mean), 6),
    )
    causes = tuple(sorted({first.id, last.id}))
    return Derived(kinds.SIGNAL_DETECTED, payload, first.project, causes, first.session_id, payload.signal_id)


def _stated_fact(project: str, prompt: str, signal: signals.Signal) -> str | None:
    """The fact extraction made of the corrected statement, if it made one."""
    for statement in statements(prompt):
        if signals.normalize(statement.text) in signal.text or signal.text in signals.normalize(
            statement.text
        ):
            return fact_id(project, _STATED_AS[statement.said], statement.text)
    return None


def _frustration(events: list[Event], scores: list[float]) -> Iterator[Derived]:
    """A signal where the frustration starts rising: a run of rising prompts (4, 4, 4, 4) is
    one, a second run after a fall another."""
    for i in range(2, len(events)):
        if signals.rising(scores[: i + 1]) and not signals.rising(scores[:i]):
            event = events[i]
            text = f"frustration rising over three prompts, to {scores[i]:.1f} of 5"
            payload = memory.SignalDetected(
                signal_id=signal_id(event.session_id or "", f"frustration:{event.id}"),
                signal="frustration",
                text=text,
                sentiment=valence(scores[i]),
            )
            causes = tuple(e.id for e in events[i - 2 : i + 1])
            yield Derived(
                kinds.SIGNAL_DETECTED, payload, event.project, causes, event.session_id, payload.signal_id
            )


def preferences(
    db: duckdb.DuckDBPyConnection,
    events: Sequence[Event],
    fresh: Sequence[tuple[str, Derived]],
    encode: Encode | None,
) -> Iterator[Derived]:
    """The preferences of the session's project that crystallize once its signals (`fresh`:
    each with its event id) join the other sessions' and the graph's."""
    first = min(events, key=lambda e: (e.ts, e.id))
    project, session_id = first.project, first.session_id or ""
    said = [*_said_before(db, project, session_id), *_said_now(fresh, {e.id: e.ts for e in events})]
    for crystal in crystallize.crystallize(project, said, encode):
        yield _crystallized(project, crystal)


def _crystallized(project: str, crystal: crystallize.Crystal) -> Derived:
    payload = memory.PreferenceCrystallized(
        preference_id=crystal.preference_id,
        statement=crystal.statement,
        strength=crystal.strength,
        evidence=crystal.evidence,
    )
    return Derived(
        kinds.PREFERENCE_CRYSTALLIZED, payload, project, crystal.caused_by, None, crystal.preference_id
    )


def _said_now(fresh: Sequence[tuple[str, Derived]], times: dict[str, datetime]) -> Iterator[Utterance]:
    for event_id, derived in fresh:
        signal = derived.payload
        if isinstance(signal, memory.SignalDetected) and signal.signal in _PREFERRING:
            ts = times[derived.caused_by[0]]
            yield Utterance(event_id, derived.session_id or "", signal.text, ts, signal.signal)


def _said_before(db: duckdb.DuckDBPyConnection, project: str, session_id: str) -> Iterator[Utterance]:
    """The other sessions' signals of `project`, and the graph's preferences, each with the
    sessions whose events asserted it."""
    rows = db.execute(
        """
        SELECT s.event_id, s.session_id, s.text, s.ts, s.signal
        FROM signals s JOIN sessions USING (session_id)
        WHERE sessions.project = $project AND s.session_id <> $session
            AND s.signal IN ('preference', 'principle', 'correction')
        UNION ALL
        SELECT h.event_id, said.session_id, f.description, h.ts, 'preference'
        FROM facts_current f
        JOIN fact_history h USING (fact_id)
        JOIN provenance p ON p.event_id = h.event_id
        JOIN (SELECT event_id, session_id FROM prompts UNION ALL SELECT event_id, session_id FROM compactions)
            said ON said.event_id = p.caused_by
        WHERE f.project = $project AND f.relation IN $relations AND said.session_id <> $session
        """,
        {"project": project, "session": session_id, "relations": list(GRAPH_PREFERENCES)},
    ).fetchall()
    for event_id, session, text, ts, kind in rows:
        yield Utterance(event_id, session, signals.normalize(text), ts, kind)


def failures(db: duckdb.DuckDBPyConnection, events: Sequence[Event]) -> Iterator[Derived]:
    """Each failure signature this session met that has now been met 3 times or more in its
    project (its occurrences in the other sessions read from the snapshot's errors of shell
    commands, read as this session's runs are)."""
    ordered = sorted(events, key=lambda e: (e.ts, e.id))
    by_id = {e.id: e for e in ordered}
    now = [r for r in runs(ordered) if r.failed and r.output]
    if not now:
        return
    project = by_id[now[0].event_id].project
    session = by_id[now[0].event_id].session_id
    met = [Occurrence(r.event_id, signature(r.output), by_id[r.event_id].ts, r.output[:300]) for r in now]
    signatures = {o.signature for o in met}
    met += [o for o in _shell_failures(db, project, session) if o.signature in signatures]
    for found in crystallize.recurring(met):
        yield _recurring(project, found)


def _recurring(project: str, found: crystallize.Recurring) -> Derived:
    failure = memory.FailureRecurring(
        failure_id=_failure_id(project, found.signature),
        signature=found.signature,
        occurrences=found.occurrences,
        example=found.example,
        last_seen=found.last_seen,
    )
    return Derived(kinds.FAILURE_RECURRING, failure, project, found.caused_by, None, failure.failure_id)


def caught_up(db: duckdb.DuckDBPyConnection, encode: Encode | None) -> Iterator[Derived]:
    """The preferences and recurring failures of every project that the snapshot makes and
    holds none of yet: sessions that ended together each saw the others' signals and failures
    missing, and none of their jobs found the third session (the follower catch-up)."""
    held = {
        row[0]
        for row in db.execute(
            "SELECT preference_id FROM preferences UNION ALL SELECT failure_id FROM failures"
        ).fetchall()
    }
    for (project,) in db.execute(
        "SELECT DISTINCT project FROM sessions WHERE project IS NOT NULL ORDER BY 1"
    ).fetchall():
        for crystal in crystallize.crystallize(project, _said_before(db, project, ""), encode):
            if crystal.preference_id not in held:
                yield _crystallized(project, crystal)
        met = list(_shell_failures(db, project))
        for found in crystallize.recurring(met):
            if _failure_id(project, found.signature) not in held:
                yield _recurring(project, found)


def _shell_failures(
    db: duckdb.DuckDBPyConnection, project: str, other_than: str | None = None
) -> Iterator[Occurrence]:
    """The failed shell commands the snapshot holds of `project` (but for session `other_than`),
    read as a session's runs are."""
    rows = db.execute(
        "SELECT event_id, ts, error FROM errors WHERE project = ? AND session_id IS DISTINCT FROM ? "
        "AND tool = 'Bash' AND error IS NOT NULL",
        [project, other_than],
    ).fetchall()
    for event_id, ts, error in rows:
        if output := output_of(error):
            yield Occurrence(event_id, signature(output), ts, output[:300])


def _failure_id(project: str, signature: str) -> str:
    return "failure:" + hashlib.blake2b(f"{project}\0{signature}".encode(), digest_size=10).hexdigest()
