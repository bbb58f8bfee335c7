"""Oversized payloads are cut down, never dropped: long strings keep their head and tail.

A tool response can be megabytes (a file read, a build log). Every string longer than the
limit keeps its beginning and end around a marker that says how much was cut; if the event
is still too large, the limit shrinks until it fits.

Each kept piece can be cleaned (redacted) on the way: the cleaning sees a few KiB beyond the
cut, so a secret that straddles it is still recognised whole, and a megabyte string costs
no more to redact than its kept pieces.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

STRING_LIMIT = 32_768
EVENT_LIMIT = 512 * 1024
_TAIL = 1024
# What cleaning sees beyond a cut: longer than any secret, private keys included (an RSA-8192
# key in PEM is about 6,400 characters), so none is cut out of its own pattern.
_MARGIN = 8192


def cut(text: str, limit: int = STRING_LIMIT, clean: Callable[[str], str] | None = None) -> str:
    """`text` (cleaned, if given `clean`) cut to about `limit` characters around a marker."""
    if len(text) <= limit:
        return clean(text) if clean is not None else text
    tail = min(_TAIL, limit // 4)
    head = limit - tail
    first, last = text[: head + _MARGIN], text[-(tail + _MARGIN) :]
    if clean is not None:
        first, last = clean(first), clean(last)
    return f"{first[:head]}\n…[reverie: truncated {len(text) - head - tail} characters]…\n{last[-tail:]}"


def truncate_strings(
    value: Any,
    limit: int = STRING_LIMIT,
    max_items: int | None = None,
    clean: Callable[[str], str] | None = None,
) -> Any:
    """The same JSON value with every string longer than `limit` cut to about that length
    (each kept piece passed through `clean`), and, given `max_items`, every list and object
    cut to that many items (and a marker)."""
    if isinstance(value, str):
        return cut(value, limit, clean)
    if isinstance(value, dict):
        items = list(value.items())
        if max_items is not None and len(items) > max_items:
            items = [*items[:max_items], ("reverie_truncated", f"{len(value) - max_items} more keys")]
        return {k: truncate_strings(v, limit, max_items, clean) for k, v in items}
    if isinstance(value, list):
        kept = [truncate_strings(v, limit, max_items, clean) for v in value[:max_items]]
        if max_items is not None and len(value) > max_items:
            kept.append(f"…[reverie: {len(value) - max_items} more items]")
        return kept
    return value


def _scalars_only(payload: dict[str, Any], size: int) -> dict[str, Any]:
    kept = {
        k: v for k, v in list(payload.items())[:64] if v is None or isinstance(v, str | int | float | bool)
    }
    kept["reverie_truncated"] = f"payload of {size} bytes cut to its top-level scalar fields"
    return kept


# Ever harder cuts for an event over EVENT_LIMIT: strings first, then long lists and objects.
_SHRINK: list[tuple[int, int | None]] = [(4096, None), (512, None), (512, 1000), (128, 100), (64, 10)]


def encode_within_budget(envelope: dict[str, Any], encode: Callable[[dict[str, Any]], bytes]) -> bytes:
    """Encode the event (its strings already cut to STRING_LIMIT), cutting more until it fits."""
    data = encode(envelope)
    shrinks = iter(_SHRINK)
    while len(data) > EVENT_LIMIT:
        step = next(shrinks, None)
        if step is None:
            envelope["payload"] = _scalars_only(envelope["payload"], len(data))
            return encode(envelope)
        envelope["payload"] = truncate_strings(envelope["payload"], *step)
        data = encode(envelope)
    return data
