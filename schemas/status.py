"""What `reverie status` reports, as the recall service answers it and the command prints it:
the stream, the spool, the log, who is alive, the jobs, memory's health. Asked of the running
stack (its recall service has everything loaded), a status costs the command no import of
Redis's, RQ's, DuckDB's or Arrow's; computed by workers/status.py."""

from datetime import datetime
from typing import Any

import msgspec


class Quarantined(msgspec.Struct, frozen=True):
    """The note beside a file set aside in `quarantine/`: what it was, why, what was kept."""

    segment: str  # its name in the log
    moved_to: str  # where the file is now, as it was found
    reason: str  # why it could not be read
    at: str  # when it was set aside (UTC)
    rows: int | None  # the events its footer says it held (None: no readable footer)
    salvaged: int  # the rows that read whole, put back in the log under its name
    lost: int | None  # the rows that did not (None: unknown)
    lost_ids: list[str]  # their ids, where the ids still read


class Heartbeat(msgspec.Struct, frozen=True):
    consumer: str
    pid: int
    host: str
    archived: int
    at: float


class JobState(msgspec.Struct, frozen=True):
    name: str
    cron: str
    last_run: datetime | None
    next_run: datetime | None
    last_status: str | None  # RQ's: queued, started, finished, failed...
    last_error: str | None


class WorkerState(msgspec.Struct, frozen=True):
    name: str
    state: str
    last_heartbeat: str | None


class FailedJob(msgspec.Struct, frozen=True):
    """A job that failed every try, as RQ's failed-job registry keeps it."""

    id: str
    description: str
    error: str  # the last line of its traceback
    failed_at: str | None


class ScheduledJob(msgspec.Struct, frozen=True):
    """A job waiting for its time, as RQ's scheduled-job registry keeps it: a retry, after
    the pause that follows a failed try (or a try whose worker was killed)."""

    id: str
    description: str
    due_at: str  # when the scheduler queues it


class ImportProgress(msgspec.Struct, frozen=True):
    """How far a `reverie import` has got (reverie/background_import.py keeps it in a file)."""

    pid: int
    started_at: float
    updated_at: float
    transcripts: int  # to read
    done: int = 0  # read
    events: int = 0  # found in them
    sent: int = 0  # of those, new to the log
    finished_at: float | None = None


class StackStatus(msgspec.Struct, frozen=True, kw_only=True):
    """What Redis keeps (the stream, the dispatchers' heartbeats, the workers, the jobs) is
    unknown (None, or an empty list) while it is not `reachable`."""

    redis_url: str
    reachable: bool
    stack_pid: int | None
    stream_length: int | None = None
    pending: int | None = None  # None, reachable: no dispatcher has made its consumer group yet
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
    jobs_under_way: int | None = None  # on a worker now (or on one killed, until a worker hands it back)
    scheduled_jobs: int | None = None  # waiting for their time: retries
    next_scheduled_jobs: list[ScheduledJob] = []  # the soonest few
    failed_jobs: int | None = None
    newest_failed_jobs: list[FailedJob] = []  # the newest few, with their errors
    disk_free: int | None = None  # bytes free for the data directory
    disk_full: bool = False  # too little to write a segment, a snapshot, a spooled event
    redis_write_error: str | None = None  # the server cannot write its append-only file
    llm: str = "off"  # the LLM extractor: off, its provider, model and budget, or what is wrong
    llm_tokens_today: int = 0  # LLM tokens spent today (UTC), as the last snapshot counts them
    scheduled: list[JobState] = []  # memory's scheduled jobs: last and next runs, last error
    memory_health: dict[str, Any] = {}  # the view memory_health, as the last snapshot has it
    # "answering" (it said all this), else why not: not running, or loading its model and memories
    recall_service: str = "not running"
    # the stack's MCP server over HTTP: where it listens, and whether it does (`reverie status`
    # asks: the recall service does not know it)
    mcp_server: str = "not running"
    # the dashboard: the URL to open (it carries the token), and whether it listens (`reverie
    # status` asks, as for the MCP server)
    dashboard: str = "not running"
    # the last `reverie import`'s progress (`reverie status` reads it: the import may run on a
    # host whose data directory the stack's service does not see)
    transcript_import: ImportProgress | None = None
