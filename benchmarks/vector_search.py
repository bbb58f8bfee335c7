"""LanceDB search latency at N memories: vector top-10 and hybrid top-10 (vector + full text, RRF).

Recall does not search LanceDB (it reads the table into memory: docs/recall.md); this measures
LanceDB's own searches over the indexes the embedder builds, should recall ever go back to them.
Builds the vectors the way the embedder keeps them (projections/vectors.py: the same table,
the same indexes, made by Vectors.maintain). The rows are LoCoMo dialog turns embedded by the
real model; embedding 100k texts would take the model ten minutes here, so each real row is
repeated until there are N, its vector moved by a little Gaussian noise and normalized again:
the index sees N distinct vectors spread like real ones, full-text search sees real words.
The queries are the LoCoMo questions, embedded. Also reported: flat search (no ANN index) at
N, the time to build the indexes, and the ANN's recall@10 against flat search.
Prints one JSON line.

    python benchmarks/vector_search.py [--memories 100000] [--queries 300]
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pyarrow as pa

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from benchmarks.common import locomo_questions, locomo_turns  # noqa: E402
from projections.embedding_model import content_hash, load_encoder  # noqa: E402
from projections.vectors import Vectors  # noqa: E402

if TYPE_CHECKING:
    from lancedb.query import LanceHybridQueryBuilder, LanceVectorQueryBuilder

NOISE = 0.02
# The ANN index compares quantized vectors; re-ranking 10x the candidates with the full ones
# raises its recall@10 against flat search from 0.76 to 0.97 for 1.5 ms at 100k chunks.
REFINE = 10


def rows(texts: list[str], matrix: np.ndarray[Any, Any], n: int, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    picks = np.arange(n) % len(texts)
    vectors = matrix[picks] + rng.normal(scale=NOISE, size=(n, matrix.shape[1])).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    chosen = [texts[i] for i in picks]
    return pa.table(
        {
            "memory_id": [f"m{i:07d}" for i in range(n)],
            "chunk": pa.array(np.zeros(n, dtype=np.int32)),
            "kind": ["message"] * n,
            "project": ["bench"] * n,
            "session_id": [f"s{i % 50}" for i in range(n)],
            "ts": pa.array(np.full(n, 1_700_000_000_000_000, dtype="datetime64[us]")),
            "text": chosen,
            "search_text": chosen,
            "content_hash": [content_hash(t) for t in chosen],
            "vector": pa.FixedSizeListArray.from_arrays(vectors.ravel(), matrix.shape[1]),
        }
    )


def nearest(store: Vectors, vector: list[float], limit: int) -> pa.Table:
    """The `limit` chunks closest to `vector` (cosine)."""
    query = cast("LanceVectorQueryBuilder", store.table.search(vector))
    return query.distance_type("cosine").refine_factor(REFINE).limit(limit).to_arrow()


def hybrid(store: Vectors, text: str, vector: list[float], limit: int) -> pa.Table:
    """The `limit` chunks that rank best by vector and by full text, fused by reciprocal rank."""
    from lancedb.rerankers import RRFReranker

    query = cast("LanceHybridQueryBuilder", store.table.search(query_type="hybrid"))
    query = query.vector(vector).text(text).distance_type("cosine").refine_factor(REFINE)
    return query.rerank(RRFReranker()).limit(limit).to_arrow()


def latencies(search: Callable[[int], Any], queries: int) -> list[float]:
    for i in range(10):  # warm up: caches, lazily opened index files
        search(i)
    timings = []
    for i in range(queries):
        started = time.perf_counter()
        search(i)
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    encoder = load_encoder()
    texts = locomo_turns()
    matrix = encoder.encode(texts)
    questions = locomo_questions()[: args.queries]
    asked = encoder.encode(questions)
    root = tempfile.mkdtemp(prefix="rv-bench-")
    try:
        store = Vectors(os.path.join(root, "vectors"), encoder.dim)
        table = rows(texts, matrix, args.memories)
        for start in range(0, table.num_rows, 20_000):
            store.add(table.slice(start, 20_000))

        def vector_top10(i: int) -> pa.Table:
            return nearest(store, asked[i].tolist(), 10)

        def hybrid_top10(i: int) -> pa.Table:
            return hybrid(store, questions[i], asked[i].tolist(), 10)

        flat = latencies(vector_top10, args.queries)
        exact = [set(vector_top10(i)["memory_id"].to_pylist()) for i in range(args.queries)]
        started = time.perf_counter()
        store.maintain()
        index_s = time.perf_counter() - started
        indexes = sorted(i.index_type for i in store.table.list_indices())
        vector = latencies(vector_top10, args.queries)
        found = [set(vector_top10(i)["memory_id"].to_pylist()) for i in range(args.queries)]
        both = latencies(hybrid_top10, args.queries)
    finally:
        shutil.rmtree(root, ignore_errors=True)

    def p(timings: list[float], q: int) -> float:
        return round(statistics.quantiles(timings, n=100)[q - 1], 2)

    print(
        json.dumps(
            {
                "benchmark": "vector_search",
                "memories": args.memories,
                "real_texts": len(texts),
                "queries": len(questions),
                "indexes": indexes,
                "index_build_s": round(index_s, 1),
                "flat_vector_top10_p50_ms": p(flat, 50),
                "vector_top10_p50_ms": p(vector, 50),
                "vector_top10_p95_ms": p(vector, 95),
                "hybrid_top10_p50_ms": p(both, 50),
                "hybrid_top10_p95_ms": p(both, 95),
                "ann_recall_at_10": round(
                    statistics.mean(len(a & e) / 10 for a, e in zip(found, exact, strict=True)), 3
                ),
            }
        )
    )


if __name__ == "__main__":
    main()
