"""The event envelope: one Struct for every kind, observed or derived, and its checks.

An `Event` keeps its payload as raw JSON: the log stores exactly what was observed (fields a
newer Claude Code adds are kept, not dropped), and `payload_of` gives the typed view, by the
registry of kinds (schemas/registry.py).
"""

from datetime import datetime
from typing import Annotated

import msgspec

from schemas import kinds
from schemas.registry import DERIVED_KINDS, KINDS


class Event(msgspec.Struct, frozen=True, kw_only=True):
    """One immutable fact about what happened, as it travels and as the log keeps it."""

    id: str
    kind: str
    ts: datetime
    recorded_at: datetime
    project: str
    session_id: str | None = None
    agent: str = "main"
    source: str
    v: Annotated[int, msgspec.Meta(ge=0, le=32767)] = kinds.SCHEMA_VERSION
    payload: msgspec.Raw
    caused_by: tuple[str, ...] = ()


class InvalidEvent(ValueError):
    """Bytes that are not a valid event; the message says why."""


_envelope_decoder = msgspec.json.Decoder(Event)
_payload_decoders = {name: msgspec.json.Decoder(kind.payload) for name, kind in KINDS.items()}


def decode_event(data: bytes | str) -> Event:
    """Decode and validate an event: the envelope, its kind and its payload's types."""
    try:
        event = _envelope_decoder.decode(data)
        bytes(event.payload).decode("utf-8")  # the log stores it as text
    except (msgspec.DecodeError, UnicodeDecodeError) as e:
        raise InvalidEvent(f"envelope: {e}") from None
    except RecursionError:
        raise InvalidEvent("envelope: nested deeper than an event can be") from None
    check_provenance(event.kind, event.caused_by)
    payload_of(event)
    return event


def check_provenance(kind: str, caused_by: tuple[str, ...]) -> None:
    """InvalidEvent if `kind` is derived and names no event it came from."""
    if kind in DERIVED_KINDS and not caused_by:
        raise InvalidEvent(f"{kind} is derived: caused_by must name the events it came from")


def payload_of(event: Event) -> msgspec.Struct:
    """The typed payload of an event."""
    decoder = _payload_decoders.get(event.kind)
    if decoder is None:
        raise InvalidEvent(f"unknown event kind {event.kind!r}")
    try:
        return decoder.decode(event.payload)
    except (msgspec.DecodeError, UnicodeDecodeError) as e:
        raise InvalidEvent(f"{event.kind} payload: {e}") from None
    except RecursionError:
        raise InvalidEvent(f"{event.kind} payload: nested deeper than an event can be") from None


class DeadLetter(msgspec.Struct, frozen=True, kw_only=True):
    """Input that could not become an event, kept with the reason, never dropped (ingest/dead_letters.py
    writes it with the standard library: the hook writes them too)."""

    id: str
    recorded_at: datetime
    stage: str  # hook, dispatcher, spool, import
    reason: str
    head: str  # the first bytes of the input, escaped
    size: int  # bytes in the whole input
    argv: list[str] = []
    body: str | None = None  # the whole input, when it is an event (at most EVENT_LIMIT), to replay
