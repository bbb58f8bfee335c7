"""What an RQ worker killed outright left behind, handed back at once: its job, and the lock
of the scheduler it forked.

A worker killed outright (SIGKILL, the OOM killer, its stack killed) cannot say it left. RQ
keeps its job "started" until the job's heartbeat runs out (about 90 s) and a worker's
maintenance next looks (every 10 minutes by default), and the lock its scheduler held on the
queue for 61 s: a worker started meanwhile runs no scheduler, and no retry moves. So a job
stayed stuck for a quarter of an hour, and a `reverie down` and `up` ran it in seconds.

A worker whose record is gone (it sent no heartbeat for its time to live) or says it died, or
one of this machine whose process is gone, is gone for good; so is a scheduler of this
machine whose process is gone. `reclaim` hands their jobs to RQ's own path for abandoned
ones, now: a job with a try left is tried again after its pause, one without goes to the
failed-job registry (which `reverie status` lists and the runner's catch-up retries), and frees
the lock of a scheduler gone for good, for the next worker that asks.

RQ tries a job again (an abandoned one, or one that raised, or whose work horse was killed)
only if it was enqueued with a `Retry`, and RQ's cron scheduler gives its jobs none: a
scheduled job whose worker was killed failed at once, for the hourly catch-up. Every job on
reverie's queue emits the same events however often it runs, so each is tried three times: one
enqueued without tries is given the queue's (`give_tries`) as a worker starts it
(workers/queue_worker.py), before anything can end its first.
"""

import json
import os
import socket
import time

import redis
import structlog
from rq import Queue
from rq.job import Job
from rq.registry import StartedJobRegistry
from rq.scheduler import SCHEDULER_KEY_TEMPLATE, RQScheduler
from rq.scripts import release_lock
from rq.worker import Worker

from workers.pids import ended

log = structlog.get_logger("reverie.worker")

RETRY_AFTER_S = [5, 30]  # a job on reverie's queue is tried again after these pauses

_RECLAIMING = "reverie:reclaiming:{}"  # held while one worker reclaims: a job is retried once
_RECLAIMING_S = 30
_DELETE_IF_MINE = (
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"
)


def reclaim(queue: Queue) -> list[str]:
    """Hand back what workers and schedulers gone for good held on `queue` (see the module's
    docstring); the ids of the jobs handed back. A few round trips to Redis per job under way;
    nothing while another worker is at it."""
    client = queue.connection
    lock = _RECLAIMING.format(queue.name)
    mine = f"{socket.gethostname()}:{os.getpid()}:{time.monotonic_ns()}"
    if not client.set(lock, mine, nx=True, ex=_RECLAIMING_S):
        return []
    try:
        _free_scheduler_lock(client, queue.name)
        return _hand_back(queue)
    finally:  # ours only: past its 30 s, it may be another worker's now
        client.eval(_DELETE_IF_MINE, 1, lock, mine)


def _hand_back(queue: Queue) -> list[str]:
    """Have RQ clean up, as abandoned, every job under way whose worker is gone for good."""
    registry = StartedJobRegistry(queue.name, connection=queue.connection)
    entries = registry.get_job_and_execution_ids(cleanup=False)
    jobs = Job.fetch_many([job_id for job_id, _ in entries], connection=queue.connection)
    found = []
    for (job_id, execution_id), job in zip(entries, jobs, strict=True):
        if job is None or not job.worker_name or not _worker_gone(queue.connection, job.worker_name):
            continue
        # as if its heartbeat had run out: RQ's cleanup takes it from there, its way
        queue.connection.zadd(registry.key, {f"{job_id}:{execution_id}": 0}, xx=True)
        found.append(job_id)
    if found:
        log.warning("jobs.abandoned", jobs=found, handed_back="tried again, or failed if no try is left")
        registry.cleanup()
    return found


def give_tries(job: Job) -> None:
    """Have `job`, if it was enqueued without a `Retry`, tried again after each of RETRY_AFTER_S
    as if it had been: here, and in the two fields RQ keeps them in (whoever hands it back
    reads it again)."""
    if job.retries_left is not None:
        return
    job.retries_left, job.retry_intervals = len(RETRY_AFTER_S), list(RETRY_AFTER_S)
    job.connection.hset(
        job.key, mapping={"retries_left": len(RETRY_AFTER_S), "retry_intervals": json.dumps(RETRY_AFTER_S)}
    )


def _worker_gone(client: redis.Redis, name: str) -> bool:
    key = Worker.redis_worker_namespace_prefix + name
    hostname, pid, death = (_text(v) for v in client.hmget(key, "hostname", "pid", "death"))
    if hostname is None or death is not None:
        return True
    return _gone(hostname, pid)


def _free_scheduler_lock(client: redis.Redis, queue_name: str) -> None:
    """Free the queue's scheduler lock if its holder is a scheduler of this machine whose
    process is gone (one not yet registered, or of another machine, keeps it: it runs out)."""
    key = RQScheduler.get_locking_key(queue_name)
    name = _text(client.get(key))
    if name is None:
        return
    hostname, pid = (_text(v) for v in client.hmget(SCHEDULER_KEY_TEMPLATE % name, "hostname", "pid"))
    if hostname is not None and _gone(hostname, pid) and release_lock(client, key, name):
        log.warning("scheduler.lock_freed", queue=queue_name, held_by=name, reason="its process is gone")


def _gone(hostname: str, pid: str | None) -> bool:
    """Whether the process `pid` of `hostname` is gone (a zombie is): known only of this
    machine's."""
    if hostname != socket.gethostname() or not pid or not pid.isdigit() or not int(pid):
        return False
    try:
        return ended(int(pid))
    except PermissionError:  # another user's process
        return False


def _text(value: bytes | str | None) -> str | None:
    return value.decode() if isinstance(value, bytes) else value
