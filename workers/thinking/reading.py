"""What a follower reads: the events it follows (or, for a follower of requests, the request),
the projections' snapshot (opened one way, the first time it is asked for), the embedding model
and the time. A follower of requests leaves its answer on it.

The model is the recall service's: a job asks it for vectors over its socket (~5 ms a short
text), so the stack holds one copy of the model however many workers it runs. A job with no
service to ask (the stack down, a test, `reverie think --now` on its own) loads the model
itself, once per process: once per job on a worker, which forks a process for each (a tenth of
a second for the default model).
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from datetime import datetime
from functools import cached_property
from typing import TYPE_CHECKING

import msgspec
import numpy as np
import structlog

from ingest.emit import Worker, encode
from ingest.injection import ask_service
from schemas.events import Event
from schemas.kinds import SOURCE_WORKER
from schemas.recall import REQUEST_LIMIT
from schemas.settings import Settings
from workers.thinking.follower import Derived

if TYPE_CHECKING:  # DuckDB, Arrow and the model are loaded where a job reads or encodes: the
    # dispatcher and the scheduler, which import this module to enqueue jobs, never do
    import duckdb

    from projections.embedding_model import Encoder

log = structlog.get_logger("reverie.reading")
_encoders: dict[str, Encoder] = {}
_ASK_S = 60.0  # a job's texts wait for the service's model at most this long, then load it here
# A request's texts, by their length: a character takes at most 12 bytes in JSON (an escaped
# surrogate pair), so a request stays within its line's limit (schemas/recall.py); a longer text
# is cut, far past the 256 tokens the model reads of it.
_ASK_CHARS = REQUEST_LIMIT // 12 - 1024


def encoder(model: str) -> Encoder:
    """`model`, loaded in this process the first time it is asked for."""
    if model not in _encoders:
        from projections.embedding_model import load_encoder

        _encoders[model] = load_encoder(model)
    return _encoders[model]


def encoded(settings: Settings, texts: list[str]) -> np.ndarray:
    """The texts' unit vectors by the settings' model: the recall service's, else this process's."""
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    try:
        return np.concatenate([_asked(settings, part) for part in _parts(texts)])
    except (OSError, ValueError, KeyError) as e:
        log.info("model.loaded_here", reason=f"the recall service did not encode: {e}")
        return encoder(settings.embedding_model).encode(texts)


def _asked(settings: Settings, texts: list[str]) -> np.ndarray:
    answer = ask_service(settings, {"encode": texts, "deadline_s": _ASK_S}, _ASK_S)
    if "error" in answer:
        raise ValueError(answer["error"])
    vectors = np.frombuffer(base64.b64decode(answer["vectors"]), dtype="<f4").astype(np.float32)
    return vectors.reshape(len(texts), -1)


def _parts(texts: list[str]) -> list[list[str]]:
    """`texts` in requests of at most _ASK_CHARS characters, each text cut to fit one."""
    parts: list[list[str]] = []
    size = 0
    for text in (t[:_ASK_CHARS] for t in texts):
        if not parts or size + len(text) > _ASK_CHARS:
            parts.append([])
            size = 0
        parts[-1].append(text)
        size += len(text)
    return parts


def tokens_today(db: duckdb.DuckDBPyConnection) -> int:
    """The LLM tokens a snapshot says were spent today (UTC), all projects."""
    import duckdb

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
        from projections import sql

        return sql.connect(self.settings)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """The texts' unit vectors, by the settings' model."""
        return encoded(self.settings, list(texts))

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

    def __enter__(self) -> Reading:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
