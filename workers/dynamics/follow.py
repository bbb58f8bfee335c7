"""The followers of memory's dynamics: the signals of each session that ends (and the
preferences and recurring failures they make), the scheduled ones (the lifecycle, its catch-up
on what sessions ending together missed, the dream cycle, communities and decay), and
reflection, which answers whoever asks.
"""

from collections.abc import Iterator

import duckdb
import numpy as np

from projections.sql import EVENTS_BEHIND
from schemas import kinds
from schemas.ids import id_time_ms
from schemas.reflection import Asked
from workers.dynamics import consolidation, decay, dream, lifecycle, reflect, session
from workers.llm.config import configured
from workers.thinking.follower import Derived
from workers.thinking.reading import Reading, tokens_today


def signals(reading: Reading) -> Iterator[Derived]:
    """A finished session's signals, then the preferences and recurring failures of its project
    that they make (workers/dynamics/session.py)."""
    detected = list(session.detected(reading.events))
    yield from detected
    fresh = [(reading.id_of(d), d) for d in detected]
    yield from session.preferences(reading.snapshot, reading.events, fresh, reading.encode)
    yield from session.failures(reading.snapshot, reading.events)


def promotions(reading: Reading) -> Iterator[Derived]:
    """What the snapshot calls for at the reading's time: promotions and archivals
    (workers/dynamics/lifecycle.py)."""
    return lifecycle.lifecycle(reading.snapshot, reading.at)


def catch_up(reading: Reading) -> Iterator[Derived]:
    """The preferences and recurring failures that sessions ending together missed, as the
    signal worker, whose events they are."""
    return session.caught_up(reading.snapshot, reading.encode)


def judgments(reading: Reading) -> Iterator[Derived]:
    """Each settled recall not judged yet, used or failed (workers/dynamics/decay.py)."""
    return decay.judgments(reading.snapshot, reading.at)


def graph_communities(reading: Reading) -> Iterator[Derived]:
    """The communities of each project's entity graph (workers/dynamics/communities.py)."""
    from workers.dynamics import communities  # here: networkx takes 0.16 s that reflection need not pay

    return communities.communities_of(reading.snapshot)


def dreams(reading: Reading) -> Iterator[Derived]:
    """Each project's recent episodes consolidated (workers/dynamics/consolidation.py)."""
    db, when = reading.snapshot, reading.at

    def vectors_of(memory_ids: list[str]) -> dict[str, np.ndarray]:
        return _memory_vectors(reading, memory_ids)

    for project in consolidation.projects(db, when):
        snapshot = consolidation.Snapshot(db, project, when)
        vectors = vectors_of([e.episode_id for e in snapshot.episodes])
        found = dream.dream(
            snapshot.episodes, snapshot.facts, snapshot.entities, vectors, when, snapshot.known
        )
        yield from consolidation.dreamt(snapshot, found)
    for project in consolidation.standing_projects(db):
        yield from consolidation.light(db, project, vectors_of)


def _memory_vectors(reading: Reading, memory_ids: list[str]) -> dict[str, np.ndarray]:
    """The vectors the embedder holds for these memories (none yet: HDBSCAN has nothing to
    cluster, and shared entities alone decide)."""
    from projections.vectors import chunk_vectors, vector_matrix

    settings = reading.settings
    rows = chunk_vectors(settings.vectors_dir, memory_ids)
    if not rows.num_rows:
        return {}
    chunks: dict[str, list[np.ndarray]] = {}
    for memory_id, vector in zip(rows.column("memory_id").to_pylist(), vector_matrix(rows), strict=True):
        chunks.setdefault(memory_id, []).append(vector)
    return consolidation.memory_vectors(chunks)


def opinion(reading: Reading) -> Iterator[Derived]:
    """The opinion memory forms on the question asked (workers/dynamics/reflect.py), worded by the
    LLM when one is configured, recorded with the events behind its evidence as its causes; the
    opinion itself is the asker's answer."""
    asked = reading.request
    if not isinstance(asked, Asked):
        raise TypeError(f"reflection answers an Asked, not a {type(asked).__name__}")
    db = reading.snapshot
    formed = reflect.reflect(asked.query, asked.project, asked.evidence, asked.disposition, _held(db, asked))
    causes = _events_behind(db, [e.memory_id for e in [*formed.supporting, *formed.contradicting]])
    llm = configured(reading.settings)
    if llm is not None and (formed.supporting or formed.contradicting):
        worded, used = reflect.with_llm(llm, formed, asked.disposition, tokens_today(db))
        if causes:
            yield Derived(kinds.LLM_USED, used, asked.project, causes)
        formed = worded or formed
    reading.answer = formed
    if causes:
        yield from reflect.recorded(formed, asked.project, causes)


def _held(db: duckdb.DuckDBPyConnection, asked: Asked) -> float | None:
    """The confidence of the project's opinion on the question, if it holds one."""
    row = db.execute(
        "SELECT confidence FROM opinions WHERE opinion_id = ?",
        [reflect.opinion_id(asked.project, asked.query)],
    ).fetchone()
    return float(row[0]) if row else None


def _events_behind(db: duckdb.DuckDBPyConnection, memory_ids: list[str]) -> tuple[str, ...]:
    """The events behind these memories: what an opinion drawn from them was caused by."""
    if not memory_ids:
        return ()
    rows = db.execute(EVENTS_BEHIND, {"ids": memory_ids}).fetchall()
    return tuple(row[0] for row in rows if _is_event_id(row[0]))


def _is_event_id(value: str) -> bool:
    try:
        id_time_ms(value)
    except (ValueError, KeyError):
        return False
    return True
