"""The embedder process: loads the model once, then keeps the vectors in step with the snapshots."""

import os
import shutil
import threading
from typing import TextIO

import msgspec
import structlog

from projections import sql
from projections.embedder import Embedder, Progress, SyncReport
from projections.embeddings import EmbeddingCache, Encoder, load_encoder
from projections.store import current_store
from projections.vectors import Vectors, vectors_path, vectors_root
from schemas.files import lock_directory
from schemas.settings import Settings

log = structlog.get_logger("reverie.embedder")
CACHE = "embedding-cache.duckdb"


def open_embedder(settings: Settings, encoder: Encoder | None = None) -> tuple[Embedder, TextIO]:
    """The embedder of `settings`' model, and the lock that makes it the only one.

    Slow unless given the `encoder`, loaded already: it loads the model.
    """
    root = vectors_root(settings.projections_dir)
    lock = lock_directory(root, f"another process is embedding into {root}")
    encoder = encoder or load_encoder(settings.embedding_model)
    vectors = Vectors(vectors_path(settings.projections_dir, settings.embedding_model), encoder.dim)
    cache = EmbeddingCache(os.path.join(root, CACHE))
    return Embedder(encoder, cache, vectors), lock


def sync_once(
    settings: Settings,
    embedder: Embedder,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> SyncReport:
    """One round against the snapshot published last."""
    with sql.connect(settings) as db:
        return embedder.sync(db, progress, stop.is_set if stop else lambda: False)


def prune_vectors(settings: Settings, keep: str) -> bool:
    """Remove the vectors of other models and layouts (the cache keeps their embeddings)."""
    root = vectors_root(settings.projections_dir)
    for entry in os.scandir(root):
        if entry.is_dir() and entry.path != keep:
            shutil.rmtree(entry.path, ignore_errors=True)
    return True


def _log_progress(done: int, total: int) -> None:
    log.info("vectors.progress", memories=done, of=total)


def _snapshot_identity(settings: Settings) -> tuple[str, int, int] | None:
    store = current_store(settings.projections_dir)
    try:
        stat = os.stat(store.snapshot) if store else None
    except FileNotFoundError:
        return None
    return (store.snapshot, stat.st_ino, stat.st_mtime_ns) if store and stat else None


def run_embedder(settings: Settings, stop: threading.Event, interval_s: float = 0.5) -> None:
    """Sync the vectors with each snapshot the projector publishes, until `stop` is set."""
    embedder, lock = open_embedder(settings)
    log.info("embedder.started", model=embedder.encoder.name, vectors=embedder.vectors.path)
    seen = pruned = None
    try:
        while not stop.is_set():
            snapshot = _snapshot_identity(settings)
            if snapshot != seen:
                try:
                    report = sync_once(settings, embedder, _log_progress, stop)
                except Exception:  # a snapshot swapped away mid-read, a full disk: next round
                    log.exception("vectors.sync_failed")
                else:
                    log.info("vectors.synced", **msgspec.structs.asdict(report))
                    if report.finished:
                        seen = snapshot
                    if report.finished and not pruned:
                        pruned = prune_vectors(settings, keep=embedder.vectors.path)
            stop.wait(interval_s)
    finally:
        embedder.cache.close()
        lock.close()
        log.info("embedder.stopped")
