"""Sessions that never end: a session the hooks recorded that has sent no event for the idle
time (REVERIE_SESSION_IDLE_MINUTES, 30 by default) and never said SessionEnd since its last
event is taken for ended. Claude Code closed with its terminal, or killed, never says it.

The sweep (the follower `idle`, every 5 minutes) reads the snapshot and derives a
`session.idled` for each such session; the dispatcher hands a session that went idle to the
followers of session ends, as it does one that ended (workers/thinking/runner.py), so its
episode, signals and failures are drawn. A session that resumes (new events) and goes idle or
ends again is drawn again: its episode keeps its id (a function of the project and the session)
and the newer event replaces it in the episodes table, so recall shows one episode per session,
the newest.

What it promises: the same snapshot gives the same events, with the same ids (each names the
session and its last event's time, and is caused by its newest work), so two sweeps, on one
machine or two, emit one event per idle spell, kept once by the dispatcher. Imported sessions
are left alone: the import drew them. A session with no work (no prompt, tool use or message)
has nothing to draw and is left alone.

What it costs: one query over the sessions table and the work of the idle ones, milliseconds at
100k prompts; at most PER_SWEEP sessions a sweep (the newest first), so the first sweep over a
long history of sessions that never ended queues their jobs over a few sweeps, not at once.
"""

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import duckdb

from schemas import kinds, memory
from workers.thinking.follower import Derived
from workers.thinking.reading import Reading

PER_SWEEP = 200

_IDLE = """
WITH idle AS (
    SELECT session_id, project, last_event_at FROM sessions
    WHERE from_hooks AND last_event_at < $cutoff
        AND (ended_at IS NULL OR ended_at < last_event_at)
        AND (idled_at IS NULL OR idled_at < last_event_at)
), work AS (
    SELECT event_id, session_id FROM prompts WHERE session_id IN (SELECT session_id FROM idle)
    UNION ALL SELECT event_id, session_id FROM tool_uses WHERE session_id IN (SELECT session_id FROM idle)
    UNION ALL SELECT event_id, session_id FROM messages WHERE session_id IN (SELECT session_id FROM idle)
)
SELECT idle.session_id, idle.project, idle.last_event_at, max(work.event_id)
FROM idle JOIN work USING (session_id)
GROUP BY ALL
ORDER BY idle.last_event_at DESC, idle.session_id
LIMIT $limit
"""


def went_idle(reading: Reading) -> Iterator[Derived]:
    """The follower `idle`: each session idle at the reading's time, by the settings' idle time."""
    return idle(reading.snapshot, reading.at, reading.settings.session_idle_minutes)


def idle(db: duckdb.DuckDBPyConnection, at: datetime, minutes: float) -> Iterator[Derived]:
    """A `session.idled` for each session of the snapshot `db` idle for `minutes` at `at` and not
    taken for ended since its last event (see the module's docstring)."""
    try:
        rows = db.execute(_IDLE, {"cutoff": at - timedelta(minutes=minutes), "limit": PER_SWEEP}).fetchall()
    except duckdb.BinderException:  # a snapshot from before sessions said how they ended: the
        return  # projector rebuilds it, and the next sweep reads the new one
    for session_id, project, last_event_at, newest_work in rows:
        # DuckDB says it in this machine's time zone; the id must be the same on every machine
        last = last_event_at.astimezone(UTC)
        payload = memory.SessionIdled(session_id=session_id, last_event_at=last, idle_minutes=minutes)
        key = f"{session_id}@{last.isoformat()}"
        yield Derived(kinds.SESSION_IDLED, payload, project, (newest_work,), session_id, key)
