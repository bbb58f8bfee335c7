"""The projector: folds the event log into the current store, and replay: rebuilds a store.

The projector reads the segments it has not read yet, keeps the events it has not folded
yet (by id: a compaction rewrites folded events into a new segment), and folds them in one
transaction, in id order. Then it publishes a snapshot for readers.
"""

import os
from collections.abc import Callable, Iterator

import duckdb

from projections.event_log import EventLog
from projections.folds import FOLDS
from projections.store import (
    SCHEMA_VERSION,
    Store,
    current_store,
    make_current,
    new_store,
    remove_store,
    schema_version,
)

BATCH_EVENTS = 50_000
Progress = Callable[[int], None]


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


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


def fold_segments(db: duckdb.DuckDBPyConnection, segments: list[str]) -> int:
    """Fold the events of `segments` not folded yet, in one transaction; how many."""
    files = "[" + ", ".join(_quote(p) for p in segments) + "]"
    db.execute("BEGIN")
    try:
        db.execute(
            "CREATE OR REPLACE TEMP TABLE batch AS "
            "SELECT * REPLACE (payload::JSON AS payload) "
            f"FROM read_parquet({files}, union_by_name = true) "
            "WHERE id NOT IN (SELECT id FROM folded) "
            "QUALIFY row_number() OVER (PARTITION BY id) = 1 ORDER BY id"
        )
        folded = db.execute("SELECT count(*) FROM batch").fetchall()[0][0]
        for _, sql in FOLDS:
            db.execute(sql)
        db.execute("INSERT INTO folded SELECT id FROM batch")
        db.executemany(
            "INSERT OR IGNORE INTO folded_segments VALUES (?)", [[os.path.basename(p)] for p in segments]
        )
        db.execute("DROP TABLE batch")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return int(folded)


class Projector:
    """The one writer of the current store."""

    def __init__(self, event_log_dir: str, root: str, batch_events: int = BATCH_EVENTS) -> None:
        self.event_log = EventLog(event_log_dir)
        self.root = root
        self.batch_events = batch_events
        self.store: Store | None = None
        self.db: duckdb.DuckDBPyConnection | None = None

    def open(self, progress: Progress | None = None) -> bool:
        """Open the current store, or rebuild it if there is none or it is of another version;
        whether it was rebuilt."""
        store = current_store(self.root)
        if store is not None:
            db = store.connect()
            if schema_version(db) == SCHEMA_VERSION:
                self.store, self.db = store, db
                return False
            db.close()
        self.close()
        replay(self.event_log.directory, self.root, self.batch_events, progress)
        self.open()
        return True

    def follow(self) -> None:
        """Switch to the current store if a replay swapped another one in."""
        current = current_store(self.root)
        if self.store is None or current is None or current.path != self.store.path:
            self.close()
            self.open()

    def catch_up(self, progress: Progress | None = None) -> int:
        """Fold what the log has that the store has not; publish a snapshot if anything changed."""
        assert self.db is not None and self.store is not None, "open() first"
        done = {row[0] for row in self.db.execute("SELECT name FROM folded_segments").fetchall()}
        segments = [p for p in self.event_log.segments() if os.path.basename(p) not in done]
        folded = 0
        for batch in _batches(segments, self.event_log.rows(segments), self.batch_events):
            folded += fold_segments(self.db, batch)
            if progress:
                progress(folded)
        if segments:
            self.store.publish(self.db)
        return folded

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
        self.store, self.db = None, None


def replay(
    event_log_dir: str, root: str, batch_events: int = BATCH_EVENTS, progress: Progress | None = None
) -> int:
    """Rebuild the projections from the whole log into a fresh store and swap it in; events folded.

    Folds never re-run a thinking worker: derived events are in the log like the others.
    """
    os.makedirs(root, mode=0o700, exist_ok=True)
    store = new_store(root)
    projector = Projector(event_log_dir, root, batch_events)
    projector.store, projector.db = store, store.connect()
    try:
        folded = projector.catch_up(progress)
        store.publish(projector.db)
    finally:
        projector.close()
    previous = make_current(root, store)
    if previous is not None and previous.path != store.path:
        remove_store(previous)
    return folded
