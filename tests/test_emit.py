"""One `emit` for every producer but the hook: checked against the registry, redacted like the
hook's events, and for derived events an id that follows from the worker and the causes."""

import threading
from datetime import UTC, datetime
from typing import Any

import fakeredis
import msgspec
import pyarrow.parquet as pq
import pytest

from ingest.emit import Emitter, Rejected, Worker, encode
from ingest.spool import spooled
from projections.event_log import EventLog
from schemas import kinds, memory
from schemas.events import Event, decode_event, payload_of
from schemas.ids import id_time_ms, new_event_id
from schemas.observed import MemoryRetrieved, PromptSubmitted
from schemas.settings import STREAM, Settings
from workers.dispatcher import Dispatcher

EXTRACT = Worker("extract", 1)
CAUSES = [new_event_id(1_700_000_000_000 + i) for i in range(3)]


def derive(out: Emitter, causes: list[str] = CAUSES) -> list[str]:
    """What a deterministic worker emits from `causes`: an entity and two facts about it."""
    ids = [
        out.emit(
            kinds.ENTITY_OBSERVED,
            memory.EntityObserved(
                entity_id="e:duckdb", type="library", name="DuckDB", normalized_name="duckdb"
            ),
            project="/p",
            caused_by=causes[:1],
        )
    ]
    for n, statement in enumerate(["the project uses DuckDB", "DuckDB allows one writer"]):
        fact = memory.FactAsserted(fact_id=f"f{n}", source="e:duckdb", relation="uses", description=statement)
        ids.append(out.emit(kinds.FACT_ASSERTED, fact, project="/p", caused_by=causes))
    return ids


def stream_events(client: Any) -> list[Event]:
    return [decode_event(fields[b"e"]) for _, fields in client.xrange(STREAM)]


def test_a_worker_run_twice_or_twice_at_once_emits_the_same_ids_and_the_log_keeps_one(
    settings: Settings,
) -> None:
    client = fakeredis.FakeRedis()
    runs: list[list[str]] = []

    def run() -> None:
        with Emitter(client, kinds.SOURCE_WORKER, EXTRACT) as out:
            runs.append(derive(out))

    run()
    threads = [threading.Thread(target=run) for _ in range(2)]  # two workers at once
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert runs[0] == runs[1] == runs[2] and len(set(runs[0])) == 3
    assert client.xlen(STREAM) == 9

    dispatcher = Dispatcher(settings, client, consumer="test", block_ms=10)
    dispatcher.start()
    assert dispatcher.archive(dispatcher.read(">")) == 3
    log = EventLog(settings.event_log_dir)
    logged = [i for path in log.segments() for i in pq.read_table(path, columns=["id"])["id"].to_pylist()]
    assert sorted(logged) == sorted(runs[0])


def test_a_derived_id_follows_from_the_worker_its_version_the_causes_and_what_it_says() -> None:
    client = fakeredis.FakeRedis()
    base = derive(Emitter(client, kinds.SOURCE_WORKER, EXTRACT))
    assert derive(Emitter(client, kinds.SOURCE_WORKER, Worker("extract", 2))) != base
    assert derive(Emitter(client, kinds.SOURCE_WORKER, Worker("dream", 1))) != base
    assert derive(Emitter(client, kinds.SOURCE_WORKER, EXTRACT), CAUSES[::-1])[1:] == base[1:]  # a set
    assert derive(Emitter(client, kinds.SOURCE_WORKER, EXTRACT), CAUSES[:2])[1:] != base[1:]


def test_a_derived_event_happens_when_its_newest_cause_did() -> None:
    out = Emitter(fakeredis.FakeRedis(), kinds.SOURCE_WORKER, EXTRACT)
    [entity, *_] = derive(out)
    out.flush()
    newest = max(id_time_ms(c) for c in CAUSES[:1])
    assert id_time_ms(entity) == newest
    [event] = [e for e in stream_events(out.client) if e.id == entity]
    assert event.ts == datetime.fromtimestamp(newest / 1000, UTC)
    assert event.caused_by == tuple(CAUSES[:1]) and event.source == kinds.SOURCE_WORKER


def test_a_key_names_what_was_derived_whatever_its_wording() -> None:
    def fact(text: str) -> memory.FactAsserted:
        return memory.FactAsserted(fact_id="f", source="e", relation="uses", description=text)

    ids = [
        encode(
            kinds.FACT_ASSERTED,
            fact(text),
            project="/p",
            source="worker",
            caused_by=CAUSES,
            worker=EXTRACT,
            key="f",
        )[0]
        for text in ("uses DuckDB", "the project uses DuckDB")
    ]
    assert ids[0] == ids[1]


@pytest.mark.parametrize(
    ("kind", "payload", "extra", "reason"),
    [
        ("fact.invented", PromptSubmitted(prompt="hi"), {}, "unknown event kind 'fact.invented'"),
        (
            kinds.PROMPT_SUBMITTED,
            MemoryRetrieved(query="q"),
            {},
            "carries a PromptSubmitted, not a MemoryRetrieved",
        ),
        (
            kinds.PROMPT_SUBMITTED,
            {"prompt": 5},
            {},
            "prompt.submitted payload: Expected `str | null`, got `int`",
        ),
        (
            kinds.FACT_EXPIRED,
            {"fact_id": "f"},
            {"caused_by": CAUSES},
            "derived: its payload is a FactExpired",
        ),
        (
            kinds.FACT_EXPIRED,
            memory.FactExpired(fact_id="f"),
            {},
            "needs the worker and the events it came from",
        ),
        (kinds.FACT_EXPIRED, memory.FactExpired(fact_id="f"), {"caused_by": CAUSES}, "needs the worker"),
        (
            kinds.FACT_EXPIRED,
            memory.FactExpired(fact_id="f"),
            {"caused_by": CAUSES, "worker": EXTRACT, "event_id": new_event_id()},
            "its id follows from its worker and causes",
        ),
        (
            kinds.FACT_EXPIRED,
            memory.FactExpired(fact_id="f"),
            {"caused_by": ["not an id"], "worker": EXTRACT},
            "caused_by must hold event ids",
        ),
    ],
)
def test_what_cannot_be_an_event_is_refused_with_its_reason(
    kind: str, payload: Any, extra: dict[str, Any], reason: str
) -> None:
    with pytest.raises(Rejected, match=reason.replace("(", r"\(").replace("|", r"\|")):
        encode(kind, payload, project="/p", source="worker", **extra)


def test_an_emitted_event_is_redacted_and_keeps_what_was_observed() -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    _, data = encode(
        kinds.PROMPT_SUBMITTED,
        {"prompt": f"deploy with {token}", "added_by_a_newer_cli": {"x": 1}},
        project="/p",
        source=kinds.SOURCE_IMPORT,
        session_id="s1",
    )
    event = decode_event(data)
    assert token not in data.decode() and event.session_id == "s1"
    assert msgspec.json.decode(event.payload)["added_by_a_newer_cli"] == {"x": 1}
    assert isinstance(payload_of(event), PromptSubmitted)


def test_the_emitter_sends_a_batch_at_a_time_and_nothing_when_its_block_fails() -> None:
    client = fakeredis.FakeRedis()
    with Emitter(client, kinds.SOURCE_CLI, batch=2) as out:
        for n in range(3):
            out.emit(kinds.MEMORY_REMEMBERED, {"text": f"note {n}"}, project="/p")
        assert client.xlen(STREAM) == 2 and len(out.queued) == 1
    assert client.xlen(STREAM) == 3 and out.sent == 3

    with pytest.raises(RuntimeError), Emitter(client, kinds.SOURCE_CLI) as out:
        out.emit(kinds.MEMORY_REMEMBERED, {"text": "half done"}, project="/p")
        raise RuntimeError("the job failed: it runs again, and emits the same events then")
    assert client.xlen(STREAM) == 3


def test_what_redis_cannot_take_goes_to_the_spool_given_one_and_the_stack_delivers_it(
    settings: Settings,
) -> None:
    """As `reverie remember` and reflection do: nothing is lost, and the emitter says where it went."""
    server = fakeredis.FakeServer()
    server.connected = False
    down = fakeredis.FakeRedis(server=server)
    with Emitter(down, kinds.SOURCE_CLI, spool=settings, batch=2) as out:
        ids = [out.emit(kinds.MEMORY_REMEMBERED, {"text": f"note {n}"}, project="/p") for n in range(2)]
    with Emitter(down, kinds.SOURCE_CLI, EXTRACT, spool=settings) as derived:
        ids += derive(derived)  # a worker's derived events too
    assert (out.went_to, out.spooled, out.sent, derived.went_to) == ("spool", 2, 0, "spool")
    assert sorted(path.rsplit("/", 1)[1] for path in spooled(settings.spool_dir)) == sorted(
        f"{event_id}.json" for event_id in ids
    )
    with pytest.raises(Exception, match="onnection"), Emitter(down, kinds.SOURCE_CLI) as unspooled:
        unspooled.emit(kinds.MEMORY_REMEMBERED, {"text": "no spool: the error is the caller's"}, project="/p")

    server.connected = True
    dispatcher = Dispatcher(settings, down, consumer="test", block_ms=10)
    dispatcher.start()
    dispatcher.drain_spool()
    assert spooled(settings.spool_dir) == []
    assert dispatcher.archive(dispatcher.read(">")) == len(ids) == 5
    with Emitter(down, kinds.SOURCE_CLI, spool=settings) as up:
        up.emit(kinds.MEMORY_REMEMBERED, {"text": "the stack runs"}, project="/p")
    assert (up.went_to, up.sent, spooled(settings.spool_dir)) == ("stream", 1, [])
