"""What extraction reads of memory to settle a fact: each project's standing facts, from the
projections' last snapshot, and cosines from the embedder's model.

The model is loaded once per worker process, before RQ forks its work horses (`preload`), so a
job that needs a cosine pays ~10 ms a text, not the ~10 s of importing and loading it; a job
run elsewhere (a test, a script) loads it the first time it asks.
"""

import contextlib
from collections.abc import Sequence

import duckdb

from projections.embeddings import Encoder, load_encoder
from projections.folds import current
from projections.literals import string_literal
from projections.store import current_store
from schemas.settings import Settings
from workers.extraction.lifecycle import Known

_encoders: dict[str, Encoder] = {}


def preload(settings: Settings) -> None:
    """Load the embedder's model now, for the jobs this process will fork."""
    encoder(settings.embedding_model)


def encoder(model: str) -> Encoder:
    if model not in _encoders:
        _encoders[model] = load_encoder(model)
    return _encoders[model]


class Memory:
    """The standing facts of each project as the current snapshot holds them (read once per
    project), and cosines by the settings' model."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.db: duckdb.DuckDBPyConnection | None = None
        store = current_store(settings.projections_dir)
        if store is not None:
            with contextlib.suppress(duckdb.Error):  # none yet, or a replay removed it: nothing known
                self.db = duckdb.connect(":memory:")
                self.db.execute(f"ATTACH {string_literal(store.snapshot)} AS projections (READ_ONLY)")

    def facts(self, project: str) -> list[Known]:
        if self.db is None:
            return []
        rows = self.db.execute(
            f"""
            SELECT fact_id, source, relation, target, description, confidence, memory_type,
                1 + reconsolidations
            FROM projections.facts f
            WHERE project = ? AND {current("f")}
            ORDER BY fact_id
            """,
            [project],
        ).fetchall()
        fields = (
            "fact_id",
            "source",
            "relation",
            "target",
            "description",
            "confidence",
            "memory_type",
            "versions",
        )
        return [Known(**dict(zip(fields, row, strict=True))) for row in rows]

    def tokens_today(self) -> int:
        """The LLM tokens the snapshot says were spent today (UTC), all projects."""
        if self.db is None:
            return 0
        query = (
            "SELECT coalesce(sum(input_tokens + output_tokens), 0) FROM projections.llm_usage "
            "WHERE day = CAST(timezone('UTC', now()) AS DATE)"
        )
        try:
            [(spent,)] = self.db.execute(query).fetchall()
        except duckdb.Error:  # a snapshot from before LLM extraction
            return 0
        return int(spent)

    def cosine(self, text: str, others: Sequence[str]) -> list[float]:
        vectors = encoder(self.settings.embedding_model).encode([text, *others])
        return [float(v) for v in vectors[1:] @ vectors[0]]

    def __enter__(self) -> "Memory":
        return self

    def __exit__(self, *_: object) -> None:
        if self.db is not None:
            self.db.close()
