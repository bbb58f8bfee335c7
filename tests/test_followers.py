"""The thinking workers are followers in one registry: a new one is a module and an entry, and
the dispatcher, the scheduler, `reverie think` and the runner all know it; what a follower
derives does not depend on how the log was cut into batches."""

from collections.abc import Iterator
from datetime import UTC, datetime

import fakeredis
import msgspec
import pytest
from rq import Queue

from ingest.emit import Worker, append
from projections.event_log import EventLog
from reverie.testing import make_event, streamed
from schemas import kinds, memory
from schemas.events import Event
from schemas.ids import new_event_id
from schemas.settings import QUEUE, STREAM, Settings
from workers.dispatcher import Dispatcher
from workers.thinking import registry, runner, schedule
from workers.thinking.follower import Derived, Follower, Schedule, SessionEnds
from workers.thinking.reading import Reading

NOW = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
NOTES = Follower(
    "notes", Worker("notes", 1), SessionEnds(), f"{__name__}:notes", "a note of each session's prompts"
)
TICKS = Follower("ticks", Worker("ticks", 1), Schedule("50 */6 * * *"), f"{__name__}:ticks", "a tick")


def notes(reading: Reading) -> Iterator[Derived]:
    """The new follower: an entity for each prompt of the session that ended."""
    for event in reading.events:
        if event.kind == kinds.PROMPT_SUBMITTED:
            note = memory.EntityObserved(
                entity_id=f"note:{event.id}", type="concept", name="a prompt", normalized_name="a prompt"
            )
            yield Derived(kinds.ENTITY_OBSERVED, note, event.project, (event.id,), event.session_id)


def ticks(reading: Reading) -> Iterator[Derived]:
    [(sessions,)] = reading.snapshot.execute("SELECT count(*) FROM sessions").fetchall()
    assert sessions == 0 and not reading.events
    return iter(())


@pytest.fixture
def added(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "FOLLOWERS", [*registry.FOLLOWERS, NOTES, TICKS])


def event(kind: str, payload: dict[str, object], session: str = "s1") -> Event:
    return make_event(
        kind,
        payload,
        id=new_event_id(),
        ts=NOW,
        recorded_at=NOW,
        project="/p",
        source="test",
        session_id=session,
    )


def test_a_new_follower_is_dispatched_scheduled_listed_and_run(added: None, settings: Settings) -> None:
    client = fakeredis.FakeRedis()
    dispatcher = Dispatcher(settings, client, consumer="test", block_ms=10)
    dispatcher.start()
    prompt = event(kinds.PROMPT_SUBMITTED, {"prompt": "use uv"})
    ended = event(kinds.SESSION_ENDED, {"reason": "logout"})
    append(client, [msgspec.json.encode(prompt), msgspec.json.encode(ended)])
    dispatcher.archive(dispatcher.read(">"))

    jobs = [job.args for job in Queue(QUEUE, connection=client).jobs]
    assert ("notes", runner.Session("s1")) in jobs  # dispatched: the session it ends
    assert "ticks" not in [name for name, *_ in jobs]
    planned = {state.name: state.cron for state in schedule.states(client)}
    assert planned["ticks"] == "50 */6 * * *"  # scheduled, as status lists it
    assert [f.name for f, _ in registry.scheduled()][-1] == "ticks"  # `reverie think` lists these

    client.delete(STREAM)
    assert runner.run("notes", runner.Session("s1"), client, settings) == {kinds.ENTITY_OBSERVED: 1}
    [derived] = streamed(client)
    assert derived.caused_by == (prompt.id,) and derived.source == kinds.SOURCE_WORKER
    assert runner.run("ticks", client=client, settings=settings) == {}


def test_an_unknown_follower_is_named_with_those_there_are() -> None:
    with pytest.raises(LookupError, match="no thinking worker is called 'nope': extract, episodes"):
        runner.run("nope", client=fakeredis.FakeRedis())


def test_what_a_batch_teaches_has_the_same_ids_however_the_log_was_cut(settings: Settings) -> None:
    def read(path: str) -> Event:
        return event(kinds.TOOL_USED, {"tool_name": "Read", "tool_input": {"file_path": path}})

    events = [read("/p/src/a.py"), read("/p/src/b.py"), read("/p/src/a.py"), read("/p/src/c.py")]
    cuts: list[set[str]] = []
    for sizes in ([4], [1, 3], [2, 1, 1]):
        log = EventLog(str(settings.event_log_dir) + f"-{len(sizes)}")
        client, start = fakeredis.FakeRedis(), 0
        for size in sizes:
            batch = events[start : start + size]
            runner.run("extract", runner.Segment(log.append(batch), [e.id for e in batch]), client, settings)
            start += size
        cuts.append({e.id for e in streamed(client)})
    assert len(cuts[0]) == 4 and cuts[0] == cuts[1] == cuts[2]


def test_every_follower_derives_with_a_function_that_exists() -> None:
    for follower in registry.FOLLOWERS:
        assert callable(follower.deriving()), follower.name
    names = [f.name for f in registry.FOLLOWERS]
    assert len(names) == len(set(names))
