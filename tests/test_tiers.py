"""The lifecycle job: what recurs across 3 sessions becomes long-term, idle sessions are
archived, and what is not used stays recallable (decay orders memories, it hides none); a
duplicate is forgotten (hidden, never deleted, found as of before); run twice, it emits the same
events."""

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import fakeredis
import msgspec
import pytest

from projections.sql import connect
from reverie.testing import Folding, event_at, streamed
from schemas import kinds, memory
from schemas.events import Event
from schemas.settings import Settings
from workers.thinking.runner import run

PROJECT = "/home/u/app"
NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def _event(
    kind: str, payload: Any, days_ago: float, session: str | None, causes: tuple[str, ...] = ()
) -> Event:
    when = NOW - timedelta(days=days_ago)
    return event_at(kind, payload, when, project=PROJECT, session_id=session, caused_by=causes)


def prompt(days_ago: float, session: str) -> Event:
    return _event(kinds.PROMPT_SUBMITTED, {"prompt": "hello", "session_id": session}, days_ago, session)


def asserted(fact_id: str, cause: Event) -> Event:
    fact = memory.FactAsserted(fact_id=fact_id, source="project:app", relation="uses", description=fact_id)
    days = (NOW - cause.ts).total_seconds() / 86_400
    return _event(kinds.FACT_ASSERTED, fact, days, cause.session_id, (cause.id,))


def restated(fact_id: str, cause: Event) -> Event:
    again = memory.FactReconsolidated(fact_id=fact_id, confidence=0.9, reason="restated")
    days = (NOW - cause.ts).total_seconds() / 86_400
    return _event(kinds.FACT_RECONSOLIDATED, again, days, cause.session_id, (cause.id,))


@pytest.fixture
def story(settings: Settings) -> Iterator[Folding]:
    old, recent, other, third = (
        prompt(60, "s-old"),
        prompt(5, "s-recent"),
        prompt(3, "s-other"),
        prompt(1, "s-3"),
    )
    recalled = _event(
        kinds.MEMORY_RETRIEVED,
        {"query": "q", "results": ["recalled"], "session_id": "s-recent"},
        5,
        "s-recent",
    )
    correction = _event(
        kinds.SIGNAL_DETECTED,
        memory.SignalDetected(signal_id="sig", signal="correction", text="no, use it", subject="corrected"),
        60, "s-old", (old.id,),
    )  # fmt: skip
    events = [
        old, recent, other, third, recalled, correction,
        asserted("unused", old),  # once, 60 days ago: ln(60^-0.5) = -2.05 < -2
        asserted("recalled", old),  # and recalled 5 days ago
        asserted("corrected", old),  # a correction weighs 1.5: ln(1.5 * 60^-0.5) = -1.64
        asserted("recurring", old), restated("recurring", other), restated("recurring", third),
    ]  # fmt: skip
    folding = Folding(settings)
    folding.fold(events)
    yield folding
    folding.close()


def thought(settings: Settings) -> list[Event]:
    client = fakeredis.FakeRedis()
    run("lifecycle", client=client, settings=settings, at=NOW)
    return streamed(client)


def test_the_recurring_rise_idle_sessions_are_archived_and_nothing_expires(
    story: Folding, settings: Settings
) -> None:
    emitted = thought(settings)
    said = [(e.kind, msgspec.json.decode(e.payload)) for e in emitted]
    promoted = sorted((p["memory_id"], p["to_tier"]) for k, p in said if k == kinds.TIER_PROMOTED)
    assert [k for k, _ in said if k == kinds.FACT_EXPIRED] == []
    assert promoted == [("recurring", "long_term"), ("s-old", "archived")]
    assert all(e.caused_by and e.source == kinds.SOURCE_WORKER for e in emitted)


def test_a_fact_never_used_stays_recallable_and_old_decay_expiries_hide_nothing(
    story: Folding, settings: Settings
) -> None:
    story.fold(thought(settings))
    decayed = memory.FactExpired(fact_id="unused", reason="its ACT-R activation fell below -2.0")
    story.fold([_event(kinds.FACT_EXPIRED, decayed, 0, None, (story_cause(settings, "unused"),))])
    db = connect(settings)
    current = {r[0] for r in db.execute("SELECT fact_id FROM facts_current").fetchall()}
    assert {"unused", "recalled", "corrected", "recurring"} <= current
    tiers = dict(db.execute("SELECT memory_id, tier FROM memory_tiers").fetchall())
    assert tiers["unused"] == "short_term" and tiers["recurring"] == "long_term"


def test_a_duplicate_is_hidden_not_deleted_and_found_as_of_before(story: Folding, settings: Settings) -> None:
    duplicate = memory.FactExpired(fact_id="unused", reason="said again", duplicate_of="recalled")
    story.fold([_event(kinds.FACT_EXPIRED, duplicate, 0, None, (story_cause(settings, "unused"),))])
    db = connect(settings)
    current = {r[0] for r in db.execute("SELECT fact_id FROM facts_current").fetchall()}
    assert "unused" not in current and "recalled" in current
    before = db.execute(
        "SELECT fact_id FROM facts_as_of(?, ?) WHERE fact_id = 'unused'", [NOW, NOW - timedelta(hours=1)]
    ).fetchall()
    assert before == [("unused",)]  # known before the duplicate was found
    assert dict(db.execute("SELECT memory_id, tier FROM memory_tiers").fetchall())["unused"] == "expired"


def story_cause(settings: Settings, fact_id: str) -> str:
    """The event that last told of `fact_id`."""
    [(cause,)] = (
        connect(settings).execute("SELECT updated_by FROM facts WHERE fact_id = ?", [fact_id]).fetchall()
    )
    return str(cause)


def test_run_twice_it_emits_the_same_events(story: Folding, settings: Settings) -> None:
    assert [e.id for e in thought(settings)] == [e.id for e in thought(settings)]


def test_once_folded_there_is_nothing_more_to_do(story: Folding, settings: Settings) -> None:
    story.fold(thought(settings))
    assert thought(settings) == []
