"""The paths recorded in the log that this disk knows to be another project, said as events.

Events recorded under a root's path (before projects were repositories, or before a repository
had its remote) fold under the repository once a `project.identified` event says the path
belongs to it (ingest/project.py). The hook and the import say so for the roots they see; the
stack says it for every recorded path that is a folder on this disk, when it starts (the
projector, `reverie up`) and before `reverie replay`. Reading the disk happens here, once; the
projections only fold the events, so the same log gives the same tables on any machine. A path
not on this disk (transcripts imported from another machine) stays its own project.
"""

import os
import time

import duckdb

from ingest.emit import Emitter
from ingest.project import first_sight, identify, mark
from schemas.kinds import PROJECT_IDENTIFIED, SOURCE_WORKER
from schemas.observed import ProjectIdentified
from schemas.settings import Settings
from workers.redis_client import connect


def unidentified(db: duckdb.DuckDBPyConnection) -> list[ProjectIdentified]:
    """Each project recorded in the store `db` that is a folder on this disk whose project
    (`identify`) is not what it is folded as."""
    try:
        recorded = db.execute("SELECT recorded, project FROM recorded_projects ORDER BY 1").fetchall()
    except duckdb.CatalogException:  # a store from before projects were repositories
        recorded = db.execute("SELECT DISTINCT project, project FROM sessions ORDER BY 1").fetchall()
    found = []
    for path, folded_as in recorded:
        if isinstance(path, str) and os.path.isabs(path) and os.path.isdir(path):
            project, _ = identify(path)
            if project != folded_as:
                found.append(ProjectIdentified(root=path, project=project))
    return found


SESSIONS_KEPT_S = 30 * 86400  # where a session began, for its later hooks: a month


def forget_old_sessions(settings: Settings, older_than_s: float = SESSIONS_KEPT_S) -> int:
    """Remove the hook's notes of where sessions began (ingest/project.py) untouched for
    `older_than_s`; how many. A session resumed after that is placed by its folder again, and
    the projections keep every session in the project it was first folded under anyway."""
    try:
        names = os.listdir(settings.sessions_dir)
    except FileNotFoundError:
        return 0
    old, removed = time.time() - older_than_s, 0
    for name in names:
        path = os.path.join(settings.sessions_dir, name)
        try:
            if os.path.getmtime(path) < old:
                os.unlink(path)
                removed += 1
        except FileNotFoundError:
            continue
    return removed


def say(settings: Settings, found: list[ProjectIdentified]) -> str:
    """Append an event per identification to the stream, or the spool while Redis is away;
    where they went ("stream" or "spool"; "" for none)."""
    if not found:
        return ""
    with Emitter(connect(settings, timeout=2.0), SOURCE_WORKER, spool=settings) as out:
        for each in found:
            out.emit(PROJECT_IDENTIFIED, each, project=each.project)
    went = out.went_to
    for each in found:  # what the hooks need not say again
        if marker := first_sight(settings.identified_dir, each.root, each.project):
            mark(marker, each.project)
    return went
