"""The embedder's fold: the memory texts of a snapshot -> their vectors, through the cache.

Each round compares the snapshot's `memory_documents` with what the vectors hold, by memory id
and content hash: memories gone or changed lose their chunks, new or changed ones are
chunked, looked up in the cache, embedded when missing there, and written. So the vectors
always follow some published snapshot, whatever happened to the store (a replay, a schema
rebuild), and only text never seen by this model costs model time. The sessions'
conversations (`session_documents`) follow the same way, for full-text search only.
"""

from collections.abc import Callable, Iterator

import duckdb
import msgspec
import numpy as np
import pyarrow as pa

from projections.chunking import chunk
from projections.embeddings import EmbeddingCache, Encoder, Matrix, content_hash
from projections.vectors import Vectors

# Chunks embedded and written at once: large enough that the model sorts a whole slice by
# length (padding costs less) and LanceDB gets few, large fragments.
# Stopping waits for the slice at hand: about 10 s of model time at most on two cores.
SLICE_CHUNKS = 1_024
SyncProgress = Callable[[int, int], None]  # (memories done, memories to do)

_CURRENT = "SELECT * FROM memory_documents"
_SESSIONS = "SELECT * FROM session_documents"


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

    def sync(
        self,
        db: duckdb.DuckDBPyConnection,
        progress: SyncProgress | None = None,
        stop: Callable[[], bool] = lambda: False,
    ) -> SyncReport:
        """Bring the vectors in step with the memory texts `db` shows (see projections/sql.py)."""
        stale, fresh = _changes(db, _CURRENT, self.vectors.held(), "memory_id")
        sessions_changed = self._sync_sessions(db)
        if not stale and not fresh.num_rows and self.vectors.manifest_published():
            if sessions_changed:
                self.vectors.maintain()
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
        self.vectors.publish_manifest()
        return SyncReport(added, len(stale) if finished else 0, chunks, encoded, finished)

    def close(self) -> None:
        self.cache.close()

    def _sync_sessions(self, db: duckdb.DuckDBPyConnection) -> bool:
        """Bring the sessions in step with `session_documents`; whether any changed."""
        stale, fresh = _changes(db, _SESSIONS, self.vectors.held_sessions(), "session_id")
        self.vectors.replace_sessions(fresh, stale)
        return bool(stale or fresh.num_rows)

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


def _changes(
    db: duckdb.DuckDBPyConnection, current: str, held: pa.Table, key: str
) -> tuple[list[tuple[str, str]], pa.Table]:
    """What `held` has that `current` no longer shows, as (key, content_hash), and the rows of
    `current` that `held` lacks, in key order."""
    db.register("held", held)
    try:
        stale = db.execute(
            f"SELECT {key}, content_hash FROM held ANTI JOIN ({current}) USING ({key}, content_hash)"
        ).fetchall()
        fresh = db.sql(
            f"SELECT * FROM ({current}) ANTI JOIN held USING ({key}, content_hash) ORDER BY {key}"
        ).to_arrow_table()
    finally:
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
