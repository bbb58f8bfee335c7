"""What tests build with: events made by hand, for folds and for the log, with every field
under the test's control (ids, times, causes); the event the import emits for a transcript
line; the events a producer appended to a stream; and an event log with a projector over it.
Producers never use these: they emit (ingest/emit.py).
"""

from datetime import datetime
from typing import TYPE_CHECKING, Any

import duckdb
import msgspec

from ingest.emit import encode
from ingest.transcripts import ImportedEvent
from projections.event_log import EventLog
from projections.projector import Projector
from schemas.events import Event, check_provenance, decode_event
from schemas.ids import new_event_id
from schemas.kinds import SOURCE_CLAUDE_CODE, SOURCE_IMPORT, SOURCE_WORKER
from schemas.settings import STREAM, Settings

if TYPE_CHECKING:
    import redis


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


def event_at(
    kind: str,
    payload: msgspec.Struct | dict[str, Any],
    when: datetime,
    *,
    project: str,
    session_id: str | None = None,
    caused_by: tuple[str, ...] = (),
) -> Event:
    """An event that happened (and was recorded) at `when`, its id of that moment: a worker's
    when it has causes, else one Claude Code's hooks recorded."""
    return make_event(
        kind,
        payload,
        id=new_event_id(int(when.timestamp() * 1000)),
        ts=when,
        recorded_at=when,
        project=project,
        source=SOURCE_WORKER if caused_by else SOURCE_CLAUDE_CODE,
        session_id=session_id,
        caused_by=caused_by,
    )


def imported_event(item: ImportedEvent) -> Event:
    """The event `reverie import` emits for `item`."""
    _, data = encode(
        item.kind, item.payload, project=item.project, source=SOURCE_IMPORT, ts=item.ts, event_id=item.id
    )
    return decode_event(data)


def streamed(client: "redis.Redis") -> list[Event]:
    """Every event appended to the stream `client` serves, in order."""
    entries: list[tuple[bytes, dict[bytes, bytes]]] = client.xrange(STREAM)  # type: ignore[assignment]
    return [decode_event(fields[b"e"]) for _, fields in entries]


class Folding:
    """An event log and a projector over it, in the data directory of `settings`."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.log = EventLog(settings.event_log_dir)
        self.projector = Projector(settings.event_log_dir, settings.projections_dir)

    def fold(self, *batches: list[Event]) -> duckdb.DuckDBPyConnection:
        """Archive each batch and fold it; the projector's connection."""
        if self.projector.db is None:
            self.projector.open()
        for batch in batches:
            self.log.append(batch)
            self.projector.catch_up()
        assert self.projector.db is not None
        return self.projector.db

    def close(self) -> None:
        self.projector.close()
