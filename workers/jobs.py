"""RQ jobs, one per archived batch (RQ costs ~20 round trips a job: never one per event)."""

import pyarrow.compute as pc
import pyarrow.parquet as pq
import structlog

log = structlog.get_logger("reverie.jobs")


def segment_archived(path: str, expected: int) -> dict[str, int]:
    """Check a freshly archived segment and report what it holds, by kind.

    The hand-off point for the projections that later fold each segment.
    """
    try:
        table = pq.read_table(path, columns=["kind"])
    except FileNotFoundError:  # merged into a larger segment already: its events are there
        log.info("segment.compacted_before_check", path=path)
        return {}
    if table.num_rows != expected:
        raise RuntimeError(f"{path} holds {table.num_rows} events, the dispatcher wrote {expected}")
    counts = pc.value_counts(table.column("kind")).to_pylist()
    by_kind = {c["values"]: c["counts"] for c in counts}
    log.info("segment.checked", path=path, events=table.num_rows, kinds=by_kind)
    return by_kind
