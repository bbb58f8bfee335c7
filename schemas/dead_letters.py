"""A dead letter: input that could not become an event, kept with the reason, never dropped."""

from datetime import datetime

import msgspec


class DeadLetter(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    recorded_at: datetime
    stage: str  # hook, dispatcher, spool, import
    reason: str
    head: str  # the first bytes of the input, escaped
    size: int  # bytes in the whole input
    argv: list[str] = []
    body: str | None = None  # the whole input, when it is an event (at most EVENT_LIMIT), to replay
