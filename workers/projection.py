"""The projector process: the one writer of the projections, following the event log."""

import threading

import duckdb
import structlog

from projections.projector import Projector, prune_stores
from projections.store import lock_projections
from schemas.settings import Settings

log = structlog.get_logger("reverie.projector")


def run_projector(settings: Settings, stop: threading.Event, interval_s: float = 0.5) -> None:
    """Fold new segments as they appear, until `stop` is set."""
    lock = lock_projections(settings.projections_dir)
    projector = Projector(settings.event_log_dir, settings.projections_dir)
    try:
        if projector.open():
            log.info("projections.rebuilt", reason="no store of this schema version")
        prune_stores(settings.projections_dir)
        log.info("projector.started", store=projector.store.path if projector.store else None)
        while not stop.is_set():
            try:
                if projector.follow():
                    log.info("projections.swapped", store=projector.store.path if projector.store else None)
                    prune_stores(settings.projections_dir)
                if folded := projector.catch_up():
                    log.info("events.folded", events=folded)
            except (duckdb.Error, OSError) as e:
                # a segment merged away while we read it, a replay swapping stores: next round,
                # from the store that is current then
                log.warning("fold.retry", error=str(e))
                projector.close()
            stop.wait(interval_s)
    finally:
        projector.close()
        lock.close()
        log.info("projector.stopped")
