"""Claude Code's own memory files, imported (ingest/claude_memory.py reads them): by `reverie
import`, for each worktree on this disk its transcripts name, and when a session starts, by the
job `at_session_start`, which the dispatcher queues for the sessions a batch starts (the hook
stays as it is: it never reads these files).

What reverie knows of each file, its newest reading, comes from the projections' snapshot: a
file unchanged since emits nothing, a changed one its sections again (the view memory_texts
shows the newest reading only, so recall never gives a section and the one that replaced it),
a gone one an empty reading. The events' source is `claude-memory`; recall labels them so, and
the hooks never inject them (Claude Code loads these files itself: projections/recall/pipeline.py).
Run twice over the same files and snapshot, it emits the same ids, and the dispatcher keeps one
of each. Off, with nothing read, when REVERIE_CLAUDE_MEMORY_OFF is set.

Costs: a query of the snapshot's claude_memories (a row per section ever read) per project, and
a stat and a read of each memory file (a few KB each).
"""

import os
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

import structlog

from ingest.claude_memory import Known, Place, Planned, readings
from ingest.emit import Emitter
from ingest.project import kept_place
from schemas.kinds import CLAUDE_MEMORY_READ, SOURCE_CLAUDE_MEMORY
from schemas.settings import Settings

if TYPE_CHECKING:
    import duckdb
    import redis

log = structlog.get_logger("reverie.claude_memory")

# each file's newest reading a project sees (its own files and the user's), by path
_KNOWN = """
SELECT path, arg_max(digest, event_id), epoch_ms(max(ts)), arg_max(origin, event_id), arg_max(scope, event_id)
FROM claude_memories WHERE scope = 'global' OR project = $project
GROUP BY path
"""


def known(db: "duckdb.DuckDBPyConnection", project: str) -> dict[str, Known]:
    """What the snapshot `db` holds of `project`'s memory files: each one's newest reading."""
    rows = db.execute(_KNOWN, {"project": project}).fetchall()
    return {path: Known(digest, ts_ms, origin, scope) for path, digest, ts_ms, origin, scope in rows}


def planned(
    settings: Settings, places: Sequence[Place], home: str, environ: Mapping[str, str]
) -> list[tuple[Place, Planned]]:
    """The events that bring what the snapshot knows of `places`' memory files up to date, each
    once (worktrees of one project share the user's files)."""
    from projections.sql import connect

    db = connect(settings)
    try:
        found = {
            p.event_id: (place, p)
            for place in places
            for p in readings(place, known(db, place.project), home, environ)
        }
    finally:
        db.close()
    return list(found.values())


def import_places(
    settings: Settings,
    places: Sequence[Place],
    client: "redis.Redis",
    environ: Mapping[str, str] | None = None,
) -> int:
    """Import `places`' memory files (see the module's docstring); how many events were emitted."""
    if not settings.claude_memory or not places:
        return 0
    env = os.environ if environ is None else environ
    home = env.get("HOME") or os.path.expanduser("~")
    with Emitter(client, SOURCE_CLAUDE_MEMORY) as out:
        for place, each in planned(settings, places, home, env):
            at = datetime.fromtimestamp(each.ts_ms // 1000, UTC) + timedelta(milliseconds=each.ts_ms % 1000)
            out.emit(CLAUDE_MEMORY_READ, each.payload, project=place.project, ts=at, event_id=each.event_id)
    return out.sent


def at_session_start(session_ids: list[str]) -> int:
    """The RQ job: import the memory files of the places `session_ids` began in (as their
    first hook kept them); how many events it emitted."""
    from rq import get_current_job

    settings = Settings.from_env()
    job = get_current_job()
    if job is None:
        raise RuntimeError("not in an RQ job")
    places = [Place(*kept) for s in session_ids if (kept := kept_place(settings.sessions_dir, s)) and kept[1]]
    places = [p for p in dict.fromkeys(places) if os.path.isdir(p.root)]
    emitted = import_places(settings, places, job.connection)
    log.info("claude_memory.imported", sessions=len(session_ids), places=len(places), emitted=emitted)
    return emitted
