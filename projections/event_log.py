"""The durable event log: Parquet segments on disk, in event-id order within each segment.

A segment is written whole or not at all (temp file, fsync, rename, fsync the folder), so a
reader never sees half a batch and a crash mid-write leaves only a temp file, removed at the
next start. The log never holds an event id twice: the archiver asks `archived_ids` before
appending. DuckDB reads the segments directly (see `projections.sql`).
"""

import glob
import os

import pyarrow as pa
import pyarrow.parquet as pq

from schemas.events import Event
from schemas.files import sync_directory
from schemas.ids import new_event_id

SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("kind", pa.string()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("recorded_at", pa.timestamp("us", tz="UTC")),
        ("project", pa.string()),
        ("session_id", pa.string()),
        ("agent", pa.string()),
        ("source", pa.string()),
        ("v", pa.int16()),
        ("payload", pa.string()),
        ("caused_by", pa.list_(pa.string())),
    ]
)
SEGMENT_GLOB = "seg-*.parquet"


class EventLog:
    def __init__(self, directory: str) -> None:
        self.directory = directory

    def segments(self) -> list[str]:
        return sorted(glob.glob(os.path.join(self.directory, SEGMENT_GLOB)))

    def recover(self) -> int:
        """Remove the temp files of writes that a crash interrupted; how many."""
        leftovers = glob.glob(os.path.join(self.directory, ".seg-*.tmp"))
        for path in leftovers:
            os.unlink(path)
        return len(leftovers)

    def archived_ids(self) -> set[str]:
        ids: set[str] = set()
        for path in self.segments():
            ids.update(pq.read_table(path, columns=["id"]).column("id").to_pylist())
        return ids

    def append(self, events: list[Event]) -> str:
        """Write one segment holding `events` (sorted by id); its path."""
        os.makedirs(self.directory, mode=0o700, exist_ok=True)
        table = to_table(sorted(events, key=lambda e: e.id))
        name = f"seg-{new_event_id()}.parquet"
        temp = os.path.join(self.directory, f".{name}.tmp")
        final = os.path.join(self.directory, name)
        with open(temp, "wb") as f:
            pq.write_table(table, f, compression="zstd")
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, final)
        sync_directory(self.directory)
        return final


def to_table(events: list[Event]) -> pa.Table:
    return pa.Table.from_pydict(
        {
            "id": [e.id for e in events],
            "kind": [e.kind for e in events],
            "ts": [e.ts for e in events],
            "recorded_at": [e.recorded_at for e in events],
            "project": [e.project for e in events],
            "session_id": [e.session_id for e in events],
            "agent": [e.agent for e in events],
            "source": [e.source for e in events],
            "v": [e.v for e in events],
            "payload": [bytes(e.payload).decode() for e in events],
            "caused_by": [list(e.caused_by) for e in events],
        },
        schema=SCHEMA,
    )
