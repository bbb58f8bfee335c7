"""`reverie think`: run the scheduled thinking workers on demand (workers/thinking/registry.py).

By default each job goes on the queue, as the scheduler would put it, and this waits for a
worker to run it, through its tries: one that fails, or whose worker dies under it, is tried
again after 5 s and 30 s, and this says so and waits; only a job that failed every try fails
the command, with why. `--now` runs it in this process (it needs no worker, only the stack's
Redis to emit to). Either way it derives the events the schedule would, with the same ids.
`--retry-failed` queues again every derivation that failed every try, as the scheduler's hourly
catch-up does, and waits for a worker to run each.
"""

import time
from collections.abc import Callable
from functools import partial

import redis
from rich.progress import Progress, TaskID
from rq import Queue
from rq.exceptions import AbandonedJobError
from rq.job import Job, JobStatus
from rq.results import Result

from reverie.console import fail, out, progress_bar
from schemas.settings import QUEUE, Settings
from workers.redis_client import connect, is_up
from workers.thinking.follower import Follower
from workers.thinking.registry import scheduled

_RESTART_S = 30  # the longest the supervisor waits to start a dead worker again
_STATES = {  # what a job of `think` is doing, by its status
    JobStatus.QUEUED: "waiting for a worker",
    JobStatus.STARTED: "running",
    JobStatus.SCHEDULED: "to be tried again shortly",
}


def think(name: str, here: bool) -> int:
    settings = Settings.from_env()
    if not is_up(settings):
        return fail(f"no Redis answers at {settings.redis_shown}: start the stack with `reverie up --detach`")
    client = connect(settings, timeout=None)
    chosen = [follower for follower, _ in scheduled() if name in ("all", follower.name)]
    with progress_bar() as progress:
        for each in chosen:
            task = progress.add_task(f"{each.name}: {'running' if here else 'waiting for a worker'}", total=1)
            say = partial(_say, progress, task, each.name)
            try:
                emitted = _here(client, settings, each) if here else _on_a_worker(client, each, say)
            except _Failed as e:
                say("failed")
                return fail(f"{each.name} failed on a worker: {e}")
            progress.update(task, completed=1, description=f"{each.name}: {_said(emitted)}")
    out.print("done: what the jobs derived reaches the projections once the dispatcher archives it")
    return 0


class _Failed(Exception):
    pass


def _say(progress: Progress, task: TaskID, name: str, state: str) -> None:
    progress.update(task, description=f"{name}: {state}")


def _here(client: redis.Redis, settings: Settings, follower: Follower) -> dict[str, int]:
    from workers.thinking.runner import run  # here: it imports what the followers need

    return run(follower.name, client=client, settings=settings)


def _on_a_worker(client: redis.Redis, follower: Follower, say: Callable[[str], None]) -> dict[str, int]:
    """What `follower` emitted on a worker, once a try of it finished; _Failed if none did."""
    from workers.thinking.runner import RETRY_AFTER_S, enqueue

    queue = Queue(QUEUE, connection=client)
    job = enqueue(queue, follower, description=f"{follower.name} (reverie think)")
    tries = 1 + len(RETRY_AFTER_S)
    # each try within its time limit, and the supervisor's restart of a worker that died under it
    patience = tries * ((job.timeout or 180) + _RESTART_S) + sum(RETRY_AFTER_S)
    outcome = _ended(job, time.monotonic() + patience, say)
    if outcome == "not run":
        raise _Failed(f"not done within {patience} s: is `reverie up` running?")
    result = job.latest_result()
    if outcome == "failed":
        raise _Failed(f"{_why(result)}, on the last of its {tries} tries")
    if outcome != "finished":
        raise _Failed(outcome)  # stopped or canceled, by hand
    emitted: dict[str, int] = (result.return_value if result else None) or {}
    return emitted


def _why(result: Result | None) -> str:
    said = (result.exc_string if result else None) or "unknown error"
    if AbandonedJobError.__name__ in said:
        return "its worker died under it (killed, or out of memory)"
    return said.strip().splitlines()[-1]


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
        plural = "s" if len(queued) > 1 else ""
        task = progress.add_task(
            f"{len(queued)} failed derivation{plural}: waiting for a worker", total=len(queued)
        )
        for job in queued:
            outcome = _ended(job, deadline)
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
            progress.update(task, advance=1, description=f"{job.description}: {outcome}")
    said = f"{len(queued)} failed derivation{plural} queued again: " + ", ".join(
        f"{n} {outcome}" for outcome, n in sorted(outcomes.items())
    )
    if set(outcomes) != {"finished"}:
        return fail(f"{said}; see `reverie status`")
    out.print(said)
    return 0


def _ended(job: Job, deadline: float, say: Callable[[str], None] | None = None) -> str:
    """How `job` ended (finished, failed, stopped or canceled: a job to be tried again has not
    ended), or "not run" by `deadline`; what it is doing meanwhile told to `say`."""
    said = None
    while time.monotonic() < deadline:
        status = job.get_status(refresh=True)
        if status is None:  # finished, and its record expired already
            return "finished"
        if status in (JobStatus.FINISHED, JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED):
            return str(status.value)
        if say is not None and status != said and status in _STATES:
            say(_STATES[status])
            said = status
        time.sleep(0.2)
    return "not run"
