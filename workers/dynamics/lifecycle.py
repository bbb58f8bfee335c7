"""The lifecycle of memory (every 6 hours): promotion and archiving, as events.

Three tiers, after HORA:

- **T1, working memory** (`working`): what was learned in the last 24 hours. Its age says so;
  no event is needed (the view `memory_tiers`).
- **T2, short term** (`short_term`): every other fact. Its ACT-R activation over days
  (projections/recall/scoring.py: each use, its learning included, counts; a correction or a
  failure weighs 1.5) orders it in recall, beside how well it matches; it never hides it. Decay
  orders memories: a fact nothing contradicts stays recallable however long it goes unused, so
  that importing a year of transcripts and running every job keeps every fact (what may leave
  recall: docs/dynamics.md).
- **T3, long term** (`long_term`): a fact stated or used in 3 or more sessions is promoted
  (`tier.promoted`).

Sessions whose last event is more than 30 days old are archived (`tier.promoted` to `archived`,
their events untouched). The monthly aggregates are views (`monthly_sentiment`,
`monthly_tool_usage`), so they never go stale; the rolling window of 500 signals is what
crystallization reads (workers/dynamics/crystallize.py).

What it emits follows from the snapshot and the time: run twice, or on two workers at once, it
emits the same events (their ids follow from the facts and their causes), kept once.
"""

from collections.abc import Iterator
from datetime import datetime, timedelta

import duckdb

from schemas import kinds, memory
from workers.thinking.follower import Derived

PROMOTION_SESSIONS = 3
ARCHIVE_AFTER = timedelta(days=30)

# The sessions each fact was stated or used in: its events' causes, and the recalls that gave it
# to an agent that then used it (workers/dynamics/decay.py).
_FACT_SESSIONS = """
WITH said AS (
    SELECT event_id, session_id FROM prompts
    UNION ALL SELECT event_id, session_id FROM tool_uses
    UNION ALL SELECT event_id, session_id FROM compactions
    UNION ALL SELECT event_id, session_id FROM messages
)
SELECT fact_id, session_id, min(event_id) AS first FROM (
    SELECT h.fact_id, s.session_id, s.event_id
    FROM fact_history h JOIN provenance p ON p.event_id = h.event_id JOIN said s ON s.event_id = p.caused_by
    UNION ALL
    SELECT a.memory_id, r.session_id, r.event_id
    FROM activation_log a
    JOIN provenance p ON p.event_id = a.event_id
    JOIN retrievals r ON r.event_id = p.caused_by
    WHERE a.cause = 'used'
) WHERE session_id IS NOT NULL
GROUP BY ALL
"""

_STANDING = """
SELECT f.fact_id, f.project, coalesce(t.tier, 'short_term') AS tier
FROM facts_current f LEFT JOIN tiers t ON t.memory_id = f.fact_id
ORDER BY f.fact_id
"""


def lifecycle(db: duckdb.DuckDBPyConnection, now: datetime) -> Iterator[Derived]:
    """Every promotion and archiving the snapshot in `db` calls for at `now`."""
    sessions = _sessions_per_fact(db)
    for fact_id, project, tier in db.execute(_STANDING).fetchall():
        seen = sessions.get(fact_id, [])
        if tier not in ("long_term", "archived") and len(seen) >= PROMOTION_SESSIONS:
            yield _promoted(fact_id, project, tier, seen)
    yield from _archived(db, now)


def _sessions_per_fact(db: duckdb.DuckDBPyConnection) -> dict[str, list[str]]:
    """Each fact's sessions, as the first event of each that stated or used it, oldest first."""
    found: dict[str, list[str]] = {}
    for fact_id, first in db.execute(
        f"SELECT fact_id, first FROM ({_FACT_SESSIONS}) ORDER BY 1, 2"
    ).fetchall():
        found.setdefault(fact_id, []).append(first)
    return found


def _promoted(fact_id: str, project: str, tier: str, sessions: list[str]) -> Derived:
    payload = memory.TierPromoted(
        memory_id=fact_id,
        from_tier="short_term" if tier != "working" else "working",
        to_tier="long_term",
        reason=f"stated or used in {len(sessions)} sessions",
    )
    # the first three sessions' first events: a later session does not change what promoted it
    causes = tuple(sessions[:PROMOTION_SESSIONS])
    return Derived(kinds.TIER_PROMOTED, payload, project, causes, None, f"{fact_id}:long_term")


def _archived(db: duckdb.DuckDBPyConnection, now: datetime) -> Iterator[Derived]:
    rows = db.execute(
        """
        SELECT s.session_id, s.project, max(e.event_id)
        FROM sessions s
        JOIN (SELECT event_id, session_id FROM prompts UNION ALL SELECT event_id, session_id FROM tool_uses
              UNION ALL SELECT event_id, session_id FROM messages) e USING (session_id)
        LEFT JOIN tiers t ON t.memory_id = s.session_id
        WHERE s.last_event_at < $cutoff AND t.tier IS DISTINCT FROM 'archived'
        GROUP BY ALL ORDER BY 1
        """,
        {"cutoff": now - ARCHIVE_AFTER},
    ).fetchall()
    for session_id, project, newest in rows:
        payload = memory.TierPromoted(
            memory_id=session_id, from_tier="short_term", to_tier="archived", reason="no event in 30 days"
        )
        yield Derived(kinds.TIER_PROMOTED, payload, project, (newest,), session_id, f"{session_id}:archived")
