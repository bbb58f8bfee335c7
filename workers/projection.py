"""The projector process: the one writer of the projections, following the event log."""

import threading

import duckdb
import structlog

from projections.projector import Projector
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
        log.info("projector.started", store=projector.store.path if projector.store else None)
        while not stop.is_set():
            try:
                projector.follow()
                if folded := projector.catch_up():
                    log.info("events.folded", events=folded)
            except duckdb.IOException as e:  # a segment merged away while we read it: next round
                log.warning("fold.retry", error=str(e))
            stop.wait(interval_s)
    finally:
        projector.close()
        lock.close()
        log.info("projector.stopped")
