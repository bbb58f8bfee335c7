"""When the scheduled thinking workers run: RQ's own cron scheduler (`rq.cron.CronScheduler`)
enqueues each follower of a `Schedule` (workers/thinking/registry.py) on reverie's queue, as the
runner's one job, and any worker runs it.

One scheduler process runs per stack (`reverie scheduler`, started by `reverie up`). The idle
sweep runs every 5 minutes; every other job every 6 hours (as registered), at its own minute
past the hour (cron, local time), so a laptop that sleeps at night still dreams during the day,
and a stack that starts runs nothing until the first of those minutes. HORA dreams at the same
pace as its lifecycle: the dream cycle waits for 5 unconsolidated episodes anyway. Two
schedulers (two stacks on one Redis) would enqueue each job twice; the jobs emit the same events
either way, which the dispatcher keeps once.

The same scheduler runs the runner's catch-up (`runner.retry_failed_job`, named CATCH_UP) every
hour: each derivation that failed every try is queued again. RQ's cron enqueues its jobs with no
`Retry`: a worker gives each the queue's tries as it starts it (workers/abandoned.py), so a
scheduled job that fails, or whose worker is killed, is tried again like any other.

What `reverie status` shows of them (their last and next runs, the last error) is read from what
RQ keeps in Redis: the scheduler's registry and each job's history.
"""

import os
import socket
from datetime import datetime

import redis
import structlog
from rq.cron import CronScheduler, get_cron_job_ids
from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus

from schemas.settings import QUEUE, Settings
from schemas.status import JobState
from workers.redis_client import connect
from workers.thinking import registry, runner

log = structlog.get_logger("reverie.scheduler")
CATCH_UP, CATCH_UP_CRON = "retry-failed", "50 * * * *"  # clear of the followers' minutes


def cron_name(name: str) -> str:
    return f"reverie.{name}"


def scheduler(client: redis.Redis) -> CronScheduler:
    """RQ's cron scheduler with every scheduled follower registered."""
    cron = CronScheduler(connection=client, name=f"reverie:{_host()}")
    for each, schedule in registry.scheduled():
        cron.register(
            runner.run,
            QUEUE,
            args=(each.name,),
            cron=schedule.cron,
            job_timeout=each.timeout_s,
            name=cron_name(each.name),
        )
    cron.register(runner.retry_failed_job, QUEUE, cron=CATCH_UP_CRON, name=cron_name(CATCH_UP))
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


def states(client: redis.Redis) -> list[JobState]:
    """Each scheduled job's last and next runs and its last error, as RQ keeps them: the
    followers', then the catch-up's."""
    planned: dict[str, tuple[datetime | None, datetime | None]] = {}
    for cron in CronScheduler.all(client):
        for job in cron.get_jobs():
            planned[job.name] = (job.latest_enqueue_time, job.next_enqueue_time)
    every = [(each.name, schedule.cron) for each, schedule in registry.scheduled()]
    found = []
    for name, at in [*every, (CATCH_UP, CATCH_UP_CRON)]:
        last, upcoming = planned.get(cron_name(name), (None, None))
        status, error = _last_outcome(client, cron_name(name))
        found.append(JobState(name, at, last, upcoming, status, error))
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
