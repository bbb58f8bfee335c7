"""The durable event log: Parquet segments on disk, in event-id order within each segment.

A segment is written whole or not at all (temp file, fsync, rename, fsync the folder), so a
reader never sees half a batch and a crash mid-write leaves only a temp file, removed at the
next start. The log never holds an event id twice: the archiver asks `archived_ids` before
appending. DuckDB reads the segments directly (see `projections.sql`).

Every page carries a CRC, checked whenever reverie reads a segment here (`read`). A file named
like a segment that cannot be read whole (damaged, truncated, or not a segment at all) is set
aside in `quarantine/` with a note saying why, and the rows that still read are put back under
its name (`quarantine`): the dispatcher, the projector, `reverie sql` and `reverie status` all
read through this one path, so none of them stops on such a file.
"""

import contextlib
import glob
import os
import tempfile
import time
from collections.abc import Callable
from typing import TextIO

import msgspec
import pyarrow as pa
import pyarrow.parquet as pq

from schemas.disk.files import lock_directory, sync_directory, write_durably
from schemas.events import Event
from schemas.ids import new_event_id, utc_now_iso
from schemas.status import Quarantined

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
QUARANTINE = "quarantine"
# Only the columns whose values repeat get a dictionary: a dictionary of unique ids or payloads
# is one page, and its damage would lose every row of the segment instead of one page's.
_DICTIONARY = ["kind", "project", "session_id", "agent", "source"]
# What pyarrow raises on a file it cannot read; see _damaged for which of those are damage.
_UNREADABLE = (OSError, ValueError, pa.ArrowException)


class Compaction(msgspec.Struct, frozen=True):
    """A merge of small segments into one, written down before it starts."""

    target: str
    sources: list[str]


class NotASegment(ValueError):
    """A Parquet file in the log's folder whose columns are not an event segment's."""


OnQuarantine = Callable[[Quarantined], None]


class EventLog:
    def __init__(self, directory: str, on_quarantine: OnQuarantine | None = None) -> None:
        """`on_quarantine` hears of each file this reader sets aside (to log it, to warn)."""
        self.directory = directory
        self.on_quarantine = on_quarantine

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
            with contextlib.suppress(FileNotFoundError):  # a reader's salvage, just renamed
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

    def read(self, path: str, columns: list[str] | None = None) -> pa.Table | None:
        """The events of segment `path` (only `columns`, if given), every page checked.

        None if a compaction removed it meanwhile. If it cannot be read, it is quarantined and
        what still reads is returned (see `quarantine`): callers never stop on a damaged file.
        """
        try:
            with _open(path) as parquet:
                return parquet.read(columns=columns)
        except FileNotFoundError:
            return None
        except _UNREADABLE as error:
            if not _damaged(error):
                raise
            _, kept = self.quarantine(path, error)
            return kept.select(columns) if kept is not None and columns else kept

    def check(self) -> list[Quarantined]:
        """Read every segment whole (a batch at a time) and quarantine those that cannot be: what
        was set aside. A full read of the log: for after a failure only."""
        found: list[Quarantined] = []
        for path in self.segments():
            try:
                with _open(path) as parquet:
                    for _ in parquet.iter_batches():
                        pass
            except FileNotFoundError:
                continue
            except _UNREADABLE as error:
                if not _damaged(error):
                    raise
                if (note := self.quarantine(path, error)[0]) is not None:
                    found.append(note)
        return found

    def archived_ids(self) -> set[str]:
        """The ids in the log. From another process than the archiver, a compaction running
        meanwhile may hide some: enough to skip work, not to prove absence."""
        ids: set[str] = set()
        for path in self.segments():
            table = self.read(path, ["id"])
            if table is not None:
                ids.update(table.column("id").to_pylist())
        return ids

    def count(self) -> int:
        """How many events the log holds (as closely as a compaction running meanwhile allows)."""
        return sum(self.rows(self.segments()).values())

    def rows(self, segments: list[str]) -> dict[str, int]:
        """How many events each segment holds, from its footer (0 for one a compaction just
        removed); a segment whose footer cannot be read is quarantined."""
        counts = {}
        for path in segments:
            try:
                with _open(path) as parquet:
                    counts[path] = parquet.metadata.num_rows
            except FileNotFoundError:
                counts[path] = 0
            except _UNREADABLE as error:
                if not _damaged(error):
                    raise
                _, kept = self.quarantine(path, error)
                counts[path] = kept.num_rows if kept is not None else 0
        return counts

    def quarantined(self) -> list[Quarantined]:
        """The notes of every file set aside so far, by segment name."""
        notes = []
        for note in glob.glob(os.path.join(self.directory, QUARANTINE, "*.json")):
            with contextlib.suppress(FileNotFoundError, msgspec.DecodeError), open(note, "rb") as f:
                notes.append(msgspec.json.decode(f.read(), type=Quarantined))
        return sorted(notes, key=lambda n: (n.segment, n.at))

    def quarantine(self, path: str, damage: Exception) -> tuple[Quarantined | None, pa.Table | None]:
        """Set the segment `path`, which could not be read, aside: its note (None if it was not
        set aside) and the rows of it that read now (None: none).

        The file, as found, is linked into `quarantine/` beside a note (`Quarantined`); then the
        rows that still read whole take its place under its name (a new file, renamed over it),
        or, if none do, it leaves the log. So no readable event is lost, and none appears twice:
        they keep their segment, which the projector folds, or has folded, by name.

        Any reader may do this, concurrently with the others and with the archiver: the steps
        are idempotent; a file that vanished (a compaction removed it), that a compaction is
        merging, that reads whole now, or that another reader replaced meanwhile is left as it
        is. Costs a full read of the file.
        """
        name = os.path.basename(path)
        try:
            found = os.stat(path)
        except FileNotFoundError:
            return None, None
        if name in self._compacting():  # its events are in the merged segment: it goes anyway
            return None, None
        kept, rows, lost_ids = _salvage(path)
        salvaged = kept.num_rows if kept is not None else 0
        if salvaged == rows:  # every row reads: another reader put its salvage back already
            return None, kept
        folder = os.path.join(self.directory, QUARANTINE)
        os.makedirs(folder, mode=0o700, exist_ok=True)
        moved_to = _link_aside(path, found, folder, name)
        if moved_to is None:
            return None, _read_quietly(path)
        note = Quarantined(
            segment=name,
            moved_to=moved_to,
            reason=" ".join(f"{type(damage).__name__}: {damage}".split()),
            at=utc_now_iso(),
            rows=rows,
            salvaged=salvaged,
            lost=None if rows is None else rows - salvaged,
            lost_ids=lost_ids,
        )
        write_durably(folder, os.path.basename(moved_to) + ".json", msgspec.json.encode(note))
        if not self._put_back(path, found, kept):
            return note, _read_quietly(path)  # another reader put its salvage back first
        if self.on_quarantine is not None:
            self.on_quarantine(note)
        return note, kept

    def _put_back(self, path: str, found: os.stat_result, kept: pa.Table | None) -> bool:
        """Replace the damaged file at `path` with `kept` (or remove it); False if it changed
        meanwhile (someone else did it, or a compaction removed it)."""
        fd, temp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=self.directory)
        os.close(fd)
        try:
            if kept is not None:
                _write_file(kept, temp)
            if not _same_file(path, found):
                return False
            if kept is not None:
                os.replace(temp, path)
            else:
                os.unlink(path)
        except FileNotFoundError:  # a starting archiver cleared our temp file: try again later
            return False
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp)
        sync_directory(self.directory)
        return True

    def _compacting(self) -> set[str]:
        """The segments a compaction running now (or cut short) is merging."""
        try:
            with open(os.path.join(self.directory, COMPACTION_INTENT), "rb") as f:
                return set(msgspec.json.decode(f.read(), type=Compaction).sources)
        except (FileNotFoundError, msgspec.DecodeError):
            return set()

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
        aged = [p for p in self.segments() if _modified(p) <= old]
        small = [p for p, n in self.rows(aged).items() if n < small_rows]
        if len(small) < at_least:
            return None
        tables = {p: t for p in small if (t := self.read(p)) is not None}
        if len(tables) < at_least:  # some vanished or were set aside: next time
            return None
        table = pa.concat_tables(tables.values()).sort_by("id")
        plan = Compaction(target=_segment_name(), sources=[os.path.basename(p) for p in tables])
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
        _write_file(table, temp)
        os.replace(temp, final)
        sync_directory(self.directory)
        return final


def _write_file(table: pa.Table, path: str) -> None:
    """Write `table` as a segment file at `path`, on disk before returning."""
    with open(path, "wb") as f:
        pq.write_table(table, f, compression="zstd", use_dictionary=_DICTIONARY, write_page_checksum=True)
        f.flush()
        os.fsync(f.fileno())


def _open(path: str) -> pq.ParquetFile:
    """A segment, its pages checked as they are read; NotASegment if it is another Parquet file."""
    parquet = pq.ParquetFile(path, page_checksum_verification=True)
    if not parquet.schema_arrow.equals(SCHEMA):
        parquet.close()
        raise NotASegment(f"not an event segment: its columns are {', '.join(parquet.schema_arrow.names)}")
    return parquet


def _damaged(error: Exception) -> bool:
    """Whether `error`, raised reading a file, is about what the file holds. An OSError with an
    errno comes from the system (too many files open, a failing disk...): not the file's fault,
    and quarantining a sound segment for it would take its events out of the log."""
    return not (isinstance(error, OSError) and error.errno is not None)


def _salvage(path: str) -> tuple[pa.Table | None, int | None, list[str]]:
    """The rows of a damaged segment that read whole (None: none), how many rows its footer
    says it held (None: no footer), and the ids of the others where those still read.

    A row group reads whole or, page by page, up to its first damaged page."""
    try:
        with _open(path) as parquet:
            rows = parquet.metadata.num_rows
            groups = [parquet.metadata.row_group(g).num_rows for g in range(parquet.num_row_groups)]
    except _UNREADABLE as error:
        if not _damaged(error):
            raise
        return None, None, []
    kept: list[pa.RecordBatch] = []
    lost_ids: list[str] = []
    for group, size in enumerate(groups):
        read = _readable_rows(path, group)
        kept.extend(read)
        if (whole := sum(b.num_rows for b in read)) < size:
            lost_ids.extend(_readable_ids(path, group)[whole:])
    table = pa.Table.from_batches(kept, SCHEMA)
    return (table if table.num_rows else None), rows, lost_ids


def _readable_rows(path: str, group: int) -> list[pa.RecordBatch]:
    """The rows of row group `group`, one at a time, until one does not read."""
    read: list[pa.RecordBatch] = []
    try:
        with _open(path) as parquet:
            for batch in parquet.iter_batches(batch_size=1, row_groups=[group]):
                read.append(batch)
    except _UNREADABLE as error:
        if not _damaged(error):
            raise
    return read


def _readable_ids(path: str, group: int) -> list[str]:
    try:
        with _open(path) as parquet:
            return list(parquet.read_row_group(group, columns=["id"]).column("id").to_pylist())
    except _UNREADABLE as error:
        if not _damaged(error):
            raise
        return []


def _link_aside(path: str, found: os.stat_result, folder: str, name: str) -> str | None:
    """Link the file `found` at `path` into `folder` under `name` (or a fresh name if an earlier
    incident's file holds it); where. None if `path` is not that file any more."""
    target = os.path.join(folder, name)
    if os.path.lexists(target) and not _same_file(target, found):
        target = os.path.join(folder, f"{name}.{new_event_id()}")
    try:
        os.link(path, target)
        linked = True
    except FileNotFoundError:
        return None
    except FileExistsError:  # another reader linked it a moment ago
        linked = False
    if not _same_file(target, found):  # `path` was replaced, or removed and made again, meanwhile
        if linked:
            os.unlink(target)
        return None
    sync_directory(folder)
    return target


def _same_file(path: str, found: os.stat_result) -> bool:
    try:
        now = os.stat(path)
    except FileNotFoundError:
        return False
    return (now.st_dev, now.st_ino) == (found.st_dev, found.st_ino)


def _read_quietly(path: str) -> pa.Table | None:
    """What `path` holds if it reads whole now; None otherwise."""
    try:
        with _open(path) as parquet:
            return parquet.read()
    except FileNotFoundError:
        return None
    except _UNREADABLE as error:
        if not _damaged(error):
            raise
        return None


def _modified(path: str) -> float:
    try:
        return os.path.getmtime(path)
    except FileNotFoundError:
        return float("inf")


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


def to_events(table: pa.Table) -> list[Event]:
    """The events of a segment's rows (`to_table`'s inverse)."""
    return [
        Event(
            id=row["id"],
            kind=row["kind"],
            ts=row["ts"],
            recorded_at=row["recorded_at"],
            project=row["project"],
            session_id=row["session_id"],
            agent=row["agent"],
            source=row["source"],
            v=row["v"],
            payload=msgspec.Raw(row["payload"].encode()),
            caused_by=tuple(row["caused_by"] or ()),
        )
        for row in table.to_pylist()
    ]
