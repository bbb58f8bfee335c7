"""The projector: folds the event log into the current store, and replay: rebuilds a store.

The projector reads the segments it has not read yet, keeps the events it has not folded
yet (by id: a compaction rewrites folded events into a new segment), and folds them in one
transaction, in id order. Then it publishes a snapshot for readers.
"""

import contextlib
import os
from collections.abc import Callable, Iterator

import duckdb

from projections.event_log import EventLog
from projections.folds import FOLDS
from projections.literals import string_literal
from projections.store import (
    SCHEMA_VERSION,
    Store,
    current_store,
    lock_projections,
    make_current,
    new_store,
    remove_store,
    schema_version,
)
from schemas.files import Busy

BATCH_EVENTS = 50_000
# The events of a batch not folded yet, once each, in id order. A project recorded as Claude
# Code's key is read back to a path (schema.sql's project_root) by the event's cwd, else by
# where its session began.
_BATCH = """
CREATE OR REPLACE TEMP TABLE batch AS
WITH fresh AS (
    SELECT * REPLACE (payload::JSON AS payload) FROM read_parquet({files}, union_by_name = true)
    WHERE id NOT IN (SELECT id FROM folded)
    QUALIFY row_number() OVER (PARTITION BY id) = 1
), began AS (
    SELECT session_id, arg_min(payload->>'cwd', id) FILTER (WHERE payload->>'cwd' IS NOT NULL) AS cwd
    FROM fresh GROUP BY ALL
)
SELECT fresh.* REPLACE (
    project_root(project_root(fresh.project, fresh.payload->>'cwd'), coalesce(sessions.cwd, began.cwd))
    AS project
)
FROM fresh LEFT JOIN began USING (session_id) LEFT JOIN sessions USING (session_id)
ORDER BY id
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


def fold_segments(db: duckdb.DuckDBPyConnection, segments: list[str]) -> int:
    """Fold the events of `segments` not folded yet, in one transaction; how many."""
    files = "[" + ", ".join(string_literal(p) for p in segments) + "]"
    db.execute("BEGIN")
    try:
        db.execute(_BATCH.format(files=files))
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
        with contextlib.suppress(duckdb.Error):  # the failure may have ended the transaction already
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
        self.unpublished = False

    def open(self, progress: Progress | None = None) -> bool:
        """Open the current store, or rebuild it if there is none or it is of another version;
        whether it was rebuilt."""
        store = current_store(self.root)
        if store is not None:
            db = store.connect()
            if schema_version(db) == SCHEMA_VERSION:
                self.store, self.db = store, db
                # a crash between a fold's commit and its publication left the snapshot behind
                store.publish(db)
                return False
            db.close()
        self.close()
        replay(self.event_log.directory, self.root, self.batch_events, progress)
        self.open()
        return True

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
            folded += fold_segments(self.db, batch)
            self.unpublished = True
            if progress:
                progress(folded)
        if self.unpublished:  # also what a failed publication left for this round
            self.store.publish(self.db)
            self.unpublished = False
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
    try:
        projector.store, projector.db = store, store.connect()
        folded = projector.catch_up(progress)
        store.publish(projector.db)
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
    """Remove every generation but the current one. Only the holder of the projections' lock."""
    current = current_store(root)
    for name in os.listdir(root):
        path = os.path.join(root, name)
        if name.startswith("store-") and (current is None or path != current.path):
            remove_store(Store(path))
