"""The RQ jobs of memory's dynamics: one per finished session (signals, crystallized preferences,
recurring failures), and the scheduled ones (workers/dynamics/schedule.py): the lifecycle, the
dream cycle, communities and decay.

Each reads the session's events from the log and a snapshot of the projections, then emits
derived events whose ids follow from the worker, its version and their causes: run twice, or
on two workers at once, a job emits the same events, and the dispatcher keeps one of each.
"""

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime

import duckdb
import numpy as np
import redis
import structlog
from rq import Queue

from ingest.emit import Emitter, Worker
from projections import sql
from schemas import kinds
from schemas.settings import Settings
from workers.dynamics import (
    COMMUNITIES,
    DREAM,
    LIFECYCLE,
    SIGNALS,
    STRENGTH,
    communities,
    consolidation,
    decay,
    dream,
    lifecycle,
    session,
)
from workers.dynamics.crystallize import Encode
from workers.extraction.derive import Derived
from workers.extraction.known import encoder
from workers.jobs import RETRY_AFTER_S, emit_derived, job_connection, retried, session_events

log = structlog.get_logger("reverie.dynamics")


def enqueue_session(queue: Queue, event_log_dir: str, session_id: str) -> None:
    """Have a worker read what a finished session says of the user's preferences and failures."""
    queue.enqueue(
        think_session,
        event_log_dir,
        session_id,
        retry=retried(RETRY_AFTER_S),
        description=f"signals of session {session_id}",
    )


def think_session(
    event_log_dir: str, session_id: str, client: "redis.Redis | None" = None, settings: Settings | None = None
) -> dict[str, int]:
    """Emit a finished session's signals, then the preferences and recurring failures of its
    project that they make (see workers/dynamics/session.py); how many events of each kind."""
    events = session_events(event_log_dir, session_id)
    if not events:
        raise LookupError(f"no event of session {session_id} is in the log yet")
    settings = settings or Settings.from_env()
    emitted: Counter[str] = Counter()
    with Emitter(client or job_connection(), kinds.SOURCE_WORKER, SIGNALS) as out:
        fresh = [(emit_derived(out, d), d) for d in session.detected(events)]
        emitted.update(d.kind for _, d in fresh)
        db = sql.connect(settings)
        try:
            found = [
                *session.preferences(db, events, fresh, _encode(settings)),
                *session.failures(db, events),
            ]
        finally:
            db.close()
        for each in found:
            emit_derived(out, each)
            emitted[each.kind] += 1
    log.info("session.thought", session=session_id, emitted=dict(emitted))
    return dict(emitted)


def _encode(settings: Settings) -> Encode:
    def encode(texts: Sequence[str]) -> np.ndarray:
        return encoder(settings.embedding_model).encode(list(texts))

    return encode


def think_lifecycle(
    client: "redis.Redis | None" = None, settings: Settings | None = None, at: datetime | None = None
) -> dict[str, int]:
    """Promote and archive what the snapshot calls for at `at` (by default now):
    workers/dynamics/lifecycle.py; then catch up on the preferences and recurring failures that
    sessions ending together missed (as the signal worker, whose events they are); how many
    events of each kind."""
    settings = settings or Settings.from_env()
    when = at or _now()
    emitted = Counter(
        _think("lifecycle", LIFECYCLE, client, settings, lambda db: lifecycle.lifecycle(db, when))
    )
    emitted += Counter(
        _think("catch-up", SIGNALS, client, settings, lambda db: session.caught_up(db, _encode(settings)))
    )
    return dict(emitted)


def think_decay(
    client: "redis.Redis | None" = None, settings: Settings | None = None, at: datetime | None = None
) -> dict[str, int]:
    """Judge each settled recall not judged yet, used or failed (workers/dynamics/decay.py)."""
    return _think("decay", STRENGTH, client, settings, lambda db: decay.judgments(db, at or _now()))


def think_communities(
    client: "redis.Redis | None" = None, settings: Settings | None = None
) -> dict[str, int]:
    """Detect the communities of each project's entity graph (workers/dynamics/communities.py)."""
    return _think("communities", COMMUNITIES, client, settings, communities.communities_of)


def think_dream(
    client: "redis.Redis | None" = None, settings: Settings | None = None, at: datetime | None = None
) -> dict[str, int]:
    """Consolidate each project's recent episodes (workers/dynamics/consolidation.py)."""
    settings = settings or Settings.from_env()
    when = at or _now()

    def derive(db: duckdb.DuckDBPyConnection) -> Iterator[Derived]:
        for project in consolidation.projects(db, when):
            snapshot = consolidation.Snapshot(db, project, when)
            vectors = vectors_of([e.episode_id for e in snapshot.episodes])
            found = dream.dream(
                snapshot.episodes, snapshot.facts, snapshot.entities, vectors, when, snapshot.known
            )
            yield from consolidation.dreamt(snapshot, found)
        for project in consolidation.standing_projects(db):
            yield from consolidation.light(db, project, vectors_of)

    def vectors_of(memory_ids: list[str]) -> dict[str, np.ndarray]:
        return _memory_vectors(settings, memory_ids)

    return _think("dream", DREAM, client, settings, derive)


def _memory_vectors(settings: Settings, memory_ids: list[str]) -> dict[str, np.ndarray]:
    """The vectors the embedder holds for these memories (none yet: HDBSCAN has nothing to
    cluster, and shared entities alone decide)."""
    from projections.vectors import chunk_vectors, vector_matrix, vectors_path

    rows = chunk_vectors(vectors_path(settings.projections_dir, settings.embedding_model), memory_ids)
    if not rows.num_rows:
        return {}
    chunks: dict[str, list[np.ndarray]] = {}
    for memory_id, vector in zip(rows.column("memory_id").to_pylist(), vector_matrix(rows), strict=True):
        chunks.setdefault(memory_id, []).append(vector)
    return consolidation.memory_vectors(chunks)


def _think(
    name: str,
    worker: Worker,
    client: "redis.Redis | None",
    settings: Settings | None,
    derive: Callable[[duckdb.DuckDBPyConnection], Iterable[Derived]],
) -> dict[str, int]:
    db = sql.connect(settings or Settings.from_env())
    try:
        emitted = _emit_all(client or job_connection(), worker, derive(db))
    finally:
        db.close()
    log.info(f"{name}.thought", emitted=emitted)
    return emitted


def _emit_all(client: "redis.Redis", worker: Worker, found: Iterable[Derived]) -> dict[str, int]:
    emitted: Counter[str] = Counter()
    with Emitter(client, kinds.SOURCE_WORKER, worker) as out:
        for each in found:
            emit_derived(out, each)
            emitted[each.kind] += 1
    return dict(emitted)


def _now() -> datetime:
    return datetime.now(UTC)
