"""When memory's dynamics run: RQ's own cron scheduler (`rq.cron.CronScheduler`) enqueues each
scheduled job on reverie's queue at its interval, and any worker runs it.

One scheduler process runs per stack (`reverie scheduler`, started by `reverie up`). Every job
runs every 6 hours, at its own minute past the hour (cron, local time), so a laptop that sleeps
at night still dreams during the day, and a stack that starts runs nothing until the first of
those minutes. HORA dreams at the same pace as its lifecycle: the dream cycle waits for 5
unconsolidated episodes anyway. Two schedulers (two stacks on one Redis) would enqueue each job
twice; the jobs emit the same events either way, which the dispatcher keeps once.

What `reverie status` shows of them (their last and next runs, the last error) is read from what
RQ keeps in Redis: the scheduler's registry and each job's history.
"""

import os
import socket
from collections.abc import Callable
from datetime import datetime

import msgspec
import redis
import structlog
from rq.cron import CronScheduler, get_cron_job_ids
from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus

from schemas.settings import QUEUE, Settings
from workers.dynamics import jobs
from workers.redis_client import connect

log = structlog.get_logger("reverie.scheduler")

HOUR_S = 3600


class Scheduled(msgspec.Struct, frozen=True):
    name: str
    job: Callable[[], dict[str, int]]
    cron: str  # when RQ's cron scheduler enqueues it
    timeout_s: int


SCHEDULE = [
    Scheduled("lifecycle", jobs.think_lifecycle, "0 */6 * * *", HOUR_S),
    Scheduled("dream", jobs.think_dream, "15 */6 * * *", 2 * HOUR_S),
    Scheduled("communities", jobs.think_communities, "30 */6 * * *", HOUR_S),
    Scheduled("decay", jobs.think_decay, "45 */6 * * *", HOUR_S),
]
NAMES = [s.name for s in SCHEDULE]


def cron_name(name: str) -> str:
    return f"reverie.{name}"


def scheduler(client: redis.Redis) -> CronScheduler:
    """RQ's cron scheduler with every job of SCHEDULE registered."""
    cron = CronScheduler(connection=client, name=f"reverie:{_host()}")
    for each in SCHEDULE:
        cron.register(each.job, QUEUE, cron=each.cron, job_timeout=each.timeout_s, name=cron_name(each.name))
    return cron


def _host() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def run_scheduler(settings: Settings) -> int:
    """Enqueue the scheduled jobs at their intervals until SIGINT or SIGTERM (RQ's loop, which
    handles them); 1 if Redis went away (the supervisor starts it again)."""
    try:
        scheduler(connect(settings, timeout=None)).start()  # type: ignore[no-untyped-call]
    except (redis.RedisError, OSError) as e:
        log.warning("scheduler.interrupted", error=str(e))
        return 1
    return 0


class JobState(msgspec.Struct, frozen=True):
    name: str
    cron: str
    last_run: datetime | None
    next_run: datetime | None
    last_status: str | None  # RQ's: queued, started, finished, failed...
    last_error: str | None


def states(client: redis.Redis) -> list[JobState]:
    """Each scheduled job's last and next runs and its last error, as RQ keeps them."""
    planned: dict[str, tuple[datetime | None, datetime | None]] = {}
    for cron in CronScheduler.all(client):
        for job in cron.get_jobs():
            planned[job.name] = (job.latest_enqueue_time, job.next_enqueue_time)
    found = []
    for each in SCHEDULE:
        last, upcoming = planned.get(cron_name(each.name), (None, None))
        status, error = _last_outcome(client, cron_name(each.name))
        found.append(JobState(each.name, each.cron, last, upcoming, status, error))
    return found


def _last_outcome(client: redis.Redis, name: str) -> tuple[str | None, str | None]:
    """The status of the newest job that ran under `name`, and the last error among the ones
    RQ still keeps."""
    status = error = None
    for job_id in get_cron_job_ids(name, client, 0, 9):
        try:
            job = Job.fetch(job_id, connection=client)
        except NoSuchJobError:
            continue
        state = job.get_status(refresh=False)
        status = status or (state.value if state is not None else None)
        if state == JobStatus.FAILED and error is None:
            info = job.exc_info or ""
            error = info.strip().splitlines()[-1] if info.strip() else "failed"
    return status, error
