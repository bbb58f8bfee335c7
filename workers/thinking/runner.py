"""The one RQ job every thinking worker runs as: `run(name, cause)`.

It loads the events the follower follows (a batch's, from the segment the dispatcher wrote; a
session's, from the whole log), opens a `Reading`, calls the follower's `derive`, and emits what
it derives through one `Emitter` under the follower's worker, so ids follow from the worker and
the causes; it counts and logs what it emitted. `dispatch` is how the dispatcher hands it a
batch: one job per follower of batches, and one per follower of session ends and per session
the batch ends (a `session.ended`, or a `session.idled`: workers/dynamics/idle.py).
A follower of requests is never queued: `ask` runs it where it was asked, emits what it derives
to the stream (or the spool while the stack is down), and gives back its answer.

A job that fails (or whose worker was killed under it) is tried again after 5 s and 30 s: the
dispatcher's and `reverie think`'s are enqueued with that `Retry`, the scheduler's (RQ's cron
gives none) are given it as a worker starts them (workers/abandoned.py). One that failed three
times stays in RQ's failed-job registry, which `reverie status` lists with its error, until the
runner's catch-up (`retry_failed`: hourly, by the scheduler, or `reverie think --retry-failed`)
queues it again: a derivation is never dropped. Jobs read the segments where the dispatcher
wrote them: every worker must share the stack's data directory.
"""

import os
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

import msgspec
import redis
import structlog
from rq import Queue, Retry, get_current_job
from rq.exceptions import InvalidJobOperation
from rq.job import Job
from rq.registry import FailedJobRegistry

from ingest.emit import Emitter
from schemas.events import Event
from schemas.kinds import SESSION_ENDED, SESSION_IDLED, SESSION_STARTED, SOURCE_WORKER
from schemas.registry import WORK_KINDS
from schemas.settings import Settings
from schemas.status import Quarantined
from workers.abandoned import RETRY_AFTER_S as RETRY_AFTER_S  # the queue's, for every job
from workers.logs import quarantine_logger
from workers.thinking.follower import Batches, Derived, Follower, SessionEnds
from workers.thinking.reading import Reading
from workers.thinking.registry import named, registered
from workers.transcripts import TURN_ENDS

log = structlog.get_logger("reverie.thinking")
# what ends a session for its followers: it said so, or it went idle (workers/dynamics/idle.py)
_ENDING = (SESSION_ENDED, SESSION_IDLED)


class Segment(msgspec.Struct, frozen=True):
    """A batch: the events `ids` the dispatcher archived in the segment `path`."""

    path: str
    ids: list[str]


class Session(msgspec.Struct, frozen=True):
    """A session that ended (or went idle): all its events, read from the log."""

    session_id: str


Cause = Segment | Session | None


def run(
    name: str,
    cause: Cause = None,
    client: "redis.Redis | None" = None,
    settings: Settings | None = None,
    at: datetime | None = None,
) -> dict[str, int]:
    """Run the follower `name` on `cause` (none for a scheduled one), at `at` (by default now),
    emitting to `client` (by default the job's own connection) what it derives from the data of
    `settings` (by default the environment's); how many events of each kind."""
    follower = named(name)
    settings = settings or Settings.from_env()
    events = _events(cause, settings)
    with (
        Reading(settings, follower.worker, events, at or datetime.now(UTC)) as reading,
        Emitter(client or _job_connection(), SOURCE_WORKER, follower.worker) as out,
    ):
        emitted = _emitted(out, follower.deriving()(reading))
    log.info(f"{name}.ran", cause=_said(cause), events=len(events), emitted=emitted)
    return emitted


def ask(
    name: str, request: msgspec.Struct, settings: Settings, source: str, client: "redis.Redis | None" = None
) -> tuple[msgspec.Struct | None, dict[str, int]]:
    """Run the follower of requests `name` on `request`, here, for an asker (`source`: the command
    line, the MCP server); its answer, and how many events of each kind it emitted, to `client`
    (by default the settings' Redis), or to the spool while Redis cannot take them."""
    from workers.redis_client import connect  # here: the followers of batches never ask

    follower = named(name)
    with (
        Reading(settings, follower.worker, [], datetime.now(UTC), request) as reading,
        Emitter(client or connect(settings, timeout=2.0), source, follower.worker, spool=settings) as out,
    ):
        emitted = _emitted(out, follower.deriving()(reading))
    return reading.answer, emitted  # logged by no one: the asker's stdout may be its protocol


def _emitted(out: Emitter, derived: Iterable[Derived]) -> dict[str, int]:
    """Queue each derived event on `out`; how many of each kind."""
    emitted: Counter[str] = Counter()
    for each in derived:
        out.emit(each.kind, each.payload, **each.placed())
        emitted[each.kind] += 1
    return dict(emitted)


def enqueue(
    queue: Queue,
    follower: Follower,
    cause: Cause = None,
    retry_after_s: Sequence[int] = RETRY_AFTER_S,
    description: str | None = None,
) -> Job:
    """Have a worker run `follower` on `cause` (tried again after each of `retry_after_s`), the
    job described as `description` (by default, the follower and its cause)."""
    return queue.enqueue(
        run,
        follower.name,
        cause,
        retry=Retry(max=len(retry_after_s), interval=list(retry_after_s)),
        job_timeout=follower.timeout_s,
        description=description or f"{follower.name} of {_said(cause)}",
    )


def retry_failed(queue: Queue) -> list[Job]:
    """Queue again each derivation (a `run` job) that failed every try, as RQ's failed-job
    registry keeps it: it emits the same events however often it runs, so running it again is
    safe. The jobs queued again (each once, however many ask at once); one that fails again
    is back in the registry, for the next catch-up. Two round trips to Redis a job."""
    registry = FailedJobRegistry(queue.name, connection=queue.connection)
    queued = []
    for job in Job.fetch_many(registry.get_job_ids(), connection=queue.connection):
        if job is None or job.func_name != f"{run.__module__}.{run.__name__}":
            continue
        try:
            queued.append(registry.requeue(job))
        except InvalidJobOperation:  # another catch-up queued it first
            continue
    if queued:
        log.info("failed.retried", jobs=[job.description for job in queued])
    return queued


def retry_failed_job() -> int:
    """The runner's catch-up, which the scheduler queues hourly: `retry_failed` on the queue it
    runs from; how many it queued again."""
    job = get_current_job()
    if job is None:
        raise RuntimeError("not in an RQ job")
    return len(retry_failed(Queue(job.origin, connection=job.connection)))


def dispatch(queue: Queue, segment: str, events: Sequence[tuple[str, str, str | None]]) -> None:
    """What the dispatcher does with a batch it archived in `segment` (each event's id, kind and
    session): a job for each follower of batches, over the events of the work in it (a batch of
    recalls alone teaches nothing), and one for each follower of session ends and each session
    it ends or says went idle; for the turns it ends, one reading what was said before their last
    words (workers/transcripts.py); and, for the sessions it starts, one importing Claude Code's own
    memory files where they began (workers/claude_memory.py: both read files, not the log)."""
    observed = [event_id for event_id, kind, _ in events if kind in WORK_KINDS]
    ended = sorted({session for _, kind, session in events if kind in _ENDING and session})
    for follower in registered():
        match follower.follows:
            case Batches() if observed:
                enqueue(queue, follower, Segment(segment, observed))
            case SessionEnds():
                for session_id in ended:
                    enqueue(queue, follower, Session(session_id))
    if turn_ends := [event_id for event_id, kind, _ in events if kind in TURN_ENDS]:
        queue.enqueue(
            "workers.transcripts.said_in",
            segment,
            turn_ends,
            retry=Retry(max=len(RETRY_AFTER_S), interval=RETRY_AFTER_S),
            description=f"what was said mid-turn before {len(turn_ends)} turn ends",
        )
    if started := sorted({session for _, kind, session in events if kind == SESSION_STARTED and session}):
        queue.enqueue(
            "workers.claude_memory.at_session_start",
            started,
            retry=Retry(max=len(RETRY_AFTER_S), interval=RETRY_AFTER_S),
            description=f"claude-memory of {len(started)} sessions started",
        )


def session_events(event_log_dir: str, session_id: str) -> list[Event]:
    """Every event of a session, from the segments that hold some (their session ids first)."""
    import pyarrow.compute as pc  # here, as in batch_events: the dispatcher and the scheduler enqueue

    # jobs without ever reading a segment, and Arrow is a third of their memory
    from projections.event_log import EventLog, to_events

    event_log = EventLog(event_log_dir, quarantine_logger(log))
    found: list[Event] = []
    for path in event_log.segments():
        ids = event_log.read(path, ["session_id"])
        if ids is None or not pc.any(pc.equal(ids.column("session_id"), session_id)).as_py():
            continue
        if (table := event_log.read(path)) is not None:
            found += to_events(table.filter(pc.equal(table.column("session_id"), session_id)))
    return found


def _events(cause: Cause, settings: Settings) -> list[Event]:
    match cause:
        case Segment(path, ids):
            return batch_events(path, set(ids))
        case Session(session_id):
            events = session_events(settings.event_log_dir, session_id)
            if not events:  # archived later than it was dispatched: the retry finds them
                raise LookupError(f"no event of session {session_id} is in the log yet")
            return events
        case None:
            return []


def batch_events(segment: str, ids: set[str]) -> list[Event]:
    """The events `ids` from `segment`, or from the whole log if a compaction merged it away.

    A segment damaged since it was written is set aside, and what it still holds is read."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from projections.event_log import EventLog, to_events

    set_aside: list[Quarantined] = []
    warn = quarantine_logger(log)

    def note(quarantined: Quarantined) -> None:
        set_aside.append(quarantined)
        warn(quarantined)

    event_log = EventLog(os.path.dirname(segment), note)
    table = event_log.read(segment)
    if table is None and not set_aside:  # merged into a larger segment meanwhile
        tables = [t for path in event_log.segments() if (t := event_log.read(path)) is not None]
        table = pa.concat_tables(tables) if tables else None
        if table is None or not pc.any(pc.is_in(table.column("id"), pa.array(sorted(ids)))).as_py():
            raise FileNotFoundError(
                f"neither {segment} nor its events are here: "
                "every worker must share the stack's data directory"
            )
    if table is None:
        return []
    return to_events(table.filter(pc.is_in(table.column("id"), pa.array(sorted(ids)))))


def _job_connection() -> "redis.Redis":
    job = get_current_job()
    if job is None:
        raise RuntimeError("not in an RQ job: give the Redis client to emit to")
    return job.connection


def _said(cause: Cause) -> str:
    match cause:
        case Segment(path, ids):
            return f"{len(ids)} events of {os.path.basename(path)}"
        case Session(session_id):
            return f"session {session_id}"
        case None:
            return "the schedule"
