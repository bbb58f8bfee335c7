"""The projector process: the one writer of the projections, following the event log."""

import threading
import time

import duckdb
import structlog

from projections.projector import Projector, prune_stores
from projections.store import lock_projections
from schemas.settings import Settings
from workers.identify import forget_old_sessions, say, unidentified
from workers.logs import quarantine_logger

log = structlog.get_logger("reverie.projector")


_PRUNE_EVERY_S = 5.0  # how often it removes the stores a killed replay left


def run_projector(settings: Settings, stop: threading.Event, interval_s: float = 0.5) -> None:
    """Fold new segments as they appear, until `stop` is set."""
    lock = lock_projections(settings.projections_dir)
    projector = Projector(
        settings.event_log_dir, settings.projections_dir, on_quarantine=quarantine_logger(log)
    )
    try:
        if why := projector.open():
            log.warning("projections.rebuilt", reason=why)
        prune_stores(settings.projections_dir)
        log.info("projector.started", store=projector.store.path if projector.store else None)
        _identify(projector, settings)
        pruned_at = time.monotonic()
        while not stop.is_set():
            try:
                if projector.follow():
                    log.info("projections.swapped", store=projector.store.path if projector.store else None)
                    prune_stores(settings.projections_dir)
                if time.monotonic() - pruned_at >= _PRUNE_EVERY_S:
                    prune_stores(settings.projections_dir)
                    pruned_at = time.monotonic()
                if folded := projector.catch_up():
                    log.info("events.folded", events=folded)
                if projector.rebuilt_for is not None:
                    log.warning(
                        "projections.rebuilt", reason=f"identified projects moved: {projector.rebuilt_for}"
                    )
                    projector.rebuilt_for = None
                    prune_stores(settings.projections_dir)
                if projector.mend_snapshot():
                    log.warning("snapshot.republished", reason="not the file the projector published last")
            except (duckdb.Error, OSError) as e:
                _recover(projector, settings, e)
            stop.wait(interval_s)
    finally:
        projector.close()
        lock.close()
        log.info("projector.stopped")


def _identify(projector: Projector, settings: Settings) -> None:
    """Say which project each path recorded in the store belongs to, where this disk knows
    better (workers/identify.py): once folded, what was recorded there moves to its project."""
    assert projector.db is not None
    try:
        forget_old_sessions(settings)
        found = unidentified(projector.db)
        if went := say(settings, found):
            log.info("projects.identified", roots=[f.root for f in found], to=went)
    except (duckdb.Error, OSError) as e:  # the next start tries again
        log.warning("projects.identify_failed", error=str(e))


def _recover(projector: Projector, settings: Settings, error: Exception) -> None:
    """After a failed round: rebuild the store if it cannot be read, else try again next round
    (a replay swapping stores, a full disk), from the store that is current then."""
    if why := projector.damage():
        log.warning("projections.rebuilt", reason=why, after=str(error))
        projector.rebuild()
        prune_stores(settings.projections_dir)
    else:
        log.warning("fold.retry", error=str(error))
