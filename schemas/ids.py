"""Event ids: 26-character ULIDs, unique and sortable by time (lexical order is time order).

48 bits of milliseconds since the epoch, then 80 bits of entropy, in Crockford's base32.
Live events take their entropy from os.urandom; imported events derive it from what they
were made from, so importing the same transcript twice yields the same ids.
"""

import os
import time

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_DECODE = {c: i for i, c in enumerate(_ALPHABET)}
ID_LENGTH = 26


def _encode(ts_ms: int, entropy: bytes) -> str:
    value = (ts_ms << 80) | int.from_bytes(entropy[:10], "big")
    chars = []
    for _ in range(ID_LENGTH):
        chars.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def utc_now_iso() -> str:
    """Now, in RFC 3339 with microseconds, without importing datetime (the hook's budget)."""
    ns = time.time_ns()
    seconds, micros = divmod(ns // 1000, 1_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{micros:06d}+00:00"


def new_event_id(ts_ms: int | None = None) -> str:
    """A fresh id for an event that happens now (or at `ts_ms`)."""
    return _encode(time.time_ns() // 1_000_000 if ts_ms is None else ts_ms, os.urandom(10))


def derived_event_id(ts_ms: int, *seed: str) -> str:
    """A reproducible id: the same time and seed always give the same id."""
    import hashlib  # not on the hook's path

    return _encode(ts_ms, hashlib.blake2b("\x1f".join(seed).encode(), digest_size=10).digest())


def id_time_ms(event_id: str) -> int:
    """The millisecond timestamp an id carries."""
    if len(event_id) != ID_LENGTH:
        raise ValueError(f"not an event id: {event_id!r}")
    value = 0
    for c in event_id.upper():
        value = (value << 5) | _DECODE[c]
    return value >> 80
