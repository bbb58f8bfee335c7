"""The projector: folds the event log into the current store, and replay: rebuilds a store.

The projector reads the segments it has not read yet (through the event log, which checks
every page and sets aside what cannot be read), keeps the events it has not folded yet (by
id: a compaction rewrites folded events into a new segment), and folds them in one
transaction, in id order. Then it publishes a snapshot for readers.

A store is derived data: one that cannot be opened or read is rebuilt from the log, as
`reverie replay` does, and swapped in; so is one in which a `project.identified` event moved
what was folded before to another project (replay reads every identification first, so the
live store and a replay agree).
"""

import contextlib
import os
from collections.abc import Callable, Iterator

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from projections.event_log import SCHEMA, EventLog, OnQuarantine
from projections.folds import FOLDS, MAPPING, runs_on
from projections.folds.base import IDENTIFY
from projections.store import (
    MEMORIES_CHANGED_BY,
    SCHEMA_VERSION,
    Store,
    current_store,
    lock_projections,
    make_current,
    new_store,
    remove_store,
    schema_version,
    unreadable,
)
from schemas.disk.files import Busy, lock_directory
from schemas.kinds import PROJECT_IDENTIFIED
from schemas.registry import TEXTLESS_KINDS

BATCH_EVENTS = 50_000
MOVED = "projects_moved"  # meta's key: an identification moved what was folded (rebuild)
_MEMORIES_CHANGED = f"""
INSERT OR REPLACE INTO meta SELECT '{MEMORIES_CHANGED_BY}', max(id) FROM batch
WHERE kind NOT IN ({", ".join(f"'{k}'" for k in sorted(TEXTLESS_KINDS))}) HAVING count(*) > 0
"""
Progress = Callable[[int], None]


def _batches(segments: list[str], rows: dict[str, int], limit: int) -> Iterator[list[str]]:
    batch: list[str] = []
    size = 0
    for path in segments:
        batch.append(path)
        size += rows[path]
        if size >= limit:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def fold_segments(db: duckdb.DuckDBPyConnection, event_log: EventLog, segments: list[str]) -> int:
    """Fold the events of `segments` not folded yet, in one transaction; how many. Each event is
    folded under its project (projections/folds/base.py: MAPPING); if an identification among
    them moves what was folded before to another project, meta says so (`moved`); and it says
    which event last changed what memories say (`MEMORIES_CHANGED_BY`)."""
    db.register("segment_rows", _read(event_log, segments))
    db.execute("BEGIN")
    try:
        for sql in MAPPING:
            db.execute(sql)
        present = {kind for (kind,) in db.execute("SELECT DISTINCT kind FROM batch").fetchall()}
        for name, sql in FOLDS:
            if runs_on(name, present):
                db.execute(sql)
        db.execute(_MEMORIES_CHANGED)
        folded = db.execute("INSERT INTO folded SELECT id, kind, source FROM batch").fetchall()[0][0]
        db.executemany(
            "INSERT OR IGNORE INTO folded_segments VALUES (?)", [[os.path.basename(p)] for p in segments]
        )
        db.execute("DROP TABLE batch")
        db.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(duckdb.Error):  # the failure may have ended the transaction already
            db.execute("ROLLBACK")
        raise
    finally:
        with contextlib.suppress(duckdb.Error):  # a failure may have invalidated the database
            db.unregister("segment_rows")
    return int(folded)


def moved(db: duckdb.DuckDBPyConnection) -> str | None:
    """What an identification moved to another project after it was folded (None: nothing)."""
    found = db.execute("SELECT value FROM meta WHERE key = ?", [MOVED]).fetchall()
    return str(found[0][0]) if found else None


def fold_identifications(db: duckdb.DuckDBPyConnection, event_log: EventLog, segments: list[str]) -> int:
    """Learn every root's newest identification in `segments` before folding them (replay: so
    what was recorded under a root folds under its project from the first batch); how many."""
    tables = []
    for path in segments:
        found = event_log.read(path, ["kind"])
        if found is None or not pc.any(pc.equal(found.column("kind"), PROJECT_IDENTIFIED)).as_py():
            continue
        if (table := event_log.read(path)) is not None:
            tables.append(table.filter(pc.equal(table.column("kind"), PROJECT_IDENTIFIED)))
    if not tables:
        return 0
    db.register("identifications", pa.concat_tables(tables))
    try:
        db.execute(
            "CREATE OR REPLACE TEMP TABLE batch AS "
            "SELECT * REPLACE (payload::JSON AS payload) FROM identifications"
        )
        db.execute(IDENTIFY)
        db.execute("DROP TABLE batch")
    finally:
        db.unregister("identifications")
    return sum(len(t) for t in tables)


def _read(event_log: EventLog, segments: list[str]) -> pa.RecordBatchReader:
    """The events of `segments`, read (and checked) one segment at a time as DuckDB scans them."""

    def batches() -> Iterator[pa.RecordBatch]:
        for path in segments:
            if (table := event_log.read(path)) is not None:
                yield from table.to_batches()

    return pa.RecordBatchReader.from_batches(SCHEMA, batches())


class Projector:
    """The one writer of the current store."""

    def __init__(
        self,
        event_log_dir: str,
        root: str,
        batch_events: int = BATCH_EVENTS,
        on_quarantine: OnQuarantine | None = None,
        rebuild_when_moved: bool = True,
    ) -> None:
        self.event_log = EventLog(event_log_dir, on_quarantine)
        self.root = root
        self.batch_events = batch_events
        self.rebuild_when_moved = rebuild_when_moved  # (replay's own projector knows every identification)
        self.rebuilt_for: str | None = None  # what the last rebuild for moved projects moved
        self.store: Store | None = None
        self.db: duckdb.DuckDBPyConnection | None = None
        self.unpublished = False
        self.published: tuple[int, int, int] | None = None  # the snapshot it published last

    def open(self, progress: Progress | None = None) -> str | None:
        """Open the current store; first rebuild it from the log if there is none, if it is of
        another schema version or if it cannot be opened. Why it was rebuilt (None: it was not)."""
        store = current_store(self.root)
        why = "no store yet" if store is None else self._open(store)
        if why is not None:
            self.rebuild(progress)
        return why

    def _open(self, store: Store) -> str | None:
        """Open `store` for writing; None, or why it will not do."""
        db: duckdb.DuckDBPyConnection | None = None
        try:
            db = store.connect()
            if schema_version(db) != SCHEMA_VERSION:
                db.close()
                return "a store of another schema version"
            if self.rebuild_when_moved and (what := moved(db)) is not None:
                db.close()
                return f"identified projects moved what was folded: {what}"
            self.store, self.db = store, db
            # a crash between a fold's commit and its publication left the snapshot behind
            self._publish()
        except duckdb.Error as e:
            if db is not None:
                db.close()
            self.store, self.db = None, None
            return f"{store.database} cannot be read: {e}"
        return None

    def rebuild(self, progress: Progress | None = None) -> None:
        """Fold the whole log into a fresh store, swap it in and open it (as `reverie replay`)."""
        self.close()
        replay(self.event_log.directory, self.root, self.batch_events, progress, self.event_log.on_quarantine)
        if (why := self._open(_current(self.root))) is not None:
            raise RuntimeError(f"the store just rebuilt does not open: {why}")

    def damage(self) -> str | None:
        """Why the store it writes cannot be read whole (None: it can). Closes it first, then
        reads every table from the file: after a failed fold, a passing failure passes this,
        damage does not. The next `follow` opens the current store again."""
        store = self.store
        self.close()
        if store is None or (why := unreadable(store.database)) is None:
            return None
        return f"{store.database} cannot be read: {why}"

    def follow(self) -> bool:
        """Switch to the current store if a replay swapped another one in; whether it did."""
        current = current_store(self.root)
        if self.store is not None and current is not None and current.path == self.store.path:
            return False
        self.close()
        self.open()
        return True

    def catch_up(self, progress: Progress | None = None) -> int:
        """Fold what the log has that the store has not; publish a snapshot if anything changed."""
        assert self.db is not None and self.store is not None, "open() first"
        done = {row[0] for row in self.db.execute("SELECT name FROM folded_segments").fetchall()}
        segments = [p for p in self.event_log.segments() if os.path.basename(p) not in done]
        folded = 0
        for batch in _batches(segments, self.event_log.rows(segments), self.batch_events):
            folded += fold_segments(self.db, self.event_log, batch)
            self.unpublished = True
            if progress:
                progress(folded)
            if self.rebuild_when_moved and (what := moved(self.db)) is not None:
                # an identification moved what was folded before to another project: fold the
                # log again knowing it, as replay would (once per root and project)
                self.rebuild(progress)
                self.rebuilt_for = what
                return folded
        if self.unpublished:  # also what a failed publication left for this round
            self._publish()
        return folded

    def mend_snapshot(self) -> bool:
        """Publish again if the snapshot is not the file it published last (overwritten, damaged
        or removed behind its back); whether it did. Costs a stat."""
        assert self.store is not None, "open() first"
        if self.store.snapshot_identity() == self.published:
            return False
        self._publish()
        return True

    def _publish(self) -> None:
        assert self.db is not None and self.store is not None, "open() first"
        self.published = self.store.publish(self.db)
        self.unpublished = False

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
        self.store, self.db = None, None


def _current(root: str) -> Store:
    store = current_store(root)
    if store is None:
        raise RuntimeError(f"no current store in {root}")
    return store


def replay(
    event_log_dir: str,
    root: str,
    batch_events: int = BATCH_EVENTS,
    progress: Progress | None = None,
    on_quarantine: OnQuarantine | None = None,
) -> int:
    """Rebuild the projections from the whole log into a fresh store and swap it in; events folded.

    Folds never re-run a thinking worker: derived events are in the log like the others.
    """
    os.makedirs(root, mode=0o700, exist_ok=True)
    store = new_store(root)
    projector = Projector(event_log_dir, root, batch_events, on_quarantine, rebuild_when_moved=False)
    # held while the store is built: killed before it is current, the store is an orphan that
    # any projector removes (prune_stores), and never one that is being built
    with lock_directory(store.path, f"{store.path} is being built"):
        try:
            projector.store, projector.db = store, store.connect()
            # every root's project first: what was recorded under a root before its
            # identification folds under its project, wherever the identification is in the log
            fold_identifications(projector.db, projector.event_log, projector.event_log.segments())
            folded = projector.catch_up(progress)
            projector._publish()
        except BaseException:
            projector.close()
            remove_store(store)
            raise
        projector.close()
        make_current(root, store)
    # the generations it replaced go now, unless a running projector may still be writing one
    # (it removes them itself once it has followed the swap)
    try:
        lock = lock_projections(root)
    except Busy:
        return folded
    with lock:
        prune_stores(root)
    return folded


def prune_stores(root: str) -> None:
    """Remove every generation but the current one and those a replay is building (an orphan
    of a killed replay goes too). Only the holder of the projections' lock."""
    current = current_store(root)
    for name in os.listdir(root):
        path = os.path.join(root, name)
        if name.startswith("store-") and (current is None or path != current.path):
            try:
                building = lock_directory(path, "")
            except Busy:
                continue
            with building:
                remove_store(Store(path))
