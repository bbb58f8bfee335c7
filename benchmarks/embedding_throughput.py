"""Projection throughput with embeddings, beside the model's own ceiling, in one process.

Builds an event log of N UserPromptSubmit events (a real captured payload, its prompt replaced
by LoCoMo dialog turns: real, short, distinct texts), then, each round, on a fresh data
directory and an empty embedding cache:
- ceiling: model.encode on the texts the embedder will embed, with the embedder's batch size;
- pipeline: the projector folds the log and publishes its snapshot, then the embedder syncs
  the vectors (diff, chunking, cache lookups, encoding, LanceDB writes, indexes, manifest).
Prints one JSON line: medians over the rounds and their ratio (target: at least 0.85).

    python benchmarks/embedding_throughput.py [--texts 2000] [--rounds 3]
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from benchmarks.common import fixture_payloads, locomo_turns  # noqa: E402
from ingest.envelope import encode_event  # noqa: E402
from projections.chunking import chunk  # noqa: E402
from projections.embedding_model import Encoder, load_encoder  # noqa: E402
from projections.event_log import EventLog  # noqa: E402
from projections.projector import Projector  # noqa: E402
from schemas.events import decode_event  # noqa: E402
from schemas.ids import new_event_id, utc_now_iso  # noqa: E402
from schemas.kinds import HOOK_KINDS, SOURCE_CLAUDE_CODE  # noqa: E402
from schemas.settings import Settings  # noqa: E402
from workers.embedder import open_embedder, sync_once  # noqa: E402


def build_log(settings: Settings, texts: list[str]) -> None:
    template = next(p for p in fixture_payloads() if p["hook_event_name"] == "UserPromptSubmit")
    now = utc_now_iso()
    events = [
        decode_event(
            encode_event(
                HOOK_KINDS["UserPromptSubmit"],
                {**template, "prompt": text},
                event_id=new_event_id(),
                ts=now,
                recorded_at=now,
                project="bench",
                source=SOURCE_CLAUDE_CODE,
            )
        )
        for text in texts
    ]
    EventLog(settings.event_log_dir).append(events)


def ceiling(encoder: Encoder, texts: list[str]) -> float:
    """Chunks per second of the model alone."""
    pieces = [piece for text in texts for piece in chunk(text)]
    started = time.perf_counter()
    encoder.encode(pieces)
    return len(pieces) / (time.perf_counter() - started)


def pipeline(encoder: Encoder, texts: list[str], root: str) -> tuple[float, int]:
    """Chunks per second from the event log to indexed vectors, and how many chunks."""
    settings = Settings(tempfile.mkdtemp(dir=root))
    build_log(settings, texts)
    embedder = open_embedder(settings, encoder)
    started = time.perf_counter()
    projector = Projector(settings.event_log_dir, settings.projections_dir)
    projector.open()  # folds the whole log, publishes the snapshot
    projector.close()
    report = sync_once(settings, embedder)
    elapsed = time.perf_counter() - started
    embedder.close()
    assert report.chunks_encoded == report.chunks_added, "the cache was not empty"
    return report.chunks_added / elapsed, report.chunks_added


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    texts = locomo_turns()[: args.texts]
    encoder = load_encoder()
    encoder.encode(texts[:64])  # warm up: first calls allocate
    root = tempfile.mkdtemp(prefix="rv-bench-")
    ceilings, pipelines = [], []
    try:
        for _ in range(args.rounds):
            ceilings.append(ceiling(encoder, texts))
            rate, chunks = pipeline(encoder, texts, root)
            pipelines.append(rate)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    model_rate, pipeline_rate = statistics.median(ceilings), statistics.median(pipelines)
    print(
        json.dumps(
            {
                "benchmark": "embedding_throughput",
                "texts": len(texts),
                "chunks": chunks,
                "rounds": args.rounds,
                "model_encode_chunks_per_s": round(model_rate, 1),
                "pipeline_chunks_per_s": round(pipeline_rate, 1),
                "pipeline_over_ceiling": round(pipeline_rate / model_rate, 3),
                "ratios_per_round": [round(p / c, 3) for p, c in zip(pipelines, ceilings, strict=True)],
            }
        )
    )


if __name__ == "__main__":
    main()
