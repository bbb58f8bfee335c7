"""Extraction by real RQ workers: throughput with 1 and 2 workers, and a session's end-to-end
latency to recall.

Each round starts `reverie up --workers N` on a scratch data directory and waits until its
workers are idle (registered, their model loaded). It appends the fixture transcripts' events,
`--copies` times over (each copy its own sessions and ids, as `reverie import` emits them),
enqueues each session's episode as the import does once they are archived, and times until
every extraction job has finished: events/s from the first append to the last job. Then one
live session through the real hook: a prompt that asks to remember something, and SessionEnd;
the time from the prompt's hook to its fact being among what the warm recall service returns,
and from SessionEnd to the session's episode being among them. Worker counts alternate round
by round; prints one JSON line with the medians.

    python benchmarks/extraction_scaleout.py [--copies 10] [--rounds 2] [--workers 1 2]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import msgspec  # noqa: E402
from rq import Queue, Worker  # noqa: E402
from rq.registry import StartedJobRegistry  # noqa: E402

from benchmarks.extraction_throughput import TRANSCRIPTS, copies  # noqa: E402
from ingest.emit import append  # noqa: E402
from ingest.injection import ask  # noqa: E402
from ingest.transcripts import ImportedEvent, find_transcripts, read_transcript  # noqa: E402
from reverie.testing import imported_event  # noqa: E402
from schemas.settings import QUEUE, Settings  # noqa: E402
from workers.redis_client import connect  # noqa: E402
from workers.status import stack_status  # noqa: E402
from workers.thinking import runner  # noqa: E402
from workers.thinking.registry import named  # noqa: E402

REVERIE = os.path.join(os.path.dirname(sys.executable), "reverie")
PROJECT_DIR = "/bench/e2e"
FACT = "Remember that the staging database is called db-staging-7 and runs in eu-west-3."


def wait_for(what: str, condition: Callable[[], Any], timeout_s: float, every_s: float = 0.1) -> Any:
    ends = time.monotonic() + timeout_s
    while time.monotonic() < ends:
        if value := condition():
            return value
        time.sleep(every_s)
    raise TimeoutError(f"timed out after {timeout_s} s waiting for {what}")


def round_of(workers: int, events: list[Any], settings: Settings, env: dict[str, str]) -> dict[str, float]:
    stack = subprocess.Popen(
        [REVERIE, "up", "--workers", str(workers)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        client = wait_for("the server", lambda: stack_status(settings).reachable and connect(settings), 120)

        def idle() -> int:
            return sum(1 for w in Worker.all(connection=client) if w.get_state() == "idle")

        wait_for(f"{workers} idle workers", lambda: idle() >= workers, 300)
        queue = Queue(QUEUE, connection=client)
        started = time.perf_counter()
        encoded = [msgspec.json.encode(e) for e in events]
        for at in range(0, len(encoded), 2_000):
            append(client, encoded[at : at + 2_000])
        wait_for("the events archived", lambda: stack_status(settings).archived >= len(events), 600, 0.2)
        for session in sorted({e.session_id for e in events if e.session_id}):
            runner.enqueue(queue, named("episodes"), runner.Session(session))
        running = StartedJobRegistry(queue=queue)
        wait_for("every job done", lambda: queue.count == 0 and running.count == 0, 1_800, 0.2)
        extracted_s = time.perf_counter() - started
        failed = queue.failed_job_registry.count
        fact_s, episode_s = _end_to_end(settings, env)
    finally:
        stack.terminate()
        stack.wait(120)
    return {"extract_s": extracted_s, "failed_jobs": failed, "fact_s": fact_s, "episode_s": episode_s}


def _end_to_end(settings: Settings, env: dict[str, str]) -> tuple[float, float]:
    hook_env = env | {"CLAUDE_PROJECT_DIR": PROJECT_DIR}
    common = {"session_id": "e2e", "cwd": PROJECT_DIR, "transcript_path": "/nonexistent.jsonl"}

    def hook(event: str, **payload: Any) -> None:
        data = json.dumps({**common, "hook_event_name": event, **payload}).encode()
        subprocess.run([REVERIE, "hook", event], input=data, env=hook_env, capture_output=True, check=True)

    def recalled(prefix: str) -> bool:
        request = {"prompt": "what is the staging database called", "project": PROJECT_DIR, "limit": 10}
        try:
            results = ask(settings.recall_socket_path, request, 10)["recall"]["results"]
        except (OSError, TimeoutError, KeyError, ValueError):
            return False
        return any(r["memory_id"].startswith(prefix) and "db-staging-7" in r["text"] for r in results)

    hook("SessionStart", source="startup")
    said = time.perf_counter()
    hook("UserPromptSubmit", prompt=FACT)
    hook("Stop", last_assistant_message="Noted: db-staging-7, in eu-west-3.")
    wait_for("the fact recallable", lambda: recalled("fact:"), 600, 0.2)
    fact_s = time.perf_counter() - said
    ended = time.perf_counter()
    hook("SessionEnd", reason="exit")
    wait_for("the episode recallable", lambda: recalled("episode:"), 600, 0.2)
    return fact_s, time.perf_counter() - ended


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    found = find_transcripts(TRANSCRIPTS)
    original = [imported_event(i) for p in found for i in read_transcript(p) if isinstance(i, ImportedEvent)]
    events = copies(original, args.copies)
    results: dict[int, list[dict[str, float]]] = {n: [] for n in args.workers}
    for _ in range(args.rounds):
        for n in args.workers:  # interleaved: 1, 2, 1, 2...
            home = tempfile.mkdtemp(prefix="rv-scale-")
            env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"} | {"REVERIE_HOME": home}
            try:
                results[n].append(round_of(n, events, Settings(home), env))
            finally:
                shutil.rmtree(home, ignore_errors=True)
    summary: dict[str, Any] = {
        "benchmark": "extraction_scaleout",
        "events": len(events),
        "rounds": args.rounds,
    }
    for n, rounds in results.items():
        extract_s = statistics.median(r["extract_s"] for r in rounds)
        summary[f"workers_{n}"] = {
            "events_per_s": round(len(events) / extract_s),
            "extract_s": round(extract_s, 1),
            "failed_jobs": max(int(r["failed_jobs"]) for r in rounds),
            "fact_recallable_s": round(statistics.median(r["fact_s"] for r in rounds), 1),
            "episode_recallable_s": round(statistics.median(r["episode_s"] for r in rounds), 1),
        }
    if len(args.workers) == 2:
        one, two = (summary[f"workers_{n}"]["events_per_s"] for n in args.workers)
        summary["speedup"] = round(two / one, 2)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
