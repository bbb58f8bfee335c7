"""The embedder's fold: the memory texts of a snapshot -> their vectors, through the cache.

Each round compares the snapshot's `memory_documents` with what the vectors hold, by memory id
and content hash: memories gone or changed lose their chunks, new or changed ones are
chunked, looked up in the cache, embedded when missing there, and written. So the vectors
always follow some published snapshot, whatever happened to the store (a replay, a schema
rebuild), and only text never seen by this model costs model time.
"""

from collections.abc import Callable, Iterator

import duckdb
import msgspec
import numpy as np
import pyarrow as pa

from projections.chunking import chunk
from projections.embedding_model import EmbeddingCache, Encoder, Matrix, content_hash
from projections.vectors import Vectors

# Chunks embedded and written at once: large enough that the model sorts a whole slice by
# length (padding costs less) and LanceDB gets few, large fragments.
# Stopping waits for the slice at hand: about 10 s of model time at most on two cores.
SLICE_CHUNKS = 1_024
SyncProgress = Callable[[int, int], None]  # (memories done, memories to do)

_CURRENT = "SELECT * FROM memory_documents"


class SyncReport(msgspec.Struct, frozen=True):
    memories_added: int = 0
    memories_removed: int = 0
    chunks_added: int = 0
    chunks_encoded: int = 0  # the rest came from the cache
    finished: bool = True  # False: stopped before the end, the next round goes on


class Embedder:
    def __init__(self, encoder: Encoder, cache: EmbeddingCache, vectors: Vectors) -> None:
        self.encoder = encoder
        self.cache = cache
        self.vectors = vectors
        self.synced_as: str | None = None  # the snapshot's MEMORIES_CHANGED_BY when last in step

    def sync(
        self,
        db: duckdb.DuckDBPyConnection,
        progress: SyncProgress | None = None,
        stop: Callable[[], bool] = lambda: False,
        changed_by: str | None = None,
    ) -> SyncReport:
        """Bring the vectors in step with the memory texts `db` shows (see projections/sql.py).
        `changed_by`: the event that last changed what the memories say, as the snapshot has it
        (projections/store.py); the same as when they were last in step (a snapshot of recalls
        alone), nothing is read. None: not known, so the memory texts are read."""
        published = self.vectors.published_version() is not None  # else damaged, missing or older
        if changed_by is not None and changed_by == self.synced_as and published:
            return SyncReport()
        stale, fresh = _changes(db, self.vectors.held())
        if not stale and not fresh.num_rows:
            if not published:
                self.vectors.publish_manifest()
            self.synced_as = changed_by
            return SyncReport()
        added = chunks = encoded = 0
        finished = True
        for rows, memories in _slices(fresh):
            if stop():
                finished = False
                break
            encoded += self._write(rows)
            chunks += rows.num_rows
            added += memories
            if progress:
                progress(added, fresh.num_rows)
        if finished:  # after the adds: a reworded memory keeps its old chunks until its new ones are in
            self.vectors.remove(stale)
        self.vectors.maintain()
        self.synced_as = changed_by if finished else None
        return SyncReport(added, len(stale) if finished else 0, chunks, encoded, finished)

    def close(self) -> None:
        self.cache.close()

    def _write(self, rows: pa.Table) -> int:
        """Embed and add one slice of chunk rows; how many chunks the model had to encode."""
        texts = rows.column("text").to_pylist()
        hashes = [content_hash(text) for text in texts]
        known = self.cache.get(self.encoder.name, hashes)
        missing = list(dict.fromkeys(h for h in hashes if h not in known))
        if missing:
            text_of = dict(zip(hashes, texts, strict=True))
            computed = self.encoder.encode([text_of[h] for h in missing])
            self.cache.put(self.encoder.name, missing, computed)
            known.update(zip(missing, computed, strict=True))
        vectors: Matrix = np.stack([known[h] for h in hashes])
        column = pa.FixedSizeListArray.from_arrays(vectors.ravel(), self.encoder.dim)
        self.vectors.add(rows.append_column("vector", column))
        return len(missing)


def _changes(db: duckdb.DuckDBPyConnection, held: pa.Table) -> tuple[list[tuple[str, str]], pa.Table]:
    """What `held` has that the memory texts no longer show, as (memory_id, content_hash), and
    the memory rows `held` lacks, in memory_id order. The memory texts are read once: their view
    costs most (0.2 s at 100k memories), and it is read after every fold."""
    db.register("held", held)
    try:
        db.execute(f"CREATE OR REPLACE TEMP TABLE shown AS {_CURRENT}")
        stale = db.execute(
            "SELECT memory_id, content_hash FROM held ANTI JOIN shown USING (memory_id, content_hash)"
        ).fetchall()
        fresh = db.sql(
            "SELECT * FROM shown ANTI JOIN held USING (memory_id, content_hash) ORDER BY memory_id"
        ).to_arrow_table()
    finally:
        db.execute("DROP TABLE IF EXISTS shown")
        db.unregister("held")
    return stale, fresh


def _slices(fresh: pa.Table) -> Iterator[tuple[pa.Table, int]]:
    """The chunk rows of `fresh` memories, about SLICE_CHUNKS at a time, and how many memories."""
    columns: dict[str, list[object]] = {name: [] for name in ["chunk", *fresh.column_names]}
    memories = 0
    for batch in fresh.to_batches(max_chunksize=256):
        for memory in batch.to_pylist():
            # all-whitespace texts are not memories; `or` covers whitespace SQL and Python disagree on
            for number, piece in enumerate(chunk(memory["text"]) or [memory["text"]]):
                columns["chunk"].append(number)
                for name, value in memory.items():
                    columns[name].append(piece if name == "text" else value)
            memories += 1
            if len(columns["chunk"]) >= SLICE_CHUNKS:
                yield pa.table(columns), memories
                columns = {name: [] for name in columns}
                memories = 0
    if memories:
        yield pa.table(columns), memories
