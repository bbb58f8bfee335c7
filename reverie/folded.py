"""Waiting for the projections' snapshot to hold what was recorded a moment ago: an event the
caller just emitted (`memory_curate`'s `after`), or everything the stream and the log held when
the caller asked (a stash typed as a session's first prompt must read that prompt).
The projector publishes a snapshot a moment after the dispatcher writes a segment; these wait
for it, polling, up to a timeout, and say whether it came."""

import os
import time
from collections.abc import Callable

import redis

from projections.event_log import EventLog
from projections.sql import NoSnapshot, connect
from schemas.settings import GROUP, STREAM, Settings
from workers.redis_client import connect as redis_of

_POLL_S = 0.2


def holds_event(settings: Settings, event_id: str, timeout: float) -> bool:
    """Whether the snapshot holds the event `event_id`, waiting up to `timeout` seconds."""

    def held() -> bool:
        return bool(_read(settings, "SELECT 1 FROM projections.folded WHERE id = $id", {"id": event_id}))

    return _within(timeout, held)


def holds_what_was_recorded(settings: Settings, timeout: float) -> bool:
    """Whether the snapshot holds every event the stream and the event log held at the call:
    the stream's entries written to the log, then each of the log's segments folded; waiting up
    to `timeout` seconds. False at once when the server is away (no stack folds meanwhile)."""
    deadline = time.monotonic() + timeout
    try:
        client = redis_of(settings, timeout=1.0)
        newest = _newest_entry(client)
        if newest is not None and not _within(timeout, lambda: _written(client, newest)):
            return False
    except redis.RedisError:
        return False
    segments = {os.path.basename(p) for p in EventLog(settings.event_log_dir).segments()}

    def folded() -> bool:
        rows = _read(settings, "SELECT name FROM projections.folded_segments", {})
        return segments <= {name for (name,) in rows}

    return _within(max(0.0, deadline - time.monotonic()), folded)


def _within(timeout: float, done: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() >= deadline:
            return False
        time.sleep(_POLL_S)
    return True


def _read(settings: Settings, query: str, values: dict[str, str]) -> list[tuple[object, ...]]:
    try:
        db = connect(settings, snapshot_required=True, files=False)
    except NoSnapshot:
        return []
    try:
        return db.execute(query, values).fetchall()
    finally:
        db.close()


def _entry_id(value: bytes | str) -> tuple[int, int]:
    text = value.decode() if isinstance(value, bytes) else value
    ms, _, seq = text.partition("-")
    return int(ms), int(seq or 0)


def _newest_entry(client: "redis.Redis") -> tuple[int, int] | None:
    newest = [entry_id for entry_id, _ in client.xrevrange(STREAM, count=1) or [] if entry_id]
    return _entry_id(newest[0]) if newest else None


def _written(client: "redis.Redis", entry: tuple[int, int]) -> bool:
    """Whether the dispatcher has read every entry up to `entry` and acknowledged each: written
    to the log (it acknowledges only then)."""
    for group in client.xinfo_groups(STREAM):
        name = group["name"]
        if (name.decode() if isinstance(name, bytes) else name) == GROUP:
            return _entry_id(group["last-delivered-id"]) >= entry and not group["pending"]
    return False
