"""The dispatcher's rules against fakeredis: archive once, dead-letter the invalid, drain the spool."""

import json
import os
import threading
from collections.abc import Callable

import fakeredis
import pytest
import redis

from ingest import emit
from ingest.emit import append
from ingest.spool import NotOnDisk, spool_event, spooled
from projections.event_log import EventLog
from schemas.events import decode_event
from schemas.kinds import SCHEMA_VERSION
from schemas.settings import GROUP, STREAM, Settings
from tests.support.events import event
from workers import dispatcher as dispatching
from workers.dispatcher import Dispatcher
from workers.thinking import runner

Command = tuple[bytes | str, ...]


@pytest.fixture
def client() -> fakeredis.FakeRedis:
    return fakeredis.FakeRedis()


@pytest.fixture
def dispatcher(settings: Settings, client: fakeredis.FakeRedis) -> Dispatcher:
    d = Dispatcher(settings, client, consumer="test", block_ms=10)
    d.start()
    return d


def archived_ids(settings: Settings) -> list[str]:
    import pyarrow.parquet as pq

    return [
        i for p in EventLog(settings.event_log_dir).segments() for i in pq.read_table(p)["id"].to_pylist()
    ]


def test_a_batch_becomes_one_segment_and_leaves_the_stream(
    dispatcher: Dispatcher, client: fakeredis.FakeRedis, settings: Settings
) -> None:
    ids, datas = zip(*[event(f"p{i}") for i in range(50)], strict=True)
    append(client, datas)
    assert dispatcher.archive(dispatcher.read(">")) == 50
    assert sorted(archived_ids(settings)) == sorted(ids)
    assert len(EventLog(settings.event_log_dir).segments()) == 1
    assert client.xlen(STREAM) == 0
    assert client.xpending(STREAM, GROUP)["pending"] == 0
    assert len(client.lrange("rq:queue:reverie", 0, -1)) == 1  # one job for the batch, not fifty


def test_an_event_delivered_twice_is_archived_once(
    dispatcher: Dispatcher, client: fakeredis.FakeRedis, settings: Settings
) -> None:
    event_id, data = event("twice")
    append(client, [data, data])
    dispatcher.archive(dispatcher.read(">"))
    append(client, [data])
    dispatcher.archive(dispatcher.read(">"))
    assert archived_ids(settings) == [event_id]
    assert client.xlen(STREAM) == 0


def test_a_restarted_dispatcher_knows_what_the_log_holds(
    client: fakeredis.FakeRedis, settings: Settings
) -> None:
    event_id, data = event("once")
    first = Dispatcher(settings, client, consumer="a", block_ms=10)
    first.start()
    append(client, [data])
    first.archive(first.read(">"))
    first.close()
    second = Dispatcher(settings, client, consumer="a", block_ms=10)
    second.start()
    append(client, [data])
    assert second.archive(second.read(">")) == 0
    assert archived_ids(settings) == [event_id]


def test_entries_read_but_not_acknowledged_are_archived_after_a_restart(
    client: fakeredis.FakeRedis, settings: Settings
) -> None:
    crashed = Dispatcher(settings, client, consumer="a", block_ms=10)
    crashed.start()
    ids, datas = zip(*[event(f"p{i}") for i in range(5)], strict=True)
    append(client, datas)
    crashed.read(">")  # ... and dies before archiving
    crashed.close()
    restarted = Dispatcher(settings, client, consumer="a", block_ms=10)
    restarted.start()
    restarted.recover_pending()
    assert sorted(archived_ids(settings)) == sorted(ids)
    assert client.xpending(STREAM, GROUP)["pending"] == 0


def test_stale_entries_of_a_dead_consumer_are_claimed(
    client: fakeredis.FakeRedis, settings: Settings
) -> None:
    dead = Dispatcher(settings, client, consumer="dead", block_ms=10)
    dead.start()
    ids, datas = zip(*[event(f"p{i}") for i in range(3)], strict=True)
    append(client, datas)
    dead.read(">")
    dead.close()
    alive = Dispatcher(settings, client, consumer="alive", block_ms=10, claim_idle_ms=0)
    alive.start()
    alive.claim_stale()
    assert sorted(archived_ids(settings)) == sorted(ids)


def test_invalid_events_become_dead_letters_and_do_not_block_the_batch(
    dispatcher: Dispatcher, client: fakeredis.FakeRedis, settings: Settings
) -> None:
    good_id, good = event("good")
    client.xadd(STREAM, {"e": b"{not json"})
    client.xadd(STREAM, {"e": json.dumps({"id": "x", "kind": "tool.used"}).encode()})
    bad_types = json.loads(event("typed")[1])
    bad_types["payload"]["prompt"] = 42
    client.xadd(STREAM, {"e": json.dumps(bad_types).encode()})
    client.xadd(STREAM, {"other": b"field"})
    append(client, [good])
    assert dispatcher.archive(dispatcher.read(">")) == 1
    assert archived_ids(settings) == [good_id]
    letters = [
        json.load(open(os.path.join(settings.dead_letter_dir, n)))
        for n in os.listdir(settings.dead_letter_dir)
    ]
    assert len(letters) == 4
    assert {letter["stage"] for letter in letters} == {"dispatcher"}
    assert any("prompt" in letter["reason"] for letter in letters)
    assert client.xlen(STREAM) == 0


def test_the_spool_is_drained_into_the_stream_once(
    dispatcher: Dispatcher, client: fakeredis.FakeRedis, settings: Settings
) -> None:
    ids = []
    for i in range(7):
        event_id, data = event(f"spooled {i}")
        spool_event(settings, event_id, data)
        ids.append(event_id)
    dispatcher.drain_spool()
    assert spooled(settings.spool_dir) == []
    dispatcher.archive(dispatcher.read(">"))
    assert sorted(archived_ids(settings)) == sorted(ids)


@pytest.mark.parametrize(("synced", "kept"), [([1, 0], 0), ([0, 0], 1)])
def test_a_spooled_event_is_deleted_once_the_servers_append_only_file_has_it(
    dispatcher: Dispatcher,
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
    synced: list[int],
    kept: int,
) -> None:
    """WAITAOF's answer: written (the file goes), or not within its second (kept for the next
    round; a server without an append-only file, as fakeredis, refuses WAITAOF: see above)."""
    sent: list[str] = []

    def pipelined(client: fakeredis.FakeRedis) -> Callable[[list[Command]], list[object]]:
        real = emit.pipelined(client)

        def send(commands: list[Command]) -> list[object]:
            sent.extend(str(command[0]) for command in commands)
            return [synced] if commands[0][0] == "WAITAOF" else real(commands)

        return send

    monkeypatch.setattr(dispatching, "pipelined", pipelined)
    spool_event(settings, *event("kept until it is on disk"))
    if kept:
        with pytest.raises(NotOnDisk):
            dispatcher.drain_spool()
    else:
        dispatcher.drain_spool()
    assert (sent, len(spooled(settings.spool_dir))) == (["XADD", "WAITAOF"], kept)


def test_run_stops_when_asked(
    dispatcher: Dispatcher, client: fakeredis.FakeRedis, settings: Settings
) -> None:
    stop = threading.Event()
    _, data = event("x")
    append(client, [data])
    thread = threading.Thread(target=dispatcher.run, args=(stop,))
    thread.start()
    try:
        from tests.support.processes import wait_for

        wait_for(lambda: archived_ids(settings), timeout=10, what="the event to be archived")
        assert client.get("reverie:dispatcher:test") is not None  # heartbeat
    finally:
        stop.set()
        thread.join(10)
    assert not thread.is_alive()


def test_one_dispatcher_per_event_log(
    dispatcher: Dispatcher, client: fakeredis.FakeRedis, settings: Settings
) -> None:
    from schemas.disk.files import Busy

    with pytest.raises(Busy, match="another process is archiving"):
        Dispatcher(settings, client, consumer="other").start()
    dispatcher.close()
    Dispatcher(settings, client, consumer="other").start()


def test_entries_that_break_anything_are_dead_lettered_whole(
    dispatcher: Dispatcher, client: fakeredis.FakeRedis, settings: Settings
) -> None:
    good_id, good = event("good")
    bad_utf8 = event("x")[1].replace(b'"x"', b'"\\"\xff\xfe"')
    big_version = event("v")[1].replace(b'"v":%d' % SCHEMA_VERSION, b'"v":70000')
    null_prompt = json.loads(event("n")[1])
    null_prompt["payload"]["prompt"] = None
    for data in (bad_utf8, big_version):
        client.xadd(STREAM, {"e": data})
    append(client, [json.dumps(null_prompt).encode(), good])
    assert dispatcher.archive(dispatcher.read(">")) == 2  # a null prompt is tolerated
    assert good_id in archived_ids(settings)
    letters = [
        json.load(open(os.path.join(settings.dead_letter_dir, n)))
        for n in os.listdir(settings.dead_letter_dir)
    ]
    assert len(letters) == 2
    assert {letter["body"] is not None for letter in letters} == {True}  # kept whole, to replay
    assert any('"v":70000' in letter["body"] for letter in letters)


def test_a_hook_that_died_mid_spool_is_delivered_once_its_file_is_old(
    dispatcher: Dispatcher, client: fakeredis.FakeRedis, settings: Settings
) -> None:
    event_id, data = event("half spooled")
    os.makedirs(settings.spool_dir)
    temp = os.path.join(settings.spool_dir, f".{event_id}.json.4242.tmp")
    with open(temp, "wb") as f:
        f.write(data)
    dispatcher.drain_spool()
    assert os.path.exists(temp)  # young: the hook may still be writing it
    os.utime(temp, (0, 0))
    dispatcher.drain_spool()
    assert not os.path.exists(temp)
    dispatcher.archive(dispatcher.read(">"))
    assert archived_ids(settings) == [event_id]


def test_a_batch_gathers_what_follows_its_first_event_unless_it_is_full(
    dispatcher: Dispatcher, client: fakeredis.FakeRedis
) -> None:
    """A prompt's event and the recall it sets off make one batch: what comes while the batch
    waits (GATHER_S) is read with it; a full batch, or one read as the dispatcher stops, waits
    for nothing more."""
    waited: list[float | None] = []

    class Meanwhile(threading.Event):
        def __init__(self, *later: bytes, stopping: bool = False) -> None:
            super().__init__()
            self.later, self.stopping = later, stopping

        def wait(self, timeout: float | None = None) -> bool:
            waited.append(timeout)
            append(client, self.later)
            return self.stopping

    (first_id, first), (then_id, then) = event("prompt"), event("recall")
    append(client, [first])
    gathered = dispatcher.gather(Meanwhile(then))
    assert [json.loads((fields or {})[b"e"])["id"] for _, fields in gathered] == [first_id, then_id]
    assert waited == [dispatching.GATHER_S]
    dispatcher.archive(gathered)
    append(client, [event("late")[1]])
    assert len(dispatcher.gather(Meanwhile(event("stopped")[1], stopping=True))) == 1
    dispatcher.batch_size = 2
    append(client, [event("a")[1], event("b")[1]])
    assert len(dispatcher.gather(Meanwhile())) == 2 and len(waited) == 2


def queued_jobs(client: fakeredis.FakeRedis) -> int:
    return len(client.lrange("rq:queue:reverie", 0, -1))


def refusing_jobs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Have the server refuse to queue jobs, as one whose disk is full refuses writes."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise redis.ResponseError("MISCONF Errors writing to the AOF file: No space left on device")

    monkeypatch.setattr(runner, "dispatch", refuse)


def test_a_batch_whose_jobs_the_server_refuses_stays_owed_and_pending_until_they_are_queued(
    dispatcher: Dispatcher, client: fakeredis.FakeRedis, settings: Settings
) -> None:
    ids, datas = zip(*[event(f"owed{i}") for i in range(3)], strict=True)
    append(client, datas)
    with pytest.MonkeyPatch.context() as patched:
        refusing_jobs(patched)
        with pytest.raises(redis.ResponseError, match="MISCONF"):
            dispatcher.archive(dispatcher.read(">"))
    assert sorted(archived_ids(settings)) == sorted(ids)  # in the log
    assert queued_jobs(client) == 0 and client.xpending(STREAM, GROUP)["pending"] == 3
    assert len(os.listdir(dispatcher.owed_dir)) == 1  # and owed, on disk
    dispatcher.upkeep()  # the server takes writes again: the next round queues what is owed
    assert queued_jobs(client) == 1 and client.xpending(STREAM, GROUP)["pending"] == 0
    assert os.listdir(dispatcher.owed_dir) == [] and dispatcher.owed == {}
    assert sorted(archived_ids(settings)) == sorted(ids)  # once


def test_a_dispatcher_killed_while_jobs_are_owed_queues_them_when_it_starts_again(
    client: fakeredis.FakeRedis, settings: Settings
) -> None:
    first = Dispatcher(settings, client, consumer="first", block_ms=10)
    first.start()
    append(client, [event("a")[1]])
    first.archive(first.read(">"))  # an older batch, queued
    append(client, [event("b")[1]])
    with pytest.MonkeyPatch.context() as patched:
        refusing_jobs(patched)
        with pytest.raises(redis.ResponseError):
            first.archive(first.read(">"))
    first.close()  # killed: its memory gone, its record on disk
    client.delete("rq:queue:reverie")
    EventLog(settings.event_log_dir).append([decode_event(event("newest")[1])])  # then a crash
    second = Dispatcher(settings, client, consumer="second", block_ms=10)
    second.start()
    assert queued_jobs(client) == 2  # the owed batch, and the newest segment's
    assert os.listdir(second.owed_dir) == []
