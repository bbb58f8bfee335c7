"""The dispatcher: from the stream into the durable event log, in batches; nothing lost, nothing twice.

Each round it drains the spool into the stream, reads a batch through the consumer group (what
comes, and what follows it within GATHER_S), validates every event (what does not validate
becomes a dead letter), appends the new ones to the log as one segment, queues the thinking
workers' jobs for the batch (workers/thinking/runner.py), and only then acknowledges and
deletes the entries. Killed at any instant, it starts again from the entries still pending:
those already in the log are recognised by event id and only acknowledged.

A batch's jobs are owed from the moment its segment is written until they are queued: a server
refusing writes (its disk full: MISCONF) must not lose them. The batch is kept in memory and, on
disk, as a small record beside the log (`events/dispatching/`, written after the segment, removed
once the jobs are queued); every round and every upkeep queues what is owed first, and a
dispatcher starting (after a crash, a kill, a full disk) queues every batch a record names, and
the newest segment's (a crash may have come between its write and its record). A job queued twice
derives the same events, kept once.
"""

import contextlib
import os
import socket
import threading
import time
from collections.abc import Sequence
from typing import Any, TextIO

import msgspec
import redis
import structlog
from rq import Queue

from ingest.dead_letters import write_dead_letter
from ingest.emit import pipelined
from ingest.spool import NotOnDisk, append_durably, drain
from projections.event_log import EventLog
from schemas.disk.files import write_durably
from schemas.events import Event, InvalidEvent, decode_event
from schemas.ids import derived_event_id
from schemas.settings import GROUP, QUEUE, STREAM, Settings
from schemas.status import Heartbeat
from workers.logs import quarantine_logger
from workers.thinking import runner

log = structlog.get_logger("reverie.dispatcher")

Entry = tuple[bytes, dict[bytes, bytes] | None]
HEARTBEAT_PREFIX = "reverie:dispatcher:"
OWED_DIR = "dispatching"  # in the event log's folder: the batches whose jobs are not queued yet
Batch = list[tuple[str, str, str | None]]  # each event's id, kind and session
_MIN_PAUSE_S, _MAX_PAUSE_S = 0.5, 5.0  # between tries while Redis or the disk is away
# How long a batch that is not full waits for what follows its first event. A prompt's event and
# the recall it sets off (the recall service's memory.retrieved, some 40 ms later) go in one
# segment, folded, embedded and thought over once; and the stack starts on the prompt once its
# recall has answered, not while it runs (at 100k memories on 2 cores, the hook's p50 was 15 ms
# longer when the stack took the event at once).
GATHER_S = 0.2


def ensure_group(client: "redis.Redis") -> None:
    try:
        client.xgroup_create(STREAM, GROUP, id="0", mkstream=True)
    except redis.ResponseError as e:
        if "BUSYGROUP" not in str(e):
            raise


class Dispatcher:
    def __init__(
        self,
        settings: Settings,
        client: "redis.Redis",
        consumer: str | None = None,
        batch_size: int = 5000,
        block_ms: int = 500,
        claim_idle_ms: int = 60_000,
        gather_s: float = GATHER_S,
    ) -> None:
        self.settings = settings
        self.redis = client
        self.consumer = consumer or socket.gethostname()
        self.batch_size = batch_size
        self.block_ms = block_ms
        self.claim_idle_ms = claim_idle_ms
        self.gather_s = gather_s
        self.event_log = EventLog(settings.event_log_dir, quarantine_logger(log))
        self.queue = Queue(QUEUE, connection=client)
        self.archived: set[str] = set()
        self.archived_count = 0
        self.owed: dict[str, Batch] = {}  # by segment: batches archived whose jobs are not queued
        self.owed_dir = os.path.join(settings.event_log_dir, OWED_DIR)
        self._lock: TextIO | None = None

    def start(self) -> None:
        """Lock the log, create the group if needed, clear interrupted writes, learn what the log holds."""
        self._lock = self._lock or self.event_log.lock()
        ensure_group(self.redis)
        if removed := self.event_log.recover():
            log.warning("segment.interrupted_write_removed", count=removed)
        self.archived = self.event_log.archived_ids()
        self._owe_what_was_left()
        self.dispatch_owed()
        log.info("dispatcher.started", consumer=self.consumer, archived=len(self.archived))

    def run(self, stop: threading.Event) -> None:
        """Archive until `stop` is set; ride out Redis going away and coming back, and a disk
        that cannot take a segment: what was read stays pending in Redis, and is archived
        again once the disk or the server is back."""
        started = False
        next_upkeep = 0.0
        pause = _MIN_PAUSE_S
        while not stop.is_set():
            try:
                if not started:
                    self.start()
                    started = True
                if time.monotonic() >= next_upkeep:
                    self.upkeep()
                    next_upkeep = time.monotonic() + 5
                self.drain_spool()
                self.archive(self.gather(stop))
                pause = _MIN_PAUSE_S
                continue
            except (redis.ConnectionError, redis.TimeoutError, NotOnDisk) as e:
                log.warning("redis.unavailable", error=str(e), retry_in=pause)
            except redis.ResponseError as e:
                # NOGROUP: the server lost its data, start again; MISCONF: its disk is full
                log.warning("redis.refused", error=str(e), retry_in=pause)
            except OSError as e:  # no space left for the segment, the spool, a dead letter
                log.warning("disk.write_failed", error=str(e), retry_in=pause)
            next_upkeep = 0.0  # then read again what is pending
            stop.wait(pause)
            pause = min(pause * 2, _MAX_PAUSE_S)
        self.close()
        log.info("dispatcher.stopped", archived=self.archived_count)

    def close(self) -> None:
        """Let another dispatcher take the log."""
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def upkeep(self) -> None:
        """Every few seconds: finish what was left pending, merge small segments, say we live."""
        ensure_group(self.redis)  # a server that lost its data comes back without the group
        self.dispatch_owed()
        self.recover_pending()
        self.claim_stale()
        if merged := self.event_log.compact():
            log.info("segments.compacted", segment=os.path.basename(merged))
        self.beat()

    def gather(self, stop: threading.Event) -> list[Entry]:
        """The next batch: what comes within `block_ms`, and, if that fills no batch, what
        follows it within `gather_s` (unless `stop` is set meanwhile)."""
        entries = self.read(">", self.block_ms)
        if entries and len(entries) < self.batch_size and not stop.wait(self.gather_s):
            entries += self.read(">", count=self.batch_size - len(entries))
        return entries

    def read(self, start: str, block_ms: int | None = None, count: int | None = None) -> list[Entry]:
        reply: Any = self.redis.xreadgroup(
            GROUP, self.consumer, {STREAM: start}, count=count or self.batch_size, block=block_ms
        )
        return list(reply[0][1]) if reply else []

    def recover_pending(self) -> None:
        """Archive what this consumer had read but not acknowledged when it last stopped."""
        while entries := self.read("0"):
            self.archive(entries)

    def claim_stale(self) -> None:
        """Take over entries another consumer read and left unacknowledged for too long."""
        start = "0-0"
        while True:
            reply: Any = self.redis.xautoclaim(
                STREAM, GROUP, self.consumer, self.claim_idle_ms, start_id=start, count=self.batch_size
            )
            start, entries = reply[0], reply[1]
            if entries:
                log.warning("pending.claimed", count=len(entries))
                self.archive(entries)
            if start in (b"0-0", "0-0"):
                return

    def drain_spool(self) -> None:
        for spool_dir in self.settings.spool_dirs:
            if count := drain(spool_dir, self._append_durably):
                log.info("spool.drained", events=count, spool=spool_dir)

    def _append_durably(self, batch: Sequence[bytes]) -> None:
        """Append to the stream and wait until the server's append-only file has it on disk:
        the spool files are deleted next (NotOnDisk keeps them for the next round)."""
        if not append_durably(pipelined(self.redis), batch, redis.ResponseError):
            log.warning("spool.drained_without_fsync", reason="the server keeps no append-only file")

    def _decode(self, entry_id: bytes, fields: dict[bytes, bytes] | None) -> Event | None:
        if fields is None:  # deleted from the stream after it was read: archived already
            return None
        data = fields.get(b"e", b"")
        try:
            return decode_event(data)
        except Exception as e:  # one bad entry must never stop the stream behind it
            reason = str(e) if isinstance(e, InvalidEvent) else f"{type(e).__name__}: {e}"
            entry = entry_id.decode()
            letter = derived_event_id(int(entry.partition("-")[0]), STREAM, entry)
            write_dead_letter(
                self.settings.dead_letter_dir, "dispatcher", reason, data, letter_id=letter, whole=True
            )
            log.warning("event.dead_lettered", entry=entry, reason=reason)
            return None

    def archive(self, entries: list[Entry]) -> int:
        """Append the new events among `entries` to the log, queue their jobs (and any owed
        before), then acknowledge them all. If the jobs cannot be queued, the batch stays owed
        and the entries pending (raised): a later round queues them."""
        if not entries:
            return 0
        fresh: dict[str, Event] = {}
        for entry_id, fields in entries:
            event = self._decode(entry_id, fields)
            if event is not None and event.id not in self.archived:
                fresh[event.id] = event
        if fresh:
            path = self.event_log.append(list(fresh.values()))
            self.archived.update(fresh)
            self.archived_count += len(fresh)
            self._owe(path, [(e.id, e.kind, e.session_id) for e in fresh.values()])
        self.dispatch_owed()
        ids = [entry_id for entry_id, _ in entries]
        pipe = self.redis.pipeline(transaction=False)
        pipe.xack(STREAM, GROUP, *ids)
        pipe.xdel(STREAM, *ids)
        pipe.execute()
        if fresh:
            log.info(
                "batch.archived", events=len(fresh), entries=len(entries), segment=os.path.basename(path)
            )
        return len(fresh)

    def beat(self) -> None:
        beat = Heartbeat(self.consumer, os.getpid(), socket.gethostname(), self.archived_count, time.time())
        self.redis.set(HEARTBEAT_PREFIX + self.consumer, msgspec.json.encode(beat), ex=15)

    def _owe(self, segment: str, batch: Batch) -> None:
        """Keep `segment`'s batch owed until its jobs are queued: in memory, and on disk unless the
        disk is full (then a crash before they are queued leaves it to the newest segment's
        dispatch at the next start, and to the jobs' own catch-up)."""
        self.owed[segment] = batch
        record = msgspec.json.encode({"segment": segment, "batch": batch})
        try:
            write_durably(self.owed_dir, os.path.basename(segment) + ".json", record)
        except OSError as e:
            log.warning("batch.owed_in_memory_only", segment=os.path.basename(segment), error=str(e))

    def dispatch_owed(self) -> None:
        """Queue the jobs of every batch owed, oldest first; Redis errors are raised (what is not
        queued stays owed)."""
        for segment in sorted(self.owed):
            runner.dispatch(self.queue, segment, self.owed[segment])
            del self.owed[segment]
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(self.owed_dir, os.path.basename(segment) + ".json"))

    def _owe_what_was_left(self) -> None:
        """What a dispatcher before this one archived and did not queue: the batches its records
        name, and the newest segment's (a crash may have come between its write and its record)."""
        for name in sorted(os.listdir(self.owed_dir)) if os.path.isdir(self.owed_dir) else []:
            try:
                with open(os.path.join(self.owed_dir, name), "rb") as f:
                    said = msgspec.json.decode(f.read(), type=_Owed)
            except (OSError, msgspec.DecodeError) as e:
                log.warning("batch.owed_record_unreadable", record=name, error=str(e))
                continue
            self.owed[said.segment] = said.batch
        segments = self.event_log.segments()
        if not segments or segments[-1] in self.owed:
            return
        columns = ["id", "kind", "session_id"]  # not the payloads: the jobs read those
        if (newest := self.event_log.read(segments[-1], columns)) is not None:
            self.owed[segments[-1]] = list(zip(*(newest.column(c).to_pylist() for c in columns), strict=True))


class _Owed(msgspec.Struct, frozen=True):
    """A batch's record in OWED_DIR."""

    segment: str
    batch: Batch
