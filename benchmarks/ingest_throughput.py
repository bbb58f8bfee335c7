"""Ingest throughput: events per second from the stream into the durable event log.

Starts an embedded server in a scratch REVERIE_HOME, fills the stream with N events built
from the real hook payload captures (cycled, each with its own id), then runs the dispatcher
(the same code `reverie dispatch` runs: validate, dedup, Parquet segment, fsync, ack, trim,
one RQ job per batch) until the stream is empty. Prints one JSON line.

    python benchmarks/ingest_throughput.py [--events 100000] [--batch 5000]
"""

import argparse
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time

import redis

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from benchmarks.common import hook_events  # noqa: E402
from ingest.emit import append  # noqa: E402
from schemas.settings import STREAM, Settings  # noqa: E402
from workers.dispatcher import Dispatcher  # noqa: E402
from workers.logs import configure_logging  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=5000)
    args = parser.parse_args()
    configure_logging(json=True, level=logging.WARNING)  # one JSON line out, nothing else
    home = tempfile.mkdtemp(prefix="rv-bench-")
    settings = Settings(home)
    env = {**os.environ, "REVERIE_HOME": home}
    env.pop("REDIS_URL", None)
    server = subprocess.Popen([sys.executable, "-m", "reverie", "server"], env=env, stdout=subprocess.DEVNULL)
    try:
        client = redis.Redis.from_url(settings.redis_url)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                client.ping()
                break
            except (redis.ConnectionError, FileNotFoundError):
                time.sleep(0.05)
        events = hook_events(args.events)
        for start in range(0, len(events), 2000):
            append(client, events[start : start + 2000])
        dispatcher = Dispatcher(settings, client, consumer="bench", batch_size=args.batch, block_ms=10)
        dispatcher.start()
        started = time.perf_counter()
        archived = 0
        while client.xlen(STREAM):
            archived += dispatcher.archive(dispatcher.read(">", 10))
        elapsed = time.perf_counter() - started
        segments = len(dispatcher.event_log.segments())
        log_bytes = sum(os.path.getsize(p) for p in dispatcher.event_log.segments())
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(home, ignore_errors=True)
    print(
        json.dumps(
            {
                "benchmark": "ingest_throughput",
                "events": archived,
                "batch": args.batch,
                "seconds": round(elapsed, 2),
                "events_per_s": round(archived / elapsed),
                "mean_event_bytes": round(sum(map(len, events)) / len(events)),
                "segments": segments,
                "log_mib": round(log_bytes / 2**20, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
