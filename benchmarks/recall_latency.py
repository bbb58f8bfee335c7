"""Recall latency through the warm service, and the whole UserPromptSubmit hook, at N memories.

Starts a stack (`reverie up`) on a scratch data directory and sends N UserPromptSubmit events
through the real ingest path: LoCoMo dialog turns, 20 to a session, each numbered so every
text is distinct. Embedding N texts would take the model N / 150 seconds here, so the
embedding cache is filled first with the real vector of each turn moved by a little Gaussian
noise (as benchmarks/vector_search.py does): the embedder then takes every vector from the
cache, and indexes, folds and publishes as it always does. Once every memory is embedded, it
times LoCoMo questions asked of the service over its socket (`reverie recall`'s request), then
the whole UserPromptSubmit hook as `reverie install claude-code` writes it (`PYTHON -S -I
.../ingest/launcher.py UserPromptSubmit`, through `/bin/sh -c` as Claude Code runs it, from a
small shell that times each), which asks the service and prints the context to inject. The
questions come a pause apart, as from a person: each recall appends a memory.retrieved event,
which the stack folds and embeds meanwhile (`--pause 0` asks back to back, while the stack is
still busy with the answers before). With `--adversarial SHARE`, that share of the questions
(evenly spread) is what pastes bring: a 16,000-character hash, 60,000 CJK characters, a
million characters; p99 and the worst adversarial answer are reported apart.
With `--busy N`, N processes spin on the CPU while the questions are timed (a machine busy with
builds and tests: 2 on 2 cores doubles the load). The hooks that printed memories are counted,
and apart those that ran past their deadline (the service late: the hook gave up on it; one
that printed nothing sooner was answered, with nothing above the floor). Prints one JSON line
per size.

    python benchmarks/recall_latency.py [--memories 10000 100000] [--queries 200] [--pause 1] [--home DIR]
        [--adversarial 0.01] [--busy 2]
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
from datetime import UTC, datetime, timedelta

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from benchmarks.common import locomo_questions, locomo_turns, prompt_event  # noqa: E402
from benchmarks.hook_latency import compile_bytecode, percentile  # noqa: E402
from benchmarks.locomo import embedded_turns, wait_until_embedded  # noqa: E402
from benchmarks.vector_search import NOISE  # noqa: E402
from ingest.emit import append  # noqa: E402
from ingest.envelope import compile_patterns  # noqa: E402
from ingest.injection import DEADLINE_S, ask  # noqa: E402
from ingest.project import project_of  # noqa: E402
from projections.chunking import chunk  # noqa: E402
from projections.embedding_model import EmbeddingCache, content_hash, load_encoder  # noqa: E402
from reverie.installing.entries import launcher_command  # noqa: E402
from schemas.recall import REQUEST_LIMIT  # noqa: E402
from schemas.settings import Settings  # noqa: E402
from schemas.text.gist import gist  # noqa: E402
from workers.embedder import CACHE  # noqa: E402
from workers.redis_client import connect  # noqa: E402
from workers.status import stack_status  # noqa: E402

PROJECT_DIR = "/bench"
PROJECT = project_of({}, {"CLAUDE_PROJECT_DIR": PROJECT_DIR})  # the hook's
TURNS_PER_SESSION = 20
ADVERSARIAL = ["what is " + "deadbeef" * 2_000, "漢字" * 30_000, "é" * 1_000_000]


def memories(n: int) -> list[str]:
    turns = locomo_turns()
    return [f"{turns[i % len(turns)]} ({i // len(turns)})" for i in range(n)]


def fill_cache(settings: Settings, texts: list[str], seed: int = 7) -> None:
    """The embedding cache, holding a vector for every text: its turn's, moved by noise."""
    encoder = load_encoder(settings.embedding_model)
    turns = locomo_turns()
    real = encoder.encode(turns)
    rng = np.random.default_rng(seed)
    vectors = real[np.arange(len(texts)) % len(turns)] + rng.normal(
        scale=NOISE, size=(len(texts), encoder.dim)
    )
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    assert all(chunk(t) == [t] for t in texts), "every memory is one chunk"
    os.makedirs(settings.vectors_root, exist_ok=True)
    cache = EmbeddingCache(os.path.join(settings.vectors_root, CACHE))
    try:
        cache.put(settings.embedding_model, [content_hash(t) for t in texts], vectors)
    finally:
        cache.close()


def events(texts: list[str]) -> tuple[list[bytes], set[str]]:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    made = [
        prompt_event(
            text,
            project=PROJECT,
            session_id=f"s{i // TURNS_PER_SESSION:06d}",
            at=start + timedelta(minutes=i),
            key=str(i),
        )
        for i, text in enumerate(texts)
    ]
    return [event for _, event in made], {event_id for event_id, _ in made}


def wait_for(condition: str, check: Callable[[], object], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(condition)
        time.sleep(0.5)


def interleaved(queries: list[str], share: float) -> tuple[list[str], set[int]]:
    """`queries` with `share` of them, evenly spread, replaced by adversarial prompts."""
    if not share:
        return queries, set()
    every = max(round(1 / share), 1)
    hostile = {i for i in range(len(queries)) if (i + 1) % every == 0}
    return [
        ADVERSARIAL[i // every % len(ADVERSARIAL)] if i in hostile else q for i, q in enumerate(queries)
    ], hostile


def measure(
    n: int,
    queries: list[str],
    reverie: str,
    pause_s: float,
    kept: str | None,
    share: float = 0.0,
    busy: int = 0,
) -> dict[str, object]:
    home = os.path.join(kept, str(n)) if kept else tempfile.mkdtemp(prefix="rv-recall-")
    settings = Settings(home)
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"} | {"REVERIE_HOME": home}
    texts = memories(n)
    encoded, ids = events(texts)
    ingesting = not ids <= embedded_turns(settings)  # a kept --home holds them already
    if ingesting:
        fill_cache(settings, texts)
    stack = subprocess.Popen([reverie, "up"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for("the stack is up", lambda: (s := stack_status(settings)).reachable and s.dispatchers, 60)
        started = time.perf_counter()
        client = connect(settings)
        for start in range(0, len(encoded) if ingesting else 0, 5_000):
            append(client, encoded[start : start + 5_000])
        wait_until_embedded(settings, ids, 3_600)
        ingested_s = time.perf_counter() - started
        wait_for("the recall service listens", lambda: os.path.exists(settings.recall_socket_path), 300)
        spinning = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
        try:
            asked, hostile = interleaved(queries, share)
            service = _service_times(settings, asked, pause_s)
            hooked, hook_hostile = interleaved(queries[: max(len(queries) // 4, 20)], share * 4)
            hook, answered = _hook_times(env, hooked, pause_s)
        finally:
            for spinner in spinning:
                spinner.kill()
                spinner.wait()
    finally:
        stack.terminate()
        stack.wait(120)
        if not kept:
            shutil.rmtree(home, ignore_errors=True)
    return {
        "benchmark": "recall_latency",
        "memories": n,
        "queries": len(queries),
        "pause_s": pause_s,
        "busy_loops": busy,
        "ingested_and_embedded_s": round(ingested_s, 1) if ingesting else None,
        "service_p50_ms": round(statistics.median(service), 1),
        "service_p95_ms": round(percentile(service, 0.95), 1),
        "hook_runs": len(hook),
        "hook_with_memories": answered,
        "hook_p50_ms": round(statistics.median(hook), 1),
        "hook_p95_ms": round(percentile(hook, 0.95), 1),
        "hook_p99_ms": round(percentile(hook, 0.99), 1),
        # past its deadline the hook gives up on the service (the profile, or nothing): a hook
        # that printed no memories in less time was answered, with nothing above the floor
        "hook_late_share": round(sum(t >= DEADLINE_S * 1000 for t in hook) / len(hook), 4),
        **(_adversarial(service, hostile, hook, hook_hostile) if share else {}),
    }


def _adversarial(
    service: list[float], hostile: set[int], hook: list[float], hook_hostile: set[int]
) -> dict[str, object]:
    normal = [t for i, t in enumerate(service) if i not in hostile]
    return {
        "adversarial_share": round(len(hostile) / len(service), 4),
        "service_p99_ms": round(percentile(service, 0.99), 1),
        "service_normal_p50_ms": round(statistics.median(normal), 1),
        "service_normal_p99_ms": round(percentile(normal, 0.99), 1),
        "service_adversarial_max_ms": round(max(service[i] for i in hostile), 1),
        "hook_adversarial_max_ms": round(max((hook[i] for i in hook_hostile), default=0.0), 1),
        "hook_normal_p50_ms": round(
            statistics.median(t for i, t in enumerate(hook) if i not in hook_hostile), 1
        ),
    }


def _service_times(settings: Settings, queries: list[str], pause_s: float) -> list[float]:
    request = {"prompt": queries[0], "project": PROJECT, "limit": 10}
    for _ in range(3):  # the first answers load the baseline and warm the caches
        ask(settings.recall_socket_path, request, 120)
    times = []
    for query in queries:
        time.sleep(pause_s)
        began = time.perf_counter()
        # the whole prompt, unless its request would pass the limit: then its gist, as askers send
        prompt = query if len(json.dumps(query)) < REQUEST_LIMIT - 1_000 else gist(query)
        answer = ask(settings.recall_socket_path, request | {"prompt": prompt}, 30)
        times.append((time.perf_counter() - began) * 1000)
        assert "recall" in answer, answer
    return times


# Runs the hooks from a small shell, as Claude Code's runner spawns them, each timed by bash's
# clock around it: a big Python parent's spawn added 13 ms to every hook (50 against 63 at the
# median, measured side by side), which is no part of what a session waits for.
_HOOK_LOOP = r"""
for payload in "$@"; do
    sleep "$PAUSE"
    began=$EPOCHREALTIME
    /bin/sh -c "$HOOK" < "$payload" > "$payload.out"
    status=$?
    ended=$EPOCHREALTIME
    echo "$began $ended $status"
done
"""


def _hook_times(env: dict[str, str], queries: list[str], pause_s: float) -> tuple[list[float], int]:
    """Wall times of the hook process, and how many printed memories (the others, past the
    deadline, printed the profile or nothing)."""
    with tempfile.TemporaryDirectory(prefix="rv-hooks-") as folder:
        payloads = []
        for n, query in enumerate(queries):
            payloads.append(os.path.join(folder, f"{n:05d}.json"))
            with open(payloads[-1], "w") as f:
                json.dump({"hook_event_name": "UserPromptSubmit", "session_id": "bench", "prompt": query}, f)
        loop_env = env | {
            "CLAUDE_PROJECT_DIR": PROJECT_DIR,
            "HOOK": launcher_command("UserPromptSubmit"),
            "PAUSE": str(pause_s),
        }
        done = subprocess.run(
            ["bash", "-c", _HOOK_LOOP, "hooks", *payloads],
            env=loop_env,
            capture_output=True,
            text=True,
            check=True,
        )
        times = []
        for line in done.stdout.splitlines():
            began, ended, status = line.split()
            assert status == "0", f"a hook exited {status}"
            times.append((float(ended) - float(began)) * 1000)
        answered = 0
        for payload in payloads:
            with open(payload + ".out", "rb") as f:
                answered += b"<reverie-memory>" in f.read()
    return times, answered


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--memories", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--pause", type=float, default=1.0, help="seconds between two questions")
    parser.add_argument("--home", help="keep the data directories here (one per size), and reuse them")
    parser.add_argument("--adversarial", type=float, default=0.0, help="share of adversarial prompts")
    parser.add_argument("--busy", type=int, default=0, help="processes spinning on the CPU while timed")
    args = parser.parse_args()
    reverie = shutil.which("reverie", path=os.path.dirname(sys.executable))
    assert reverie, "reverie is not installed beside this python"
    compile_bytecode()
    compile_patterns()  # as `reverie install claude-code` does
    queries = locomo_questions()[: args.queries]
    for n in args.memories:
        measured = measure(n, queries, reverie, args.pause, args.home, args.adversarial, args.busy)
        print(json.dumps(measured), flush=True)


if __name__ == "__main__":
    main()
