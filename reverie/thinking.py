"""`reverie think`: run the scheduled thinking workers on demand (workers/thinking/registry.py).

By default each job goes on the queue, as the scheduler would put it, and this waits for a
worker to run it; `--now` runs it in this process (it needs no worker, only the stack's
Redis to emit to). Either way it derives the events the schedule would, with the same ids.
`--retry-failed` queues again every derivation that failed every try, as the scheduler's hourly
catch-up does, and waits for a worker to run each.
"""

import time

import redis
from rq import Queue
from rq.job import Job, JobStatus
from rq.results import Result

from reverie.console import fail, out, progress_bar
from schemas.settings import QUEUE, Settings
from workers.redis_client import connect, is_up
from workers.thinking.follower import Follower
from workers.thinking.registry import scheduled


def think(name: str, here: bool) -> int:
    settings = Settings.from_env()
    if not is_up(settings):
        return fail(f"no Redis answers at {settings.redis_shown}: start the stack with `reverie up --detach`")
    client = connect(settings, timeout=None)
    chosen = [follower for follower, _ in scheduled() if name in ("all", follower.name)]
    with progress_bar() as progress:
        for each in chosen:
            task = progress.add_task(f"{each.name}: {'running' if here else 'waiting for a worker'}", total=1)
            try:
                emitted = _here(client, settings, each) if here else _on_a_worker(client, each)
            except _Failed as e:
                progress.update(task, description=f"{each.name}: failed")
                return fail(f"{each.name} failed on a worker: {e}")
            progress.update(task, completed=1, description=f"{each.name}: {_said(emitted)}")
    out.print("done: what the jobs derived reaches the projections once the dispatcher archives it")
    return 0


class _Failed(Exception):
    pass


def _here(client: redis.Redis, settings: Settings, follower: Follower) -> dict[str, int]:
    from workers.thinking.runner import run  # here: it imports what the followers need

    return run(follower.name, client=client, settings=settings)


def _on_a_worker(client: redis.Redis, follower: Follower) -> dict[str, int]:
    from workers.thinking.runner import run

    job = Queue(QUEUE, connection=client).enqueue(
        run, follower.name, job_timeout=follower.timeout_s, description=f"{follower.name} (reverie think)"
    )
    result = job.latest_result(timeout=follower.timeout_s or 180)
    if result is None:
        raise _Failed(f"no worker ran it within {follower.timeout_s} s: is `reverie up` running?")
    if result.type != Result.Type.SUCCESSFUL:
        raise _Failed((result.exc_string or "unknown error").strip().splitlines()[-1])
    emitted: dict[str, int] = result.return_value or {}
    return emitted


def _said(emitted: dict[str, int]) -> str:
    return ", ".join(f"{n} {kind}" for kind, n in sorted(emitted.items())) or "nothing to derive"


def retry_failed() -> int:
    """Queue again each derivation that failed every try and wait for the workers to run them
    all (within the sum of their time limits); 1 if one failed again or was not run."""
    from workers.thinking.runner import retry_failed as queue_again

    settings = Settings.from_env()
    if not is_up(settings):
        return fail(f"no Redis answers at {settings.redis_shown}: start the stack with `reverie up --detach`")
    queued = queue_again(Queue(QUEUE, connection=connect(settings, timeout=None)))
    if not queued:
        out.print("no derivation failed every try: nothing to retry")
        return 0
    deadline = time.monotonic() + sum(job.timeout or 180 for job in queued)
    outcomes: dict[str, int] = {}
    with progress_bar() as progress:
        task = progress.add_task(f"{len(queued)} failed derivations: waiting for a worker", total=len(queued))
        for job in queued:
            outcome = _ended(job, deadline)
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
            progress.update(task, advance=1, description=f"{job.description}: {outcome}")
    said = f"{len(queued)} failed derivation{'s' if len(queued) > 1 else ''} queued again: " + ", ".join(
        f"{n} {outcome}" for outcome, n in sorted(outcomes.items())
    )
    if set(outcomes) != {"finished"}:
        return fail(f"{said}; see `reverie status`")
    out.print(said)
    return 0


def _ended(job: Job, deadline: float) -> str:
    """How `job` ended (finished or failed), or "not run" by `deadline`."""
    while time.monotonic() < deadline:
        status = job.get_status(refresh=True)
        if status is None:  # finished, and its record expired already
            return "finished"
        if status in (JobStatus.FINISHED, JobStatus.FAILED):
            return str(status.value)
        time.sleep(0.2)
    return "not run"
