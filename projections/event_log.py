"""The durable event log: Parquet segments on disk, in event-id order within each segment.

A segment is written whole or not at all (temp file, fsync, rename, fsync the folder), so a
reader never sees half a batch and a crash mid-write leaves only a temp file, removed at the
next start. The log never holds an event id twice: the archiver asks `archived_ids` before
appending. DuckDB reads the segments directly (see `projections.sql`).
"""

import contextlib
import glob
import os
import time
from typing import TextIO

import msgspec
import pyarrow as pa
import pyarrow.parquet as pq

from schemas.events import Event
from schemas.files import lock_directory, sync_directory, write_durably
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
COMPACTION_INTENT = "compaction.json"


class Compaction(msgspec.Struct, frozen=True):
    """A merge of small segments into one, written down before it starts."""

    target: str
    sources: list[str]


class EventLog:
    def __init__(self, directory: str) -> None:
        self.directory = directory

    def lock(self) -> TextIO:
        """Take the log for this process alone (one archiver per data directory); keep the file open.

        Raises Busy if another process holds it.
        """
        return lock_directory(self.directory, f"another process is archiving into {self.directory}")

    def segments(self) -> list[str]:
        return sorted(glob.glob(os.path.join(self.directory, SEGMENT_GLOB)))

    def recover(self) -> int:
        """Finish or forget what a crash interrupted: temp files, a half-done compaction; how many."""
        leftovers = glob.glob(os.path.join(self.directory, ".seg-*.tmp"))
        for path in leftovers:
            os.unlink(path)
        intent = os.path.join(self.directory, COMPACTION_INTENT)
        if os.path.exists(intent):
            with open(intent, "rb") as f:
                plan = msgspec.json.decode(f.read(), type=Compaction)
            if os.path.exists(os.path.join(self.directory, plan.target)):
                self._remove(plan.sources)  # the merged segment holds them all
            os.unlink(intent)
            leftovers.append(intent)
        return len(leftovers)

    def archived_ids(self) -> set[str]:
        """The ids in the log. From another process than the archiver, a compaction running
        meanwhile may hide some: enough to skip work, not to prove absence."""
        ids: set[str] = set()
        for path in self.segments():
            with contextlib.suppress(FileNotFoundError):
                ids.update(pq.read_table(path, columns=["id"]).column("id").to_pylist())
        return ids

    def count(self) -> int:
        """How many events the log holds (as closely as a compaction running meanwhile allows)."""
        return sum(self.rows(self.segments()).values())

    def rows(self, segments: list[str]) -> dict[str, int]:
        """How many events each segment holds (0 for one a compaction just removed)."""
        counts = {}
        for path in segments:
            try:
                counts[path] = pq.read_metadata(path).num_rows
            except FileNotFoundError:
                counts[path] = 0
        return counts

    def append(self, events: list[Event]) -> str:
        """Write one segment holding `events` (sorted by id); its path."""
        return self._write(to_table(sorted(events, key=lambda e: e.id)), _segment_name())

    def compact(self, small_rows: int = 10_000, at_least: int = 16, min_age_s: float = 60) -> str | None:
        """Merge the small segments into one, once there are `at_least` of them; its path.

        Quiet sessions archive a few events per batch, and a log of thousands of tiny files
        is slow to read. Segments younger than `min_age_s` are left for the jobs that check
        them. A crash mid-way is finished or forgotten by `recover`: the plan is written
        first, the merged segment second, and only then are the small ones removed.
        """
        old = time.time() - min_age_s
        small = [
            p
            for p in self.segments()
            if os.path.getmtime(p) <= old and pq.read_metadata(p).num_rows < small_rows
        ]
        if len(small) < at_least:
            return None
        table = pa.concat_tables([pq.read_table(p, schema=SCHEMA) for p in small]).sort_by("id")
        plan = Compaction(target=_segment_name(), sources=[os.path.basename(p) for p in small])
        intent = write_durably(self.directory, COMPACTION_INTENT, msgspec.json.encode(plan))
        merged = self._write(table, plan.target)
        self._remove(plan.sources)
        os.unlink(intent)
        sync_directory(self.directory)
        return merged

    def _remove(self, names: list[str]) -> None:
        for name in names:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(self.directory, name))
        sync_directory(self.directory)

    def _write(self, table: pa.Table, name: str) -> str:
        os.makedirs(self.directory, mode=0o700, exist_ok=True)
        temp = os.path.join(self.directory, f".{name}.tmp")
        final = os.path.join(self.directory, name)
        with open(temp, "wb") as f:
            pq.write_table(table, f, compression="zstd")
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, final)
        sync_directory(self.directory)
        return final


def _segment_name() -> str:
    return f"seg-{new_event_id()}.parquet"


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
