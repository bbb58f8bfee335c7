"""What happened to an entity, oldest first, as one project may see it.

A project sees its own rows of `entity_timeline` (analytics.sql) and those that hold everywhere,
and the entity's first sighting once any of those is there; another project's rows never. The
entity is named by its id or by its name, whatever its case.
"""

from datetime import datetime
from typing import NamedTuple

from projections.sql import connect
from schemas.settings import Settings

LIMIT = 200

_SQL = f"""
WITH named AS (SELECT * FROM entity_timeline WHERE entity_id = $e OR lower(name) = lower($e)),
here AS (SELECT * FROM named WHERE everywhere OR project = $project)
SELECT name, happened_at, what, detail FROM named
WHERE entity_id IN (SELECT entity_id FROM here)
    AND (everywhere OR project = $project OR what = 'first seen')
ORDER BY happened_at NULLS LAST LIMIT {LIMIT}
"""


class Happening(NamedTuple):
    """One line of an entity's timeline: `what` happened to `name` at `at` (None: not dated)."""

    name: str
    at: datetime | None
    what: str
    detail: str | None


def entity_timeline(settings: Settings, entity: str, project: str) -> list[Happening]:
    """What happened to `entity` as `project` may see it, oldest first, the undated last (at most
    LIMIT). Raises projections.sql.NoSnapshot before the projector has published a snapshot."""
    db = connect(settings, snapshot_required=True)
    try:
        rows = db.execute(_SQL, {"e": entity, "project": project}).fetchall()
    finally:
        db.close()
    return [Happening(*row) for row in rows]
