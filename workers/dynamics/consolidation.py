"""What a dream cycle reads of the snapshot, and the events its findings become.

Per project: the episodes of the last 7 days not yet consolidated (with their entities, and
their vectors from LanceDB, the mean of their chunks'), the standing facts stated in their
sessions, and the entities' names; then workers/dynamics/dream.py decides, and this makes:

- a `fact.reconsolidated` for each fact that recurred 3+ times across a cluster;
- a `fact.asserted` for each distilled semantic fact (network `observation`: concluded, not
  observed);
- an `episode.consolidated` per cluster, standing for its episodes and titled with the subject
  they share ("3 sessions about the users table migration"); the fold links each member to it
  (`consolidated_into`) and leaves its own title and summary as they were;
- a `fact.expired` with `duplicate_of` for each exact duplicate, and for each procedure a more
  successful one stands for (light and skill consolidation).

Every event is caused by the events that made what it is about (the episodes' and the facts'
newest events), so a run twice over one snapshot emits the same ids.
"""

import hashlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime

import duckdb
import numpy as np

from schemas import kinds, memory
from schemas.memory import fact_id
from workers.dynamics import dream
from workers.thinking.follower import Derived

# the standing facts of each episode's session: its events' causes were said in that session
_FACTS = """
WITH said AS (
    SELECT event_id, session_id FROM prompts UNION ALL SELECT event_id, session_id FROM tool_uses
    UNION ALL SELECT event_id, session_id FROM compactions UNION ALL SELECT event_id, session_id FROM messages
)
SELECT f.fact_id, f.source, f.target, f.relation, f.description, f.confidence, f.memory_type, f.updated_by,
    list(DISTINCT e.episode_id ORDER BY e.episode_id) AS episodes
FROM facts_current f
JOIN fact_history h USING (fact_id) JOIN provenance p ON p.event_id = h.event_id
JOIN said s ON s.event_id = p.caused_by JOIN episodes e ON e.session_id = s.session_id
WHERE f.project = $project AND list_contains($episodes, e.episode_id)
GROUP BY ALL ORDER BY f.fact_id
"""


class Snapshot:
    """The dream cycle's inputs for one project, read from the snapshot in `db`."""

    def __init__(self, db: duckdb.DuckDBPyConnection, project: str, now: datetime) -> None:
        self.project = project
        rows = db.execute(
            """
            SELECT episode_id, coalesce(ended_at, started_at), entities, updated_by, coalesce(title, '')
            FROM episodes
            WHERE project = $project AND consolidated_into IS NULL AND session_id IS NOT NULL
                AND coalesce(ended_at, started_at) >= $since
            ORDER BY episode_id
            """,
            {"project": project, "since": now - dream.WINDOW},
        ).fetchall()
        self.episodes = [
            dream.Episode(e, at, tuple(sorted(entities or [])), project, title)
            for e, at, entities, _, title in rows
        ]
        self.episode_events = {e: by for e, _, _, by, _ in rows}
        facts = db.execute(
            _FACTS, {"project": project, "episodes": [e.episode_id for e in self.episodes]}
        ).fetchall()
        self.facts = [
            dream.Fact(f, s, t, r, d, c, m or "semantic", tuple(eps)) for f, s, t, r, d, c, m, _, eps in facts
        ]
        self.fact_events = {row[0]: row[7] for row in facts}
        self.known = db.execute(
            """
            SELECT DISTINCT source, target FROM facts_current
            WHERE project = $project AND target IS NOT NULL AND source <> target
                AND coalesce(memory_type, 'semantic') <> 'episodic'
            ORDER BY 1, 2
            """,
            {"project": project},
        ).fetchall()
        named = sorted({e for ep in self.episodes for e in ep.entities} | {f.source for f in self.facts})
        self.entities = [
            dream.Entity(entity_id, name)
            for entity_id, name in db.execute(
                "SELECT entity_id, name FROM entities WHERE list_contains($ids, entity_id) ORDER BY 1",
                {"ids": named},
            ).fetchall()
        ]

    def causes(self, episodes: Iterable[str] = (), facts: Iterable[str] = ()) -> tuple[str, ...]:
        return tuple(
            sorted({self.episode_events[e] for e in episodes} | {self.fact_events[f] for f in facts})
        )


def projects(db: duckdb.DuckDBPyConnection, now: datetime) -> list[str]:
    """The projects with enough recent episodes to dream about."""
    rows = db.execute(
        """
        SELECT project FROM episodes
        WHERE consolidated_into IS NULL AND session_id IS NOT NULL
            AND coalesce(ended_at, started_at) >= $since
        GROUP BY project HAVING count(*) >= $least ORDER BY project
        """,
        {"since": now - dream.WINDOW, "least": dream.MIN_EPISODES},
    ).fetchall()
    return [r[0] for r in rows]


def dreamt(snapshot: Snapshot, found: dream.Dream) -> Iterator[Derived]:
    """The events a dream's findings become."""
    project = snapshot.project
    for again in found.reconsolidated:
        payload = memory.FactReconsolidated(
            fact_id=again.fact_id,
            confidence=again.confidence,
            reason=f"dream: stated in {again.occurrences} episodes of one cluster",
        )
        causes = snapshot.causes(again.cluster, [again.fact_id])
        yield Derived(kinds.FACT_RECONSOLIDATED, payload, project, causes, None, f"{again.fact_id}:dream")
    for distilled in found.distilled:
        fact = memory.FactAsserted(
            fact_id=fact_id(project, distilled.relation, distilled.source, distilled.target),
            source=distilled.source,
            relation=distilled.relation,  # type: ignore[arg-type]
            target=distilled.target,
            description=distilled.description,
            confidence=distilled.confidence,
            memory_type="semantic",
            network="observation",
        )
        causes = snapshot.causes(distilled.cluster, distilled.evidence)
        yield Derived(kinds.FACT_ASSERTED, fact, project, causes, None, fact.fact_id)
    for cluster, subject in zip(found.clusters, found.subjects, strict=True):
        consolidated = _consolidated(cluster, subject, snapshot)
        yield Derived(kinds.EPISODE_CONSOLIDATED, consolidated, project, snapshot.causes(cluster), None)


_LISTED = 10  # the members' titles a consolidated episode's summary names
_TITLE = 120  # characters of each


def _consolidated(cluster: Sequence[str], subject: str, snapshot: Snapshot) -> memory.EpisodeConsolidated:
    """The episode that stands for `cluster`, named by the `subject` its members share (the dream
    finds none without one), its summary naming each member's own title: a memory added beside
    them, which leaves them as they were."""
    members = sorted(
        (e for e in snapshot.episodes if e.episode_id in set(cluster)),
        key=lambda e: (e.ended_at, e.episode_id),
    )
    digest = hashlib.blake2b("\0".join(sorted(cluster)).encode(), digest_size=10).hexdigest()
    titles = [_cut(" ".join(e.title.split())) for e in members if e.title.strip()]
    more = f"; and {len(titles) - _LISTED} more" if len(titles) > _LISTED else ""
    return memory.EpisodeConsolidated(
        episode_id=f"episode:dream:{digest}",
        from_episodes=sorted(cluster),
        title=f"{len(members)} sessions about {subject}",
        summary=f"Consolidated by a dream cycle from {len(members)} episodes between "
        f"{members[0].ended_at:%Y-%m-%d} and {members[-1].ended_at:%Y-%m-%d}"
        + (f": {'; '.join(titles[:_LISTED])}{more}." if titles else "."),
    )


def _cut(text: str) -> str:
    return text if len(text) <= _TITLE else text[: _TITLE - 1] + "…"


_STANDING = """
SELECT f.fact_id, f.source, f.target, f.relation, f.description, f.confidence, f.memory_type, f.updated_by,
    count(a.memory_id) FILTER (a.cause = 'used') AS used,
    count(a.memory_id) FILTER (a.cause = 'failed') AS failed
FROM facts_current f LEFT JOIN activation_log a ON a.memory_id = f.fact_id
WHERE f.project = $project
GROUP BY ALL ORDER BY f.fact_id
"""


def light(
    db: duckdb.DuckDBPyConnection, project: str, vectors_of: Callable[[list[str]], Mapping[str, np.ndarray]]
) -> Iterator[Derived]:
    """Light and skill consolidation of a project's standing facts: each exact duplicate, and
    each procedure a similar one succeeds better than (its judged recalls: used or failed),
    expired with `duplicate_of` the fact that stands for it."""
    rows = db.execute(_STANDING, {"project": project}).fetchall()
    events = {row[0]: row[7] for row in rows}
    facts = [dream.Fact(f, s, t, r, d, c, m or "semantic", ()) for f, s, t, r, d, c, m, *_ in rows]
    duplicates = dream.duplicates(facts)
    gone = {d for d, _ in duplicates}
    procedures = [
        dream.Procedure(f, d, used, failed)
        for f, _, _, _, d, _, m, _, used, failed in rows
        if m == "procedural" and f not in gone
    ]
    skills = (
        dream.skills(procedures, vectors_of([p.fact_id for p in procedures])) if len(procedures) > 1 else []
    )
    for pairs, why in (
        (duplicates, "an exact duplicate"),
        (skills, "a similar procedure succeeds more often"),
    ):
        for fact, kept in pairs:
            payload = memory.FactExpired(fact_id=fact, reason=why, duplicate_of=kept)
            causes = tuple(sorted({events[fact], events[kept]}))
            yield Derived(kinds.FACT_EXPIRED, payload, project, causes, None, f"{fact}>{kept}")


def standing_projects(db: duckdb.DuckDBPyConnection) -> list[str]:
    rows = db.execute("SELECT DISTINCT project FROM facts WHERE project IS NOT NULL ORDER BY 1").fetchall()
    return [r[0] for r in rows]


def memory_vectors(vectors: Mapping[str, list[np.ndarray]]) -> dict[str, np.ndarray]:
    """Each memory's vector: the unit mean of its chunks'."""
    found = {}
    for episode_id, chunks in vectors.items():
        mean = np.mean(np.stack(chunks), axis=0)
        norm = float(np.linalg.norm(mean))
        if norm > 0:
            found[episode_id] = mean / norm
    return found
