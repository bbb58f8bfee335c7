"""Deterministic extraction throughput: the fixture transcripts replayed N times (each copy its
own sessions and ids), cut into batches as the dispatcher archives them, through what an RQ
extraction job does with a batch (`derive`) and a session-end job with a session (`episodes`,
`derive_session`); not the settling against memory, which reads a snapshot and the model
(benchmarks/extraction_scaleout.py times the real jobs). Reads the events from a real event
log, as the jobs do, and emits nothing (the stream's cost is the dispatcher's benchmark).
Prints one JSON line: events/s, derived events, and the process's peak RSS.

    python benchmarks/extraction_throughput.py [--copies 20] [--batch 5000]
"""

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import msgspec  # noqa: E402

from ingest.transcripts import ImportedEvent, find_transcripts, read_transcript  # noqa: E402
from projections.event_log import EventLog, to_events  # noqa: E402
from reverie.testing import imported_event  # noqa: E402
from schemas.events import Event  # noqa: E402
from schemas.ids import derived_event_id, id_time_ms  # noqa: E402
from workers.extraction.derive import derive, derive_session  # noqa: E402
from workers.extraction.episodes import episodes  # noqa: E402

TRANSCRIPTS = os.path.join(HERE, "..", "..", "shared", "fixtures", "claude-code", "transcripts")


def copies(events: list[Event], n: int) -> list[Event]:
    """`n` copies of `events`, each with its own session ids and event ids."""
    out = []
    for copy in range(n):
        for e in events:
            session = f"{e.session_id}-{copy}" if e.session_id else None
            event_id = derived_event_id(id_time_ms(e.id), e.id, str(copy))
            out.append(msgspec.structs.replace(e, id=event_id, session_id=session))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--batch", type=int, default=5000)
    args = parser.parse_args()
    found = find_transcripts(TRANSCRIPTS)
    original = [imported_event(i) for p in found for i in read_transcript(p) if isinstance(i, ImportedEvent)]
    events = copies(original, args.copies)
    home = tempfile.mkdtemp(prefix="rv-extract-")
    try:
        log = EventLog(home)
        segments = [log.append(events[i : i + args.batch]) for i in range(0, len(events), args.batch)]
        started = time.perf_counter()
        derived = 0
        for segment in segments:  # what the batch jobs do: read the segment, derive
            table = log.read(segment)
            assert table is not None
            derived += sum(1 for _ in derive(to_events(table)))
        batches_s = time.perf_counter() - started
        episode_started = time.perf_counter()
        sessions: dict[str | None, list[Event]] = {}
        for event in events:
            sessions.setdefault(event.session_id, []).append(event)
        for session in sessions.values():  # what the session jobs do: the episode, the commands' lessons
            derived += sum(1 for _ in episodes(session)) + sum(1 for _ in derive_session(session))
        episodes_s = time.perf_counter() - episode_started
    finally:
        shutil.rmtree(home, ignore_errors=True)
    elapsed = batches_s + episodes_s
    print(
        json.dumps(
            {
                "benchmark": "extraction_throughput",
                "events": len(events),
                "copies": args.copies,
                "batches": len(segments),
                "derived_events": derived,
                "events_per_s": round(len(events) / elapsed),
                "batch_jobs_s": round(batches_s, 2),
                "episode_jobs_s": round(episodes_s, 2),
                "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
            }
        )
    )


if __name__ == "__main__":
    main()
