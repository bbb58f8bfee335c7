"""The embedder: keeps the vectors in step with the snapshots the projector publishes.

It runs as a thread of the recall service's process, with its encoder (the stack's one copy of
the model), at a lower priority than the recall it shares the process with (Linux gives each
thread its own niceness); `reverie embed` runs one round by hand.
"""

import contextlib
import os
import re
import shutil
import sys
import threading
from typing import TextIO

import duckdb
import msgspec
import structlog

from projections import sql
from projections.embedder import Embedder, SyncProgress, SyncReport
from projections.embedding_model import EmbeddingCache, Encoder, load_encoder
from projections.store import memories_changed_by
from projections.vectors import Vectors
from schemas.disk.files import Busy, lock_directory
from schemas.settings import BACKGROUND_NICENESS, Settings

log = structlog.get_logger("reverie.embedder")
CACHE = "embedding-cache.duckdb"
_VECTORS_DIR = re.compile(r"[A-Za-z0-9.-]+-[0-9a-f]{8}")  # see Settings.vectors_dir
_MAX_BACKOFF_S = 60.0


def lock_vectors(settings: Settings) -> TextIO:
    """Hold the vectors for this process alone (one embedder); keep the handle open."""
    root = settings.vectors_root
    return lock_directory(root, f"another process is embedding into {root}")


def open_embedder(settings: Settings, encoder: Encoder | None = None) -> Embedder:
    """The embedder of `settings`' model; slow unless given the `encoder`, loaded already."""
    encoder = encoder or load_encoder(settings.embedding_model)
    vectors = Vectors(settings.vectors_dir, encoder.dim)
    cache = EmbeddingCache(os.path.join(settings.vectors_root, CACHE))
    return Embedder(encoder, cache, vectors)


def sync_once(
    settings: Settings,
    embedder: Embedder,
    progress: SyncProgress | None = None,
    stop: threading.Event | None = None,
) -> SyncReport:
    """One round against the snapshot published last; sql.NoSnapshot if there is none yet."""
    with sql.connect(settings, snapshot_required=True, files=False) as db:
        return _round(db, embedder, progress, stop)


def _round(
    db: duckdb.DuckDBPyConnection,
    embedder: Embedder,
    progress: SyncProgress | None = None,
    stop: threading.Event | None = None,
) -> SyncReport:
    """One round against the snapshot `db` reads."""
    changed_by = memories_changed_by(db, "projections.meta")
    return embedder.sync(db, progress, stop.is_set if stop else lambda: False, changed_by)


def prune_vectors(settings: Settings, keep: str) -> None:
    """Remove the vectors of other models and layouts (the cache keeps their embeddings)."""
    for entry in os.scandir(settings.vectors_root):
        if entry.is_dir() and _VECTORS_DIR.fullmatch(entry.name) and entry.path != keep:
            shutil.rmtree(entry.path, ignore_errors=True)


def _log_progress(done: int, total: int) -> None:
    log.info("vectors.progress", memories=done, of=total)


def _wait_for_lock(settings: Settings, stop: threading.Event) -> TextIO | None:
    """The vectors' lock, once `reverie embed` or another embedder lets it go."""
    while not stop.is_set():
        try:
            return lock_vectors(settings)
        except Busy:
            log.info("embedder.waiting", reason="another process is embedding")
            stop.wait(5.0)
    return None


def in_background() -> None:
    """Make this thread alone BACKGROUND_NICENESS nicer, as `os.nice` does a process (Linux
    gives each thread its own niceness), so that what it does waits and a prompt's recall in
    the same process does not; elsewhere it runs as it is."""
    if sys.platform != "linux":
        return
    me = threading.get_native_id()
    with contextlib.suppress(OSError):  # only ever nicer, which any user may ask
        os.setpriority(
            os.PRIO_PROCESS, me, min(os.getpriority(os.PRIO_PROCESS, me) + BACKGROUND_NICENESS, 19)
        )


def run_embedder(
    settings: Settings, encoder: Encoder, stop: threading.Event, interval_s: float = 0.5
) -> None:
    """Sync the vectors with each snapshot the projector publishes, until `stop` is set."""
    in_background()
    lock = _wait_for_lock(settings, stop)
    if lock is None:
        return
    with lock:
        embedder = open_embedder(settings, encoder)
        log.info("embedder.started", model=embedder.encoder.name, vectors=embedder.vectors.path)
        try:
            _follow_snapshots(settings, embedder, stop, interval_s)
        finally:
            embedder.close()
            log.info("embedder.stopped")


def _follow_snapshots(
    settings: Settings, embedder: Embedder, stop: threading.Event, interval_s: float
) -> None:
    seen = None
    pruned = False
    wait = interval_s
    db: duckdb.DuckDBPyConnection | None = None  # one connection, moved from snapshot to snapshot
    try:
        while not stop.is_set():
            snapshot = sql.snapshot_identity(settings)
            if snapshot is not None and snapshot != seen:
                try:
                    if db is None:
                        db = sql.connect(settings, snapshot_required=True, files=False)
                    else:
                        sql.reattach(db, settings)
                    report = _round(db, embedder, _log_progress, stop)
                except sql.NoSnapshot:  # swapped away as we looked, or unreadable: the next one
                    pass
                except Exception:  # an unreadable snapshot, a full disk, a bug: retry, ever less often
                    log.exception("vectors.sync_failed", retry_in_s=wait)
                    wait = min(wait * 2, _MAX_BACKOFF_S)
                    _close(db)
                    db = None  # the next round connects afresh
                else:
                    if report != SyncReport():  # a round with nothing to do says nothing
                        log.info("vectors.synced", **msgspec.structs.asdict(report))
                    wait = interval_s
                    if report.finished:
                        seen = snapshot
                    if report.finished and not pruned:
                        prune_vectors(settings, keep=embedder.vectors.path)
                        pruned = True
            stop.wait(wait)
    finally:
        _close(db)


def _close(db: duckdb.DuckDBPyConnection | None) -> None:
    if db is not None:
        db.close()
