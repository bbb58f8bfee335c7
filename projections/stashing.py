"""Where a session stands, read from a snapshot, for `reverie stash`: what the compaction manifest
holds (projections/recall/memories.py MANIFEST: the project's last decisions, the files the
session touched; projections/steps.py: the errors nothing after them shows solved), the steps
its agent last said were left, and its goal, the user's first prompt in it (not a slash
command). Deterministic: the same snapshot gives the same stash. Costs a few indexed queries.
`turns` gives what was said in it, for an LLM to word it.
"""

import duckdb

from projections import steps
from projections.recall.memories import LAST_MESSAGE, MANIFEST
from schemas.manifest import next_steps
from schemas.observed import SessionStashed

GOAL_LENGTH = 300  # a goal longer than this is cut at a word, and says so with "…"
SAID_LENGTH = 12_000  # characters of the session's turns an LLM is given to word a stash (the last)

_LATEST = """
SELECT session_id FROM sessions WHERE project = $project ORDER BY last_event_at DESC NULLS LAST, session_id
LIMIT 1"""
_GOAL = """
SELECT clean FROM prompts
WHERE session_id = $session AND agent = 'main' AND NOT is_noise_clean(clean) AND NOT cancelled(clean)
    AND NOT starts_with(clean, '/')  -- a slash command (/reverie:stash itself) is no goal
ORDER BY ts LIMIT 1"""


_TURNS = """
SELECT event_id, who, clean FROM (
    SELECT event_id, ts, 'the user' AS who, clean FROM prompts
    WHERE session_id = $session AND agent = 'main' AND NOT is_noise_clean(clean)
    UNION ALL
    SELECT event_id, ts, 'the agent', clean FROM messages
    WHERE session_id = $session AND agent = 'main' AND NOT is_noise_clean(clean)
) ORDER BY ts, event_id"""


def turns(db: duckdb.DuckDBPyConnection, session_id: str) -> tuple[list[str], str | None]:
    """What the user and the agent said in the session, oldest first, the last SAID_LENGTH
    characters of it (each turn whole, or cut at its start); and the id of its last turn (what a
    stash worded from them is caused by), None when it has none."""
    rows = db.execute(_TURNS, {"session": session_id}).fetchall()
    said: list[str] = []
    room = SAID_LENGTH
    for _, who, text in reversed(rows):
        line = f"{who}: {' '.join(text.split())}"
        said.append(line if len(line) <= room else "…" + line[-room:])
        room -= len(line)
        if room <= 0:
            break
    return said[::-1], rows[-1][0] if rows else None


def latest_session(db: duckdb.DuckDBPyConnection, project: str) -> str | None:
    """The session of `project` that went on last, or None when it has none."""
    found = db.execute(_LATEST, {"project": project}).fetchone()
    return found[0] if found else None


def standing(db: duckdb.DuckDBPyConnection, project: str, session_id: str, name: str) -> SessionStashed:
    """Where `session_id` of `project` stands, as the stash called `name`."""
    given = {"project": project, "session": session_id}

    def values(query: str) -> list[str]:
        wanted = {k: v for k, v in given.items() if f"${k}" in query}
        return [value for (value,) in db.execute(query, wanted).fetchall() if value]

    goal = values(_GOAL)
    last = db.execute(LAST_MESSAGE, given).fetchone()
    return SessionStashed(
        name=name,
        session_id=session_id,
        goal=_short(goal[0]) if goal else None,
        decisions=values(MANIFEST["key_decisions"]),
        open_threads=steps.blockers(steps.reading(db, session_id)),
        next_steps=next_steps(last[0] if last else None),
        files=values(MANIFEST["files_touched"]),
    )


def _short(text: str) -> str:
    line = " ".join(text.split())
    if len(line) <= GOAL_LENGTH:
        return line
    return line[:GOAL_LENGTH].rsplit(" ", 1)[0] + " …"
