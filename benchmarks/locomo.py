"""LoCoMo retrieval: Recall@1/5/10/25 at dialog-turn level, through the real ingest path.

Starts a stack (`reverie up`: embedded server, dispatcher, projector, embedder) on a scratch
data directory, sends every dialog turn as the UserPromptSubmit event its speaker would make
(one project per conversation, one session per LoCoMo session, at its date), waits until the
projector and the embedder have taken them all, then runs recall for every question, within
its conversation, as asked at the end of it. recall@k = |evidence ∩ top k| / |evidence|,
questions without evidence skipped. Prints a table per category, then one JSON line.

    python benchmarks/locomo.py [PATH]   (default ../shared/bench/locomo/locomo10_dev.json)
"""

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from benchmarks.common import LOCOMO, prompt_event  # noqa: E402
from ingest.emit import append  # noqa: E402
from projections import sql  # noqa: E402
from projections.embedding_model import load_encoder  # noqa: E402
from projections.recall.memories import Memories  # noqa: E402
from projections.recall.pipeline import Recaller  # noqa: E402
from projections.vectors import Vectors  # noqa: E402
from schemas.settings import Settings  # noqa: E402
from workers.redis_client import connect  # noqa: E402
from workers.status import stack_status  # noqa: E402

KS = (1, 5, 10, 25)


def session_dates(conversation: dict[str, Any]) -> dict[str, datetime]:
    """session_N -> when it took place ("1:56 pm on 8 May, 2023")."""
    return {
        key.removesuffix("_date_time"): datetime.strptime(value, "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
        for key, value in conversation.items()
        if key.endswith("_date_time")
    }


def turn_text(turn: dict[str, Any]) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    if caption := turn.get("blip_caption"):
        text += f" [shares a picture: {caption}]"
    return text


def turn_events(sample: dict[str, Any]) -> tuple[list[bytes], dict[str, str], datetime]:
    """The events of one conversation, memory id -> dia_id, and when the conversation ended."""
    conversation = sample["conversation"]
    dates = session_dates(conversation)
    events, dia_of = [], {}
    for session, started in dates.items():
        for i, turn in enumerate(conversation.get(session) or []):
            event_id, event = prompt_event(
                turn_text(turn),
                project=sample["sample_id"],
                session_id=f"{sample['sample_id']}-{session}",
                at=started + timedelta(seconds=30 * i),
                key=turn["dia_id"],
                speaker=turn["speaker"],
            )
            dia_of[event_id] = turn["dia_id"]
            events.append(event)
    return events, dia_of, max(dates.values()) + timedelta(days=1)


def evidence_of(qa: dict[str, Any]) -> set[str]:
    return {e for item in qa.get("evidence") or [] for e in re.split(r"[\s;,]+", item) if e.startswith("D")}


def embedded_turns(settings: Settings) -> set[str]:
    if not os.path.isdir(settings.projections_dir):
        return set()
    with sql.connect(settings) as db:
        query = "SELECT memory_id FROM memory_documents JOIN embedded USING (memory_id, content_hash)"
        return {m for (m,) in db.execute(query).fetchall()}


def wait_until_embedded(settings: Settings, turns: set[str], timeout_s: float = 1800) -> None:
    deadline = time.monotonic() + timeout_s
    while not turns <= embedded_turns(settings):
        if time.monotonic() > deadline:
            raise TimeoutError(f"the stack did not embed {len(turns)} turns within {timeout_s} s")
        time.sleep(1.0)


def ingest(settings: Settings, events: list[list[bytes]], turns: set[str]) -> None:
    """Run a stack, send the events, wait until they are projected and embedded."""
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"} | {"REVERIE_HOME": settings.home}
    stack = subprocess.Popen(
        [sys.executable, "-m", "reverie", "up"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        while not (state := stack_status(settings)).reachable or not state.dispatchers:
            time.sleep(0.2)
        client = connect(settings)
        started = time.perf_counter()
        for conversation in events:
            append(client, conversation)
        wait_until_embedded(settings, turns)
        print(
            f"ingested and embedded {len(turns)} turns in {time.perf_counter() - started:.1f} s",
            file=sys.stderr,
        )
    finally:
        stack.terminate()
        stack.wait(60)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("path", nargs="?", default=LOCOMO, help="a LoCoMo-format JSON file")
    parser.add_argument(
        "--home",
        help="keep the ingested data here; a second run on the same file reuses it (default: scratch)",
    )
    args = parser.parse_args()
    with open(args.path) as f:
        samples = json.load(f)
    home = args.home or tempfile.mkdtemp(prefix="rv-locomo-")
    settings = Settings(home)
    dia_of: dict[str, str] = {}
    ends: dict[str, datetime] = {}
    events = []
    for sample in samples:
        conversation, dias, ends[sample["sample_id"]] = turn_events(sample)
        events.append(conversation)
        dia_of |= dias
    try:
        if not set(dia_of) <= embedded_turns(settings):  # a kept --home holds them already
            ingest(settings, events, set(dia_of))
        encoder = load_encoder(settings.embedding_model)
        vectors = Vectors(settings.vectors_dir, encoder.dim)
        recaller = Recaller(encoder, vectors, Memories(settings))
        scores, latencies = evaluate(recaller, samples, dia_of, ends)
    finally:
        if not args.home:
            shutil.rmtree(home, ignore_errors=True)
    report(scores, latencies)


def evaluate(
    recaller: Recaller, samples: list[dict[str, Any]], dia_of: dict[str, str], ends: dict[str, datetime]
) -> tuple[list[tuple[int, dict[int, float]]], list[float]]:
    scores, latencies = [], []
    for sample in samples:
        for qa in sample["qa"]:
            evidence = evidence_of(qa)
            if not evidence:
                continue
            began = time.perf_counter()
            found = recaller.recall(
                qa["question"], limit=max(KS), project=sample["sample_id"], now=ends[sample["sample_id"]]
            )
            latencies.append((time.perf_counter() - began) * 1000)
            ranked = [dia_of.get(r.memory_id) for r in found.results]
            scores.append(
                (qa.get("category", 0), {k: len(evidence & set(ranked[:k])) / len(evidence) for k in KS})
            )
    return scores, latencies


def report(scores: list[tuple[int, dict[int, float]]], latencies: list[float]) -> None:
    def mean(rows: list[dict[int, float]], k: int) -> float:
        return round(100 * statistics.mean(r[k] for r in rows), 1)

    for category in sorted({c for c, _ in scores}):
        rows = [r for c, r in scores if c == category]
        cells = "  ".join(f"R@{k} {mean(rows, k):5.1f}" for k in KS)
        print(f"category {category}: {len(rows):4d} questions  {cells}", file=sys.stderr)
    rows = [r for _, r in scores]
    result: dict[str, Any] = {f"recall@{k}": mean(rows, k) for k in KS}
    result |= {"questions": len(rows), "p50_ms": round(statistics.median(latencies), 1)}
    print(json.dumps({"benchmark": "locomo", **result}))


if __name__ == "__main__":
    main()
