"""RQ jobs, one per archived batch (RQ costs ~20 round trips a job: never one per event).

A job that fails is tried again after 5 s and 30 s; one that failed three times stays in RQ's
failed-job registry, which `reverie status` lists with its error. Jobs read the segments
where the dispatcher wrote them: every worker must share the stack's data directory.
"""

import os
from collections import Counter

import pyarrow as pa
import pyarrow.compute as pc
import redis
import structlog
from rq import Queue, Retry, get_current_job
from rq.job import Job

from ingest.emit import Emitter
from projections.event_log import EventLog, Quarantined, to_events
from schemas import kinds
from schemas.events import Event
from schemas.llm import LLMUsed
from schemas.settings import Settings
from workers.extraction import EXTRACTOR
from workers.extraction.derive import Derived, derive, derive_session
from workers.extraction.episodes import episodes
from workers.extraction.known import Memory
from workers.extraction.lifecycle import settle
from workers.extraction.llm.config import BadSettings, LLMSettings, llm_settings
from workers.extraction.llm.extractor import ask, memories
from workers.logs import quarantine_logger

log = structlog.get_logger("reverie.jobs")
RETRY_AFTER_S = [5, 30]


def enqueue_extraction(
    queue: Queue, segment: str, ids: list[str], retry_after_s: list[int] = RETRY_AFTER_S
) -> Job:
    """Have a worker extract what the events `ids`, archived in `segment`, teach (tried again
    after each of `retry_after_s`)."""
    return queue.enqueue(
        extract_batch,
        segment,
        ids,
        retry=retried(retry_after_s),
        description=f"extract {os.path.basename(segment)}",
    )


def extract_batch(
    segment: str, ids: list[str], client: "redis.Redis | None" = None, settings: Settings | None = None
) -> dict[str, int]:
    """Read the events `ids` of `segment` and emit what they teach, settled against what memory
    holds (the projections of `settings`, by default the environment's), to `client` (by
    default the job's own connection); how many derived events of each kind."""
    events = _events(segment, set(ids))
    emitted: Counter[str] = Counter()
    known = Memory(settings or Settings.from_env())
    with known, Emitter(client or job_connection(), kinds.SOURCE_WORKER, EXTRACTOR) as out:
        for found in settle(derive(events), known.facts, known.cosine):
            emit_derived(out, found)
            emitted[found.kind] += 1
    log.info("batch.extracted", segment=os.path.basename(segment), events=len(events), emitted=dict(emitted))
    return dict(emitted)


def enqueue_episode(
    queue: Queue, event_log_dir: str, session_id: str, retry_after_s: list[int] = RETRY_AFTER_S
) -> Job:
    """Have a worker draw the episode of a finished session from the log in `event_log_dir`."""
    return queue.enqueue(
        extract_session,
        event_log_dir,
        session_id,
        retry=retried(retry_after_s),
        description=f"episode of session {session_id}",
    )


def extract_session(
    event_log_dir: str, session_id: str, client: "redis.Redis | None" = None, settings: Settings | None = None
) -> dict[str, int]:
    """Read every event of a session from the log and emit its episode and what its commands
    teach, and, when an LLM is configured, what the model reads in it (its episode then, unless
    it fell back), all settled against the projections of `settings` (by default the
    environment's); how many events of each kind. A session whose events are not archived yet
    fails, and is tried again."""
    events = session_events(event_log_dir, session_id)
    if not events:
        raise LookupError(f"no event of session {session_id} is in the log yet")
    emitted: Counter[str] = Counter()
    settings = settings or Settings.from_env()
    known = Memory(settings)
    with known, Emitter(client or job_connection(), kinds.SOURCE_WORKER, EXTRACTOR) as out:
        found: list[Derived] = []
        if (llm := _llm(settings)) is not None:
            asked = ask(llm, events, known.tokens_today())
            found.append(_spent(asked.used, events))
            if asked.extracted is not None:
                found += memories(asked.extracted, events)
        if not any(f.kind == kinds.EPISODE_RECORDED for f in found):  # no LLM, or it fell back
            found += [
                Derived(kinds.EPISODE_RECORDED, e, p, c, session_id, e.episode_id)
                for e, p, c in episodes(events)
            ]
        found += derive_session(events)
        for each in settle(found, known.facts, known.cosine):
            emit_derived(out, each)
            emitted[each.kind] += 1
    log.info("session.extracted", session=session_id, events=len(events), emitted=dict(emitted))
    return dict(emitted)


def _llm(settings: Settings) -> LLMSettings | None:
    try:
        return llm_settings(settings)
    except BadSettings as e:
        log.warning("llm.misconfigured", error=str(e), using="the deterministic extractor")
        return None


def _spent(used: LLMUsed, events: list[Event]) -> Derived:
    ordered = sorted(events, key=lambda e: (e.ts, e.id))
    first, last = ordered[0], ordered[-1]
    causes = tuple(sorted({first.id, last.id}))
    key = f"{first.session_id}:{used.provider}:{used.model}"
    return Derived(kinds.LLM_USED, used, first.project, causes, first.session_id, key)


def emit_derived(out: Emitter, found: Derived) -> str:
    """Queue `found` on `out`; its event's id."""
    return out.emit(
        found.kind,
        found.payload,
        project=found.project,
        session_id=found.session_id,
        caused_by=found.caused_by,
        key=found.key,
    )


def session_events(event_log_dir: str, session_id: str) -> list[Event]:
    """Every event of a session, from the segments that hold some (their session ids first)."""
    event_log = EventLog(event_log_dir, quarantine_logger(log))
    found: list[Event] = []
    for path in event_log.segments():
        ids = event_log.read(path, ["session_id"])
        if ids is None or not pc.any(pc.equal(ids.column("session_id"), session_id)).as_py():
            continue
        if (table := event_log.read(path)) is not None:
            found += to_events(table.filter(pc.equal(table.column("session_id"), session_id)))
    return found


def retried(after_s: list[int]) -> Retry:
    return Retry(max=len(after_s), interval=after_s)


def job_connection() -> "redis.Redis":
    job = get_current_job()
    if job is None:
        raise RuntimeError("not in an RQ job: give the Redis client to emit to")
    return job.connection


def _events(segment: str, ids: set[str]) -> list[Event]:
    """The events `ids` from `segment`, or from the whole log if a compaction merged it away.

    A segment damaged since it was written is set aside, and what it still holds is read."""
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
