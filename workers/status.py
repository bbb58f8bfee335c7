"""What `reverie status` reports: the stream, the spool, the log and who is alive."""

import os
import socket
from typing import Any

import duckdb
import msgspec
import redis
from rq import Worker
from rq.exceptions import NoSuchJobError
from rq.job import Job
from rq.registry import FailedJobRegistry, ScheduledJobRegistry, StartedJobRegistry
from rq.worker import BaseWorker

from ingest.dead_letters import count_dead_letters
from ingest.spool import spooled
from projections import sql
from projections.event_log import EventLog
from projections.store import current_store
from projections.vectors import MANIFEST
from schemas.settings import GROUP, QUEUE, STREAM, Settings
from schemas.status import FailedJob, Heartbeat, ScheduledJob, StackStatus, WorkerState
from workers.dispatcher import HEARTBEAT_PREFIX
from workers.llm.config import BadSettings, llm_settings
from workers.redis_client import connect
from workers.supervisor import running_pid
from workers.thinking.reading import tokens_today
from workers.thinking.schedule import states

# Below this much free space (64 MiB, or 2% of a smaller disk), segments, snapshots and the
# server's append-only file soon cannot be written: the stack holds what it has and waits
# (nothing is lost), and says so here.
DISK_FULL_BELOW, DISK_FULL_SHARE = 64 * 2**20, 0.02


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
    return os.path.join(settings.vectors_dir, MANIFEST)


def _disk(settings: Settings) -> tuple[int, bool] | None:
    """Bytes free for the data directory, and whether that is too little."""
    path = settings.home
    while not os.path.exists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    try:
        found = os.statvfs(path)
    except OSError:
        return None
    free = found.f_bavail * found.f_frsize
    return free, free < min(DISK_FULL_BELOW, DISK_FULL_SHARE * found.f_blocks * found.f_frsize)


def _may_live(worker: BaseWorker) -> bool:
    """False for a worker of this machine whose process is gone (killed, it could not say it
    left; RQ keeps its record, "busy", until its time to live ends)."""
    if worker.hostname != socket.gethostname() or not worker.pid:
        return True
    try:
        os.kill(worker.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _failed_jobs(client: "redis.Redis", newest: int = 5) -> tuple[int, list[FailedJob]]:
    registry = FailedJobRegistry(QUEUE, connection=client)
    ids = registry.get_job_ids(0, newest - 1, desc=True)
    failed = []
    for job in Job.fetch_many(ids, connection=client):
        if job is None:
            continue
        result = job.latest_result()
        trace = (result.exc_string if result else None) or ""
        failed.append(
            FailedJob(
                job.id,
                job.description or job.func_name or job.id,
                trace.strip().splitlines()[-1] if trace.strip() else "unknown",
                job.ended_at.isoformat() if job.ended_at else None,
            )
        )
    return registry.count, failed


def _scheduled_jobs(client: "redis.Redis", soonest: int = 5) -> tuple[int, list[ScheduledJob]]:
    registry = ScheduledJobRegistry(QUEUE, connection=client)  # type: ignore[no-untyped-call]
    ids = registry.get_job_ids(0, soonest - 1, cleanup=False)  # the soonest first
    waiting = []
    for job in Job.fetch_many(ids, connection=client):
        try:
            due = registry.get_scheduled_time(job.id) if job is not None else None
        except NoSuchJobError:  # queued meanwhile
            continue
        if job is not None and due is not None:
            waiting.append(ScheduledJob(job.id, job.description or job.func_name or job.id, due.isoformat()))
    return registry.get_job_count(cleanup=False), waiting


def _redis_write_error(client: "redis.Redis") -> str | None:
    """Why the server refuses writes, if it does (its disk is full)."""
    info: dict[str, Any] = client.info("persistence")
    if info.get("aof_enabled") and info.get("aof_last_write_status") == "err":
        return "the server cannot write its append-only file, and refuses events meanwhile"
    if info.get("rdb_last_bgsave_status") == "err":
        return "the server's last snapshot failed"
    return None


def _llm(settings: Settings) -> str:
    try:
        llm = llm_settings(settings)
    except BadSettings as e:
        return f"misconfigured, so off: {e}"
    if llm is None:
        return "off (deterministic extraction only)"
    where = llm.command if llm.provider == "claude-cli" else llm.base_url
    model = f" {llm.model}" if llm.model else ""
    return f"{llm.provider}{model} ({where}), at most {llm.daily_token_budget:,} tokens a day"


def _from_snapshot(
    settings: Settings, snapshot: "duckdb.DuckDBPyConnection | None"
) -> tuple[dict[str, Any], int]:
    """The view memory_health's one row, by column, and today's LLM tokens, as the last snapshot
    has them (empty before the first): through `snapshot`, a connection to it the caller holds,
    else one opened here (70 ms)."""
    if snapshot is not None:
        return _memory_health(snapshot), tokens_today(snapshot)
    try:
        db = sql.connect(settings, snapshot_required=True)
    except (sql.NoSnapshot, sql.DamagedSnapshot):
        return {}, 0
    try:
        return _memory_health(db), tokens_today(db)
    finally:
        db.close()


def _memory_health(db: "duckdb.DuckDBPyConnection") -> dict[str, Any]:
    cursor = db.execute("SELECT * FROM memory_health")
    row = cursor.fetchone()
    names = [d[0] for d in cursor.description]
    return dict(zip(names, row, strict=True)) if row else {}


def stack_status(settings: Settings, snapshot: "duckdb.DuckDBPyConnection | None" = None) -> StackStatus:
    """The stack's status, read from its files, its Redis and `snapshot` (a connection to the
    projections' last snapshot, if the caller holds one: the recall service does)."""
    event_log = EventLog(settings.event_log_dir)
    free, full = _disk(settings) or (None, False)
    health, tokens = _from_snapshot(settings, snapshot)
    local = StackStatus(
        disk_free=free,
        disk_full=full,
        redis_url=settings.redis_shown,  # its password hidden
        reachable=False,
        stack_pid=running_pid(settings),
        spooled=sum(len(spooled(d)) for d in settings.spool_dirs),
        dead_letters=count_dead_letters(settings.dead_letter_dir),
        archived=event_log.count(),  # first: it sets aside a segment whose footer does not read
        segments=len(event_log.segments()),
        quarantined=event_log.quarantined(),
        projections_published_at=_modified_at(_snapshot(settings)),
        vectors_published_at=_modified_at(_manifest(settings)),
        llm=_llm(settings),
        llm_tokens_today=tokens,
        memory_health=health,
    )
    client = connect(settings, timeout=1.0)
    try:
        length = client.xlen(STREAM)
        group = _group_info(client) if length or client.exists(STREAM) else {}
        beat_keys = list(client.scan_iter(HEARTBEAT_PREFIX + "*"))
        beats = (
            [msgspec.json.decode(v, type=Heartbeat) for v in client.mget(beat_keys) if v] if beat_keys else []
        )
        write_error = _redis_write_error(client)
        failed_count, failed = _failed_jobs(client)
        scheduled_count, waiting = _scheduled_jobs(client)
        under_way = StartedJobRegistry(QUEUE, connection=client).get_job_count(cleanup=False)
        scheduled = states(client)
        workers = [
            WorkerState(
                w.name, str(w.get_state()), w.last_heartbeat.isoformat() if w.last_heartbeat else None
            )
            for w in Worker.all(connection=client)
            if _may_live(w)
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
        redis_write_error=write_error,
        jobs_under_way=under_way,
        scheduled_jobs=scheduled_count,
        next_scheduled_jobs=waiting,
        failed_jobs=failed_count,
        newest_failed_jobs=failed,
        scheduled=scheduled,
    )
