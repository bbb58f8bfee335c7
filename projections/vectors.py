"""The vectors: every memory text, chunked and embedded, in LanceDB, with its indexes.

    projections/vectors/
        .lock                           held by the one embedder
        embedding-cache.duckdb          vectors by (model, content hash): projections/embedding_model.py
        <model>-<version>/              one LanceDB database per model and layout
            memories.lance/             a row per chunk: the chunk, its memory, its vector
            embedded.parquet            (memory_id, content_hash) of what is in, for SQL readers

The vectors follow the memories of the projections (`memory_documents` in analytics.sql): a
memory whose text changed is embedded again, one that is gone is removed. LanceDB keeps
versions, so readers read while the embedder writes (recall reads it all into memory:
recall/index.py); DuckDB readers cannot open LanceDB, so the embedder publishes what it holds
as Parquet (memory_health.embedding_coverage).

lancedb is imported on first use: it costs seconds, and `reverie sql` only needs the paths.
"""

import os
from datetime import timedelta
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from projections.literals import string_literal
from schemas.disk.files import write_durably

if TYPE_CHECKING:
    from lancedb.table import Table

Vector = npt.NDArray[np.float32]

TABLE = "memories"
MANIFEST = "embedded.parquet"
# Below this many chunks a flat scan answers within about 6 ms (0.6 ms per 1,000 chunks here,
# benchmarks/vector_search.py), and an index would only cost its training.
ANN_MIN_ROWS = 10_000
# Rows written since the indexes were last brought up to date, beyond which they are: rows
# outside the indexes are searched one by one, which costs little for vectors but much for full
# text over long rows (4,750 long rows outside the index took a search from 5 ms to 650 ms).
_STALE_ROWS = 1_000
# How stale a reader's view of the tables may be: the recall service sees what the embedder
# wrote within this (LanceDB's default is never).
_FRESH = timedelta(seconds=1)
# Old LanceDB versions a reader may still be reading are kept this long.
_KEEP_VERSIONS = timedelta(minutes=10)
_HELD = pa.schema([pa.field("memory_id", pa.string()), pa.field("content_hash", pa.string())])
_VERSION = "reverie.table_version"  # the manifest's metadata: the table's version it describes
KEY_SEPARATOR = "\x1f"  # between a memory id and a content hash, in one key


def _columns(dim: int) -> list[pa.Field]:
    return [
        pa.field("memory_id", pa.string(), nullable=False),
        pa.field("chunk", pa.int32(), nullable=False),
        pa.field("kind", pa.string(), nullable=False),
        pa.field("project", pa.string()),
        pa.field("session_id", pa.string()),
        pa.field("ts", pa.timestamp("us", tz="UTC")),
        pa.field("text", pa.string(), nullable=False),
        pa.field("content_hash", pa.string(), nullable=False),  # memory_documents.content_hash
        pa.field("vector", pa.list_(pa.float32(), dim), nullable=False),
    ]


def row_schema(dim: int) -> pa.Schema:
    return pa.schema(_columns(dim))


class Vectors:
    """The one database of a model's vectors."""

    def __init__(self, path: str, dim: int) -> None:
        import lancedb

        os.makedirs(path, mode=0o700, exist_ok=True)
        self.path = path
        self.dim = dim
        self.schema = row_schema(dim)
        db = lancedb.connect(path, read_consistency_interval=_FRESH)
        self.table: Table = db.create_table(TABLE, schema=self.schema, exist_ok=True)
        self._held: pa.Table | None = None  # read once, then kept in step by `add` and `remove`

    def count(self) -> int:
        return self.table.count_rows()

    def held(self) -> pa.Table:
        """(memory_id, content_hash) of every memory in, once each: the writer's view. The table
        is read once (170 ms at 100k memories), then this object's `add` and `remove` keep it
        in step: the one embedder (.lock) is the table's one writer."""
        if self._held is None:
            rows = self.table.search().select(["memory_id", "content_hash"]).limit(None).to_arrow()
            self._held = _distinct(rows)
        return self._held

    def remove(self, memories: list[tuple[str, str]], per_statement: int = 500) -> None:
        """Delete the chunks of these (memory_id, content_hash): a memory's other texts stay.
        What is in is published (`publish_manifest`)."""
        if not memories:
            return
        held = self.held()
        for start in range(0, len(memories), per_statement):
            matches = " OR ".join(
                f"(memory_id = {string_literal(m)} AND content_hash = {string_literal(h)})"
                for m, h in memories[start : start + per_statement]
            )
            self.table.delete(matches)
        gone = pa.array([m + KEY_SEPARATOR + h for m, h in memories], pa.string())
        self._held = held.filter(pc.invert(pc.is_in(held_keys(held), value_set=gone)))
        self.publish_manifest()

    def add(self, rows: pa.Table) -> None:
        """Add these chunk rows; what is in is published (`publish_manifest`)."""
        held = self.held()
        self.table.add(rows.select(self.schema.names).cast(self.schema))
        self._held = pa.concat_tables([held, _distinct(rows)]).combine_chunks()
        self.publish_manifest()

    def maintain(self) -> None:
        """Create the indexes the table has grown into; fold recent rows into them."""
        from lancedb.index import FTS, BTree, IvfHnswSq

        indexed = {index.columns[0]: index.name for index in self.table.list_indices()}
        rows = self.count()
        wanted: dict[str, FTS | BTree | IvfHnswSq] = {"text": FTS(), "memory_id": BTree()} if rows else {}
        if rows >= ANN_MIN_ROWS:
            wanted["vector"] = IvfHnswSq(distance_type="cosine")
        for column, config in wanted.items():
            if column not in indexed:
                self.table.create_index(column, config=config)
        if any(self._unindexed(name) >= _STALE_ROWS for name in indexed.values()):
            self.table.optimize(cleanup_older_than=_KEEP_VERSIONS)

    def _unindexed(self, index: str) -> int:
        stats = self.table.index_stats(index)
        return stats.num_unindexed_rows if stats else 0

    def publish_manifest(self) -> None:
        """Write what is in for readers (SQL, recall's index), replacing the last manifest
        atomically (15 ms at 100k memories), marked with the table's version it describes."""
        sink = pa.BufferOutputStream()
        held = self.held().replace_schema_metadata({_VERSION: str(self.table.version)})
        pq.write_table(held, sink)
        write_durably(self.path, MANIFEST, sink.getvalue().to_pybytes())

    def published_version(self) -> int | None:
        """The version of the table the manifest describes (None: none, or unreadable); reads
        its footer alone."""
        try:
            metadata = pq.read_schema(os.path.join(self.path, MANIFEST)).metadata or {}
            return int(metadata[_VERSION.encode()])
        except (OSError, pa.ArrowInvalid, KeyError, ValueError):
            return None

    def published(self) -> pa.Table:
        """What the manifest says is in, as `held` (empty if it is missing or damaged: the
        embedder publishes it again), with the table brought to its latest version, which holds
        every row the manifest names. Readers follow the manifest, never the table, whose newest
        rows a round may still be writing; and reading it costs 5 ms at 100k memories, where a
        scan of the table costs 170."""
        try:
            held = pq.read_table(os.path.join(self.path, MANIFEST), schema=_HELD)
        except (OSError, pa.ArrowInvalid):
            return _HELD.empty_table()
        self.table.checkout_latest()  # type: ignore[no-untyped-call]
        return held

    def rows_of(self, memory_ids: list[str], columns: list[str]) -> pa.Table:
        """The `columns` of the chunks of these memories."""
        query = self.table.search().where(f"memory_id IN ({', '.join(map(string_literal, memory_ids))})")
        return query.select(columns).limit(None).to_arrow()


def held_keys(held: pa.Table) -> pa.Array:
    """Each (memory_id, content_hash) row as one string."""
    return pc.binary_join_element_wise(held["memory_id"], held["content_hash"], KEY_SEPARATOR)


def _distinct(rows: pa.Table) -> pa.Table:
    return rows.group_by(["memory_id", "content_hash"]).aggregate([]).cast(_HELD)


def chunk_vectors(path: str, memory_ids: list[str]) -> pa.Table:
    """(memory_id, vector) of the chunks of these memories, read without writing anything (an
    empty table when the embedder has made none yet)."""
    import lancedb

    empty = pa.table({"memory_id": pa.array([], pa.string())})
    if not memory_ids or not os.path.isdir(os.path.join(path, f"{TABLE}.lance")):
        return empty
    table = lancedb.connect(path).open_table(TABLE)
    query = table.search().where(f"memory_id IN ({', '.join(map(string_literal, memory_ids))})")
    return query.select(["memory_id", "vector"]).limit(None).to_arrow()


def vector_matrix(rows: pa.Table) -> npt.NDArray[np.float32]:
    """The `vector` column of `rows` as a matrix, a row each."""
    dim = rows.schema.field("vector").type.list_size
    flat = rows.column("vector").combine_chunks().flatten().to_numpy()
    return np.asarray(flat, dtype=np.float32).reshape(rows.num_rows, dim)
