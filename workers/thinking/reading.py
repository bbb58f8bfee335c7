"""What a follower reads: the events it follows (or, for a follower of requests, the request),
the projections' snapshot (opened one way, the first time it is asked for), the embedding model
and the time. A follower of requests leaves its answer on it.

The model is the recall service's: a job asks it for vectors over its socket (~5 ms a short
text), so the stack holds one copy of the model however many workers it runs. A job with no
service to ask (the stack down, a test, `reverie think --now` on its own) loads the model
itself, once per process (a tenth of a second for the default model).
"""

import base64
from collections.abc import Sequence
from datetime import datetime
from functools import cached_property

import duckdb
import msgspec
import numpy as np
import structlog

from ingest.emit import Worker, encode
from ingest.injection import ask_service
from projections import sql
from projections.embedding_model import Encoder, load_encoder
from schemas.events import Event
from schemas.kinds import SOURCE_WORKER
from schemas.settings import Settings
from workers.thinking.follower import Derived

log = structlog.get_logger("reverie.reading")
_encoders: dict[str, Encoder] = {}
_ASK_S = 60.0  # a job's texts wait for the service's model at most this long, then load it here
_ASK_CHARS = 256 * 1024  # texts per request, by their length: well within a request line's limit


def encoder(model: str) -> Encoder:
    """`model`, loaded in this process the first time it is asked for."""
    if model not in _encoders:
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
    parts: list[list[str]] = []
    size = _ASK_CHARS
    for text in texts:
        if size + len(text) > _ASK_CHARS:
            parts.append([])
            size = 0
        parts[-1].append(text)
        size += len(text)
    return parts


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

    def __enter__(self) -> "Reading":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
