"""What a follower reads: the events it follows (or, for a follower of requests, the request),
the projections' snapshot (opened one way, the first time it is asked for), the embedding model
(loaded once per process) and the time. A follower of requests leaves its answer on it.

The model is loaded before RQ forks its work horses (`preload`), so a job that needs a vector
pays ~10 ms a text, not the ~10 s of importing and loading it; a job run elsewhere (a test, a
script, `reverie think --now`) loads it the first time it asks.
"""

from collections.abc import Sequence
from datetime import datetime
from functools import cached_property

import duckdb
import msgspec
import numpy as np

from ingest.emit import Worker, encode
from projections import sql
from projections.embedding_model import Encoder, load_encoder
from schemas.events import Event
from schemas.kinds import SOURCE_WORKER
from schemas.settings import Settings
from workers.thinking.follower import Derived

_encoders: dict[str, Encoder] = {}


def preload(settings: Settings) -> None:
    """Load the embedding model now, for the jobs this process will fork."""
    encoder(settings.embedding_model)


def encoder(model: str) -> Encoder:
    if model not in _encoders:
        _encoders[model] = load_encoder(model)
    return _encoders[model]


def tokens_today(db: duckdb.DuckDBPyConnection) -> int:
    """The LLM tokens a snapshot says were spent today (UTC), all projects."""
    try:
        [(spent,)] = db.execute(
            "SELECT coalesce(sum(input_tokens + output_tokens), 0) FROM llm_usage "
            "WHERE day = CAST(timezone('UTC', now()) AS DATE)"
        ).fetchall()
    except duckdb.CatalogException:  # a snapshot from before LLM extraction
        return 0
    return int(spent)


class Reading:
    """One run's view: see the module's docstring. Close it (or use it in a `with` block)."""

    def __init__(
        self,
        settings: Settings,
        worker: Worker,
        events: list[Event],
        at: datetime,
        request: msgspec.Struct | None = None,
    ) -> None:
        self.settings = settings
        self.worker = worker
        self.events = events
        self.at = at
        self.request = request
        self.answer: msgspec.Struct | None = None  # what a follower of requests answers its asker

    @cached_property
    def snapshot(self) -> duckdb.DuckDBPyConnection:
        """The projections as the last snapshot has them (empty before the first)."""
        return sql.connect(self.settings)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """The texts' unit vectors, by the settings' model."""
        return encoder(self.settings.embedding_model).encode(list(texts))

    def cosine(self, text: str, others: Sequence[str]) -> list[float]:
        vectors = self.encode([text, *others])
        return [float(v) for v in vectors[1:] @ vectors[0]]

    def id_of(self, derived: Derived) -> str:
        """The id `derived` takes when it is emitted: what later events it causes name."""
        event_id, _ = encode(
            derived.kind, derived.payload, source=SOURCE_WORKER, worker=self.worker, **derived.placed()
        )
        return event_id

    def close(self) -> None:
        if "snapshot" in self.__dict__:
            self.snapshot.close()

    def __enter__(self) -> "Reading":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
