"""`reverie worker`: an RQ worker on reverie's queue that rides out Redis going away, and
hands back what a worker killed outright left.

RQ's own loop quits when Redis is unreachable at start or is lost mid-way; the supervisor would
then restart the process after an ever longer pause (up to 30 s). This runs RQ's loop again
in process, once the server answers, until the worker is asked to stop (SIGINT or SIGTERM, which
RQ handles: a job under way finishes first), or until Redis has been away for GONE_AFTER_S:
gone for good, the worker exits (1), and whoever runs it (the supervisor, a container's
restart policy) starts another once it is back.

Extraction settles facts by their embeddings' cosine: a job asks the recall service, which
holds the stack's one copy of the model (workers/thinking/reading.py), so the worker loads no
model, and neither torch nor sentence-transformers.

RQ forks its scheduler (which the retries wait on) and a work horse per job: each dies with the
worker, so a worker killed outright leaves no process behind (Linux; elsewhere they end when
they next find the worker gone). What it leaves in Redis, its job under way and its
scheduler's lock, the next worker hands back as it starts, before it asks for that lock
(workers/abandoned.py), and every worker looks again at each maintenance (MAINTENANCE_S):
a job a killed worker held is tried again 5 s after its replacement starts (30 s if that was
its second try; killed on its third, it fails). So is one enqueued without a `Retry` (RQ's
cron scheduler gives none): a worker gives it the queue's tries as it starts it.
"""

import os
import socket
import threading
import time
from typing import Any

import redis
import structlog
from rq import Queue, Worker
from rq.job import Job

from schemas.settings import QUEUE, Settings
from workers.abandoned import give_tries, reclaim
from workers.lifeline import every_fork_dies_with_its_parent
from workers.redis_client import connect, is_up

log = structlog.get_logger("reverie.worker")
_PAUSE_S = 1.0  # between looks for a server that is away
GONE_AFTER_S = 60.0  # Redis away this long is gone for good: the worker exits
MAINTENANCE_S = 30  # RQ's registry cleaning and scheduler check, and the look for abandoned jobs
_TTL_S = MAINTENANCE_S + 15  # RQ blocks on the queue for this less 15 s: then maintenance is due


class RedisGone(Exception):
    """Redis has been away for longer than the worker waits."""


class Absence:
    """How long Redis has been away, as this process last found it."""

    def __init__(self, limit_s: float) -> None:
        self.limit_s = limit_s
        self.since: float | None = None

    def found(self, up: bool) -> None:
        if up:
            self.since = None
        elif self.since is None:
            self.since = time.monotonic()

    def for_good(self) -> bool:
        return self.since is not None and time.monotonic() - self.since > self.limit_s


class _Worker(Worker):
    """RQ's worker, which also tells `stopped` when it is asked to stop; hands back what
    workers killed outright left, as it starts (before it asks for the scheduler's lock) and
    at each maintenance; gives a job enqueued without tries the queue's, as it starts it; and
    leaves RQ's loop once Redis has been away for `absence`'s limit (RQ would try again
    forever)."""

    max_connection_wait_time = 5.0  # RQ's pause between looks for a lost Redis, at most
    stopped: threading.Event
    absence: Absence

    def request_stop(self, signum: Any, frame: Any) -> None:
        self.stopped.set()
        super().request_stop(signum, frame)  # type: ignore[no-untyped-call]

    def bootstrap(self, *args: Any, **kwargs: Any) -> None:
        super().bootstrap(*args, **kwargs)
        self._reclaim()  # before RQ asks for the scheduler's lock

    def run_maintenance_tasks(self) -> None:
        self._reclaim()
        super().run_maintenance_tasks()  # type: ignore[no-untyped-call]

    def execute_job(self, job: Job, queue: Queue) -> None:
        give_tries(job)  # before its work horse starts: whatever ends this try, others follow
        super().execute_job(job, queue)

    def heartbeat(self, *args: Any, **kwargs: Any) -> None:
        try:
            super().heartbeat(*args, **kwargs)
        except (redis.ConnectionError, redis.TimeoutError):
            self.absence.found(up=False)
            if self.absence.for_good():
                raise RedisGone(f"Redis has been away for over {self.absence.limit_s:.0f} s") from None
            raise
        self.absence.found(up=True)

    def _reclaim(self) -> None:
        for queue in self.queues:
            reclaim(queue)


def run_worker(settings: Settings, stop: threading.Event, gone_after_s: float = GONE_AFTER_S) -> int:
    """Work on the queue until `stop` is set (0), starting RQ's loop again whenever it quits
    while Redis is away, unless Redis has been away for `gone_after_s` (1)."""
    every_fork_dies_with_its_parent()
    absence = Absence(gone_after_s)
    rounds = 0
    while not stop.is_set():
        up = is_up(settings)
        absence.found(up)
        if absence.for_good():
            log.error("redis.gone", away_for_more_than_s=gone_after_s, url=settings.redis_shown)
            return 1
        if not up:
            log.warning("redis.unavailable", retry_in=_PAUSE_S)
            stop.wait(_PAUSE_S)
            continue
        client = connect(settings, timeout=None)  # RQ blocks on the queue for minutes
        rounds += 1
        # a worker that lost Redis may not have said it left: a new name each round
        name = f"{socket.gethostname()}.{os.getpid()}" + (f".{rounds}" if rounds > 1 else "")
        worker = _Worker(
            [Queue(QUEUE, connection=client)],
            connection=client,
            name=name,
            maintenance_interval=MAINTENANCE_S,
            worker_ttl=_TTL_S,
        )
        worker.stopped = stop
        worker.absence = absence
        try:
            worker.work(logging_level="INFO", with_scheduler=True)  # RQ's retries wait on it
        except (redis.RedisError, OSError, ValueError) as e:  # lost Redis while starting or stopping
            log.warning("worker.interrupted", error=str(e))
        if not stop.is_set():
            log.warning("worker.restarting", reason="RQ's loop quit while not asked to stop")
            stop.wait(_PAUSE_S)
    return 0
