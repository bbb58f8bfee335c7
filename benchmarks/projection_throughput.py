"""Projections without embeddings: fold throughput, a replay's wall time and peak memory, and
`reverie sql` point-query latency while the projector writes.

Builds an event log of N events from the real hook payload captures (segments of 5,000, as
the dispatcher writes them), then:
- replays it with `reverie replay` in its own process (wall time, peak RSS of that process);
- folds it again with a live projector in batches as they arrive, timing the folds alone;
- while a projector folds new segments, opens `reverie sql`'s connection and runs a point
  query (one prompt by event id), in this process and as the whole `reverie sql` command.
Prints one JSON line.

    python benchmarks/projection_throughput.py [--events 100000]
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from benchmarks.common import hook_events  # noqa: E402
from projections.event_log import EventLog  # noqa: E402
from projections.projector import Projector  # noqa: E402
from projections.sql import connect  # noqa: E402
from schemas.events import decode_event  # noqa: E402
from schemas.settings import Settings  # noqa: E402

SEGMENT = 5000


def build_log(settings: Settings, n: int) -> list[str]:
    log = EventLog(settings.event_log_dir)
    events = [decode_event(data) for data in hook_events(n)]
    for start in range(0, n, SEGMENT):
        log.append(events[start : start + SEGMENT])
    return [e.id for e in events if e.kind == "prompt.submitted"]


def timed_replay(settings: Settings) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of `reverie replay` as its own process."""
    env = {**os.environ, "REVERIE_HOME": settings.home}
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "reverie", "replay"], env=env, check=True, capture_output=True)
    return time.perf_counter() - started, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss


def timed_live_folds(settings: Settings) -> float:
    """Seconds spent folding, a segment of 5,000 events at a time as the dispatcher hands them."""
    live = Settings(settings.home + "-live")
    later = os.path.join(live.home, "later")
    shutil.copytree(settings.event_log_dir, later)
    os.makedirs(live.event_log_dir)
    projector = Projector(live.event_log_dir, live.projections_dir)
    projector.open()  # an empty log: nothing folded yet
    folding = 0.0
    for name in sorted(os.listdir(later)):
        os.rename(os.path.join(later, name), os.path.join(live.event_log_dir, name))
        started = time.perf_counter()
        projector.catch_up()
        folding += time.perf_counter() - started
    projector.close()
    return folding


def point_queries(
    settings: Settings, prompt_ids: list[str], runs: int = 40
) -> tuple[list[float], list[float]]:
    """Point-query latencies (ms), in process and as the command, while a projector folds."""
    busy = Settings(settings.home + "-busy")
    shutil.copytree(settings.home, busy.home)
    projector = Projector(busy.event_log_dir, busy.projections_dir)
    projector.open()
    stop = threading.Event()

    def keep_writing() -> None:  # new segments all along: every fold is real work
        log = EventLog(busy.event_log_dir)
        while not stop.is_set():
            log.append([decode_event(d) for d in hook_events(SEGMENT)])
            projector.catch_up()

    writer = threading.Thread(target=keep_writing)
    writer.start()
    sql = f"SELECT prompt FROM prompts WHERE event_id = '{prompt_ids[len(prompt_ids) // 2]}'"
    in_process, command = [], []
    env = {**os.environ, "REVERIE_HOME": busy.home}
    try:
        for _ in range(runs):
            started = time.perf_counter()
            connect(busy).execute(sql).fetchall()
            in_process.append((time.perf_counter() - started) * 1000)
        for _ in range(runs // 4):
            started = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "reverie", "sql", sql, "--json"],
                env=env,
                check=True,
                capture_output=True,
            )
            command.append((time.perf_counter() - started) * 1000)
    finally:
        stop.set()
        writer.join()
        projector.close()
    return in_process, command


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=100_000)
    args = parser.parse_args()
    root = tempfile.mkdtemp(prefix="rv-bench-")
    settings = Settings(os.path.join(root, "home"))
    try:
        prompt_ids = build_log(settings, args.events)
        replay_s, replay_rss_kib = timed_replay(settings)
        folding_s = timed_live_folds(settings)
        in_process, command = point_queries(settings, prompt_ids)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(
        json.dumps(
            {
                "benchmark": "projection_throughput",
                "events": args.events,
                "live_fold_events_per_s": round(args.events / folding_s),
                "replay_seconds": round(replay_s, 2),
                "replay_events_per_s": round(args.events / replay_s),
                "replay_peak_rss_mib": round(replay_rss_kib / 1024),
                "sql_point_query_in_process_p50_ms": round(statistics.median(in_process), 1),
                "sql_point_query_command_p50_ms": round(statistics.median(command), 1),
            }
        )
    )


if __name__ == "__main__":
    main()
