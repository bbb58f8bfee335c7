"""What tests build with: events made by hand, for folds and for the log, with every field
under the test's control (ids, times, causes), and the event the import emits for a
transcript line. Producers never use these: they emit (ingest/emit.py).
"""

from datetime import datetime
from typing import Any

import msgspec

from ingest.emit import encode
from ingest.transcripts import ImportedEvent
from schemas.events import Event, check_provenance, decode_event
from schemas.kinds import SOURCE_IMPORT


def make_event(
    kind: str,
    payload: msgspec.Struct | dict[str, Any],
    *,
    id: str,
    ts: datetime,
    recorded_at: datetime,
    project: str,
    source: str,
    session_id: str | None = None,
    agent: str = "main",
    caused_by: tuple[str, ...] = (),
) -> Event:
    """An event with exactly these fields (its payload neither redacted nor cut)."""
    check_provenance(kind, caused_by)
    return Event(
        id=id,
        kind=kind,
        ts=ts,
        recorded_at=recorded_at,
        project=project,
        session_id=session_id,
        agent=agent,
        source=source,
        payload=msgspec.Raw(msgspec.json.encode(payload)),
        caused_by=caused_by,
    )


def imported_event(item: ImportedEvent) -> Event:
    """The event `reverie import` emits for `item`."""
    _, data = encode(
        item.kind, item.payload, project=item.project, source=SOURCE_IMPORT, ts=item.ts, event_id=item.id
    )
    return decode_event(data)
