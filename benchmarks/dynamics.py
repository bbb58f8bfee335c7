"""The lifecycle and the dream cycle on 50k facts and 5k episodes, run by 1 and by 2 RQ workers.

Builds a store once (an event log and its projections, folded here): 5,000 sessions over 90
days, each with a prompt and an episode about 3 of 300 entities, and 10 facts each (50,000,
a tenth of them worded twice); every episode's vector in LanceDB (synthetic: 12 themes plus
noise, so that HDBSCAN has clusters to find). Then, for each worker count, an embedded server
and that many `reverie worker` processes; both jobs are enqueued at once and timed from the
enqueue to the last result. Each job reports its own peak RSS (getrusage in its work horse,
which RQ forks from a worker that already holds the embedding model) and CPU seconds. The
worker counts take turns for `--rounds` rounds (1, 2, 1, 2...), and the medians are reported:
on two cores the server and the workers compete, so one run of each is noisy.

    python benchmarks/dynamics.py [--sessions 5000] [--facts-per-session 10] [--rounds 3]

Prints one JSON line.
"""

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pyarrow as pa
from rq import Queue, Worker

from projections.vectors import Vectors
from reverie.testing import Folding, event_at
from schemas import kinds, memory
from schemas.events import Event
from schemas.settings import QUEUE, Settings
from workers.redis_client import connect, is_up
from workers.thinking import runner

PROJECT = "/bench/app"
DIM = 384


def measured(job: str) -> dict[str, Any]:
    """Run one job in this work horse; what it emitted, its wall and CPU time, its peak RSS."""
    started, cpu = time.perf_counter(), time.process_time()
    emitted = runner.run(job)
    return {
        "job": job,
        "emitted": emitted,
        "seconds": round(time.perf_counter() - started, 2),
        "cpu_seconds": round(time.process_time() - cpu, 2),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def _event(kind: str, payload: Any, when: datetime, session: str, causes: tuple[str, ...] = ()) -> Event:
    return event_at(kind, payload, when, project=PROJECT, session_id=session, caused_by=causes)


def build(settings: Settings, sessions: int, facts_per_session: int) -> dict[str, int]:
    rng = random.Random(7)
    now = datetime.now(UTC)
    entities = [f"concept:c{i}" for i in range(300)]
    folding = Folding(settings)
    vectors: list[tuple[str, np.ndarray]] = []
    themes = np.random.default_rng(7).normal(size=(12, DIM))
    batch: list[Event] = []
    facts = 0
    for n in range(sessions):
        when = now - timedelta(days=90 * rng.random())
        session = f"s{n}"
        prompt = _event(kinds.PROMPT_SUBMITTED, {"prompt": f"work on part {n}"}, when, session)
        about = rng.sample(entities, 3)
        episode = memory.EpisodeRecorded(
            episode_id=f"ep{n}", session_id=session, title=f"part {n}", summary=f"worked on part {n}",
            started_at=when, ended_at=when, entities=about,
        )  # fmt: skip
        batch += [prompt, _event(kinds.EPISODE_RECORDED, episode, when, session, (prompt.id,))]
        theme = n % 12
        v = themes[theme] + np.random.default_rng(n).normal(scale=0.3, size=DIM)
        vectors.append((f"ep{n}", v / np.linalg.norm(v)))
        for k in range(facts_per_session):
            a, b = rng.sample(about, 2)
            said = f"part {n} step {k // 2 if k % 10 == 9 else k}: {a} uses {b}"  # a tenth worded twice
            fact = memory.FactAsserted(
                fact_id=f"f{n}-{k}", source=a, relation="uses", target=b, description=said
            )
            batch.append(_event(kinds.FACT_ASSERTED, fact, when, session, (prompt.id,)))
            facts += 1
        if len(batch) >= 20_000:
            folding.fold(batch)
            batch = []
    folding.fold(batch)
    folding.close()
    rows = pa.table(
        {
            "memory_id": [m for m, _ in vectors],
            "chunk": pa.array([0] * len(vectors), pa.int32()),
            "kind": ["episode"] * len(vectors),
            "project": [PROJECT] * len(vectors),
            "session_id": [m.replace("ep", "s") for m, _ in vectors],
            "ts": pa.array([now] * len(vectors), pa.timestamp("us", tz="UTC")),
            "text": [m for m, _ in vectors],
            "content_hash": [m for m, _ in vectors],
            "vector": pa.FixedSizeListArray.from_arrays(
                pa.array(np.concatenate([v for _, v in vectors]).astype(np.float32)), DIM
            ),
        }
    )
    Vectors(settings.vectors_dir, DIM).add(rows)
    return {"sessions": sessions, "episodes": sessions, "facts": facts}


def run(settings: Settings, env: dict[str, str], workers: int) -> dict[str, Any]:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**env, "PYTHONPATH": root}  # the workers import this module for `measured`
    reverie = [sys.executable, "-m", "reverie"]
    server = subprocess.Popen(
        [*reverie, "server"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    pool: list[subprocess.Popen[bytes]] = []
    try:
        while not is_up(settings):
            time.sleep(0.1)
        client = connect(settings, timeout=None)
        client.flushall()
        pool = [
            subprocess.Popen(
                [*reverie, "worker"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            for _ in range(workers)
        ]
        # idle: registered, and past bootstrap, where each loads the embedding model
        while sum(w.get_state() == "idle" for w in Worker.all(connection=client)) < workers:
            time.sleep(0.2)
        queue = Queue(QUEUE, connection=client)
        started = time.perf_counter()
        jobs = [
            queue.enqueue("benchmarks.dynamics.measured", name, job_timeout=3600)
            for name in ("lifecycle", "dream")
        ]
        results = []
        for job in jobs:
            result = job.latest_result(timeout=3600)
            if result is None or result.type != result.Type.SUCCESSFUL:
                raise RuntimeError(f"{job.func_name} failed: {result and result.exc_string}")
            results.append(result.return_value)
        return {"workers": workers, "wall_seconds": round(time.perf_counter() - started, 2), "jobs": results}
    finally:
        for p in [*pool, server]:
            p.terminate()
        for p in [*pool, server]:
            p.wait(60)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=5000)
    parser.add_argument("--facts-per-session", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3, help="runs of each worker count, interleaved")
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="rv-bench-")
    env = {**os.environ, "REVERIE_HOME": home}
    env.pop("REDIS_URL", None)
    settings = Settings.from_env(env)
    started = time.perf_counter()
    size = build(settings, args.sessions, args.facts_per_session)
    built = round(time.perf_counter() - started, 1)
    runs = [run(settings, env, workers) for _ in range(args.rounds) for workers in (1, 2)]
    medians = {workers: summary([r for r in runs if r["workers"] == workers]) for workers in (1, 2)}
    speedup = round(medians[1]["wall_seconds"] / medians[2]["wall_seconds"], 2)
    print(
        json.dumps(
            {
                "benchmark": "dynamics",
                **size,
                "build_seconds": built,
                "rounds": args.rounds,
                "median": list(medians.values()),
                "speedup_2_workers": speedup,
                "runs": runs,
            }
        )
    )


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The median wall time of `runs` (one worker count), and each job's median seconds and
    largest peak RSS."""
    jobs = {}
    for name in ("lifecycle", "dream"):
        mine = [j for r in runs for j in r["jobs"] if j["job"] == name]
        jobs[name] = {
            "seconds": statistics.median(j["seconds"] for j in mine),
            "peak_rss_mb": max(j["peak_rss_mb"] for j in mine),
        }
    wall = statistics.median(r["wall_seconds"] for r in runs)
    return {"workers": runs[0]["workers"], "wall_seconds": wall, "jobs": jobs}


if __name__ == "__main__":
    main()
