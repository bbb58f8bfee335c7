"""`emit`: how every producer but the hook appends an event to the stream.

The hook stays standard-library only, for speed: it builds the same JSON through
ingest/envelope.py and sends it over its own connection. Everything else (the import, the
recall service's feedback, the workers that think, the command line) emits through an
`Emitter`, so every event is made one way:

- checked against the registry of kinds (schemas/registry.py) as it is made: an unknown kind,
  a payload of another kind's Struct, a derived event without causes or without a worker
  fails at once, in the producer, with the reason (`Rejected`);
- redacted and cut like the hook's (`envelope.encode_event`);
- sent pipelined, `batch` events per round trip;
- kept in the spool when Redis cannot take them, if the producer says whose (`spool`): the
  command line and the MCP server, whose user must never lose what they asked to keep, and the
  stack's identification of recorded paths (the stack delivers them once it runs, as it does
  the hook's). `went_to` says where they went.

What must be on the server's disk before anything else happens (the spool's files are deleted
next) is appended by ingest/spool.py's `append_durably`, with redis-py through `pipelined`.

A derived event's id is a function of the worker, its version, the kind, the events it came
from and what it says (its `key`, by default its payload), and its time is its newest cause's:
a job run twice, or on two machines at once, emits the same ids, and the dispatcher keeps one
of each. An observed event takes a fresh id unless its producer derives one (the import does,
from the transcript's lines).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any

import msgspec

from ingest.envelope import Rejected, encode_event
from ingest.spool import spool_event, xadd
from schemas.events import Event, InvalidEvent, check_provenance, payload_of
from schemas.ids import derived_event_id, id_time_ms, new_event_id
from schemas.registry import KINDS
from schemas.settings import Settings

if TYPE_CHECKING:
    import redis

    from ingest.spool import Command

__all__ = ["Emitter", "Rejected", "Worker", "append", "encode", "pipelined"]


class Worker(msgspec.Struct, frozen=True):
    """A worker that thinks, as its derived events name it: bump `version` when what it
    derives from the same causes changes."""

    name: str
    version: int


def _iso(ts: datetime | str) -> str:
    return ts if isinstance(ts, str) else ts.astimezone(UTC).isoformat()


def _newest_cause(caused_by: Sequence[str]) -> int:
    try:
        return max(id_time_ms(cause) for cause in caused_by)
    except (ValueError, KeyError):
        raise Rejected(f"caused_by must hold event ids, got {list(caused_by)!r}") from None


def _checked(kind: str, payload: msgspec.Struct | Mapping[str, Any]) -> dict[str, Any]:
    """The payload as JSON-ready builtins, once it is known to fit `kind`."""
    spec = KINDS.get(kind)
    if spec is None:
        raise Rejected(f"unknown event kind {kind!r}; the kinds are in schemas/registry.py")
    if isinstance(payload, msgspec.Struct):
        if type(payload) is not spec.payload:
            raise Rejected(f"{kind} carries a {spec.payload.__name__}, not a {type(payload).__name__}")
        builtins: dict[str, Any] = msgspec.to_builtins(payload)
        return builtins
    if spec.derived:
        raise Rejected(f"{kind} is derived: its payload is a {spec.payload.__name__}")
    try:  # what was observed is kept whole (unknown fields too), once its known fields check
        msgspec.convert(payload, spec.payload, strict=False)
    except msgspec.ValidationError as e:
        raise Rejected(f"{kind} payload: {e}") from None
    return dict(payload)


def _digest(body: dict[str, Any]) -> str:
    return hashlib.blake2b(msgspec.json.encode(body), digest_size=16).hexdigest()


def encode(
    kind: str,
    payload: msgspec.Struct | Mapping[str, Any],
    *,
    project: str,
    source: str,
    session_id: str | None = None,
    agent: str | None = None,
    caused_by: Sequence[str] = (),
    ts: datetime | str | None = None,
    event_id: str | None = None,
    worker: Worker | None = None,
    key: str | None = None,
    recorded_at: datetime | str | None = None,
) -> tuple[str, bytes]:
    """An event's id and wire form (see the module's docstring); raises Rejected."""
    body = _checked(kind, payload)
    if KINDS[kind].derived:
        if not caused_by or worker is None:
            raise Rejected(f"{kind} is derived: it needs the worker and the events it came from (caused_by)")
        if event_id is not None:
            raise Rejected(f"{kind} is derived: its id follows from its worker and causes, it is not given")
        newest = _newest_cause(caused_by)
        said = key if key is not None else _digest(body)
        event_id = derived_event_id(newest, worker.name, str(worker.version), kind, said, *sorted(caused_by))
        ts = ts or datetime.fromtimestamp(newest / 1000, UTC)
    now = datetime.now(UTC)
    event_id = event_id or new_event_id()
    data = encode_event(
        kind,
        body,
        event_id=event_id,
        ts=_iso(ts or now),
        recorded_at=_iso(recorded_at or now),
        project=project,
        source=source,
        caused_by=list(caused_by),
        session_id=session_id,
        agent=agent,
    )
    return event_id, data


def encode_kept(event: Event) -> bytes:
    """The wire form of an event made elsewhere, everything it says kept (its payload redacted
    and cut again, which leaves what was redacted and cut as it was); raises Rejected."""
    try:
        payload_of(event)
        check_provenance(event.kind, event.caused_by)
    except InvalidEvent as e:
        raise Rejected(str(e)) from None
    payload = msgspec.json.decode(event.payload)
    if not isinstance(payload, dict):
        raise Rejected(f"{event.kind} payload: expected an object")
    return encode_event(
        event.kind,
        payload,
        event_id=event.id,
        ts=_iso(event.ts),
        recorded_at=_iso(event.recorded_at),
        project=event.project,
        source=event.source,
        caused_by=list(event.caused_by),
        session_id=event.session_id,
        agent=event.agent,
        v=event.v,
    )


def pipelined(client: redis.Redis) -> Callable[[list[Command]], list[object]]:
    """How `client` runs commands in one round trip, as ingest/spool.py's `append_durably` asks."""

    def send(commands: list[Command]) -> list[object]:
        pipe = client.pipeline(transaction=False)
        for command in commands:
            pipe.execute_command(*command)  # type: ignore[no-untyped-call]
        replies: list[object] = pipe.execute()
        return replies

    return send


def append(client: redis.Redis, encoded: Sequence[bytes]) -> None:
    """Append events already encoded to the stream, in one round trip (the Emitter's sending)."""
    pipelined(client)([xadd(data) for data in encoded])


def _deliver(client: redis.Redis, encoded: Sequence[tuple[str, bytes]], spool: Settings | None) -> str:
    """Append events already encoded, as (id, wire form), to the stream; if Redis cannot take
    them and `spool` is given, keep each in its spool instead (the stack delivers them later, and
    the dispatcher keeps one of each id if some had reached the stream). Where they went:
    "stream" or "spool"."""
    try:
        append(client, [data for _, data in encoded])
    except Exception as e:
        import redis  # loaded already: `client` is one of its clients

        if spool is None or not isinstance(e, (redis.RedisError, OSError)):
            raise
        for event_id, data in encoded:
            spool_event(spool, event_id, data)
        return "spool"
    return "stream"


class Emitter:
    """One producer's way to the stream: `emit` queues an event, `flush` sends what is queued
    (every `batch` events, and on leaving a `with` block without an error). A worker that
    thinks gives itself (`worker`): its events are derived. Given the settings of a `spool`,
    what Redis cannot take is kept there; else the error is raised."""

    def __init__(
        self,
        client: redis.Redis,
        source: str,
        worker: Worker | None = None,
        batch: int = 500,
        spool: Settings | None = None,
    ) -> None:
        self.client = client
        self.source = source
        self.worker = worker
        self.batch = batch
        self.spool = spool
        self.queued: list[tuple[str, bytes]] = []
        self.sent = 0
        self.spooled = 0

    def emit(
        self,
        kind: str,
        payload: msgspec.Struct | Mapping[str, Any],
        *,
        project: str,
        session_id: str | None = None,
        agent: str | None = None,
        caused_by: Sequence[str] = (),
        ts: datetime | str | None = None,
        event_id: str | None = None,
        key: str | None = None,
    ) -> str:
        """Queue one event; its id. Raises Rejected if it cannot be an event (nothing is queued)."""
        event_id, data = encode(
            kind,
            payload,
            project=project,
            source=self.source,
            session_id=session_id,
            agent=agent,
            caused_by=caused_by,
            ts=ts,
            event_id=event_id,
            worker=self.worker,
            key=key,
        )
        self.queued.append((event_id, data))
        if len(self.queued) >= self.batch:
            self.flush()
        return event_id

    def keep(self, event: Event) -> str:
        """Queue an event made elsewhere, as it is (`encode_kept`: not under this emitter's
        source or worker); its id. Raises Rejected if it is not a valid event."""
        self.queued.append((event.id, encode_kept(event)))
        if len(self.queued) >= self.batch:
            self.flush()
        return event.id

    def flush(self) -> int:
        """Send what is queued (to the stream, or to the spool); how many."""
        queued, self.queued = self.queued, []
        if queued:
            if _deliver(self.client, queued, self.spool) == "spool":
                self.spooled += len(queued)
            else:
                self.sent += len(queued)
        return len(queued)

    @property
    def went_to(self) -> str:
        """Where what was flushed went: "stream", or "spool" if Redis could not take some of it."""
        return "spool" if self.spooled else "stream"

    def __enter__(self) -> Emitter:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if error is None:
            self.flush()
