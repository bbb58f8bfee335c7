"""Oversized payloads are cut down, never dropped: long strings keep their head and tail.

A tool response can be megabytes (a file read, a build log). Every string longer than the
limit keeps its beginning and end around a marker that says how much was cut; if the event
is still too large, the limit shrinks until it fits.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

STRING_LIMIT = 32_768
EVENT_LIMIT = 512 * 1024
_TAIL = 1024


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    tail = min(_TAIL, limit // 4)
    head = limit - tail
    return f"{text[:head]}\n…[reverie: truncated {len(text) - head - tail} characters]…\n{text[-tail:]}"


def truncate_strings(value: Any, limit: int = STRING_LIMIT) -> Any:
    """The same JSON value with every string longer than `limit` cut to about that length."""
    if isinstance(value, str):
        return _cut(value, limit)
    if isinstance(value, dict):
        return {k: truncate_strings(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [truncate_strings(v, limit) for v in value]
    return value


def _scalars_only(payload: dict[str, Any], size: int) -> dict[str, Any]:
    kept = {
        k: v for k, v in list(payload.items())[:64] if v is None or isinstance(v, str | int | float | bool)
    }
    kept["reverie_truncated"] = f"payload of {size} bytes cut to its top-level scalar fields"
    return kept


def encode_within_budget(envelope: dict[str, Any], encode: Callable[[dict[str, Any]], bytes]) -> bytes:
    """Encode the event, cutting its payload's strings as much as it takes to fit EVENT_LIMIT."""
    limit = STRING_LIMIT
    envelope["payload"] = truncate_strings(envelope["payload"], limit)
    data = encode(envelope)
    while len(data) > EVENT_LIMIT:
        if limit <= 64:
            envelope["payload"] = _scalars_only(envelope["payload"], len(data))
            return encode(envelope)
        limit //= 8
        envelope["payload"] = truncate_strings(envelope["payload"], limit)
        data = encode(envelope)
    return data
