"""What `reverie status` reports: the stream, the spool, the log and who is alive."""

import os
from typing import Any

import msgspec
import redis
from rq import Worker

from ingest.dead_letters import count_dead_letters
from ingest.spool import spooled
from projections.event_log import EventLog, Quarantined
from projections.store import current_store
from projections.vectors import MANIFEST, vectors_path
from schemas.settings import GROUP, STREAM, Settings
from workers.dispatcher import HEARTBEAT_PREFIX, Heartbeat
from workers.redis_client import connect
from workers.supervisor import running_pid


class WorkerState(msgspec.Struct, frozen=True):
    name: str
    state: str
    last_heartbeat: str | None


class StackStatus(msgspec.Struct, frozen=True, kw_only=True):
    redis_url: str
    reachable: bool
    stack_pid: int | None
    stream_length: int | None = None
    pending: int | None = None
    lag: int | None = None
    spooled: int
    dead_letters: int
    segments: int
    archived: int
    quarantined: list[Quarantined] = []  # files set aside from the log, with what was kept of each
    projections_published_at: float | None = None  # when the projector last published a snapshot
    vectors_published_at: float | None = None  # when the embedder last published what it holds
    dispatchers: list[Heartbeat] = []
    workers: list[WorkerState] = []


def _group_info(client: "redis.Redis") -> dict[str, Any]:
    for group in client.xinfo_groups(STREAM):
        name = group["name"]
        if (name.decode() if isinstance(name, bytes) else name) == GROUP:
            return dict(group)
    return {}


def _modified_at(path: str | None) -> float | None:
    try:
        return os.path.getmtime(path) if path else None
    except FileNotFoundError:
        return None


def _snapshot(settings: Settings) -> str | None:
    store = current_store(settings.projections_dir)
    return store.snapshot if store else None


def _manifest(settings: Settings) -> str:
    return os.path.join(vectors_path(settings.projections_dir, settings.embedding_model), MANIFEST)


def stack_status(settings: Settings) -> StackStatus:
    event_log = EventLog(settings.event_log_dir)
    local = StackStatus(
        redis_url=settings.redis_url,
        reachable=False,
        stack_pid=running_pid(settings),
        spooled=len(spooled(settings.spool_dir)),
        dead_letters=count_dead_letters(settings.dead_letter_dir),
        archived=event_log.count(),  # first: it sets aside a segment whose footer does not read
        segments=len(event_log.segments()),
        quarantined=event_log.quarantined(),
        projections_published_at=_modified_at(_snapshot(settings)),
        vectors_published_at=_modified_at(_manifest(settings)),
    )
    client = connect(settings, timeout=1.0)
    try:
        length = client.xlen(STREAM)
        group = _group_info(client) if length or client.exists(STREAM) else {}
        beat_keys = list(client.scan_iter(HEARTBEAT_PREFIX + "*"))
        beats = (
            [msgspec.json.decode(v, type=Heartbeat) for v in client.mget(beat_keys) if v] if beat_keys else []
        )
        workers = [
            WorkerState(
                w.name, str(w.get_state()), w.last_heartbeat.isoformat() if w.last_heartbeat else None
            )
            for w in Worker.all(connection=client)
        ]
    except (redis.RedisError, OSError):
        return local
    return msgspec.structs.replace(
        local,
        reachable=True,
        stream_length=length,
        pending=group.get("pending"),
        lag=group.get("lag"),
        dispatchers=beats,
        workers=workers,
    )
