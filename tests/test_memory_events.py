"""Derived events: every kind round-trips, carries its provenance, and refuses what is out of range."""

from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest

from reverie.testing import make_event
from schemas import events, kinds, llm, memory, registry
from schemas.ids import new_event_id

NOW = datetime(2026, 11, 22, 9, 30, tzinfo=UTC)

SAMPLES: dict[str, msgspec.Struct] = {
    kinds.ENTITY_OBSERVED: memory.EntityObserved(
        entity_id="e1", type="library", name="DuckDB", normalized_name="duckdb", aliases=["duckdb-py"]
    ),
    kinds.FACT_ASSERTED: memory.FactAsserted(
        fact_id="f1",
        source="e0",
        relation="uses",
        target="e1",
        description="the project uses DuckDB",
        confidence=0.9,
        memory_type="semantic",
        network="world",
        category="stack",
        valid_at=NOW,
    ),
    kinds.FACT_SUPERSEDED: memory.FactSuperseded(
        fact_id="f1", by_fact_id="f2", invalid_at=NOW, reason="moved"
    ),
    kinds.FACT_RECONSOLIDATED: memory.FactReconsolidated(fact_id="f1", confidence=0.7, reason="recalled"),
    kinds.FACT_EXPIRED: memory.FactExpired(fact_id="f1", reason="never recalled in 90 days"),
    kinds.MEMORY_SUPERSEDED: memory.MemorySuperseded(
        memory_id="m1", by_memory_id="m2", reason="updated: use pnpm"
    ),
    kinds.EPISODE_RECORDED: memory.EpisodeRecorded(
        episode_id="p1",
        session_id="s1",
        title="fix the build",
        summary="pinned torch",
        started_at=NOW,
        outcome="success",
        entities=["e1"],
    ),
    kinds.EPISODE_CONSOLIDATED: memory.EpisodeConsolidated(
        episode_id="p3", from_episodes=["p1", "p2"], title="builds", summary="torch pins"
    ),
    kinds.SIGNAL_DETECTED: memory.SignalDetected(
        signal_id="g1", signal="correction", text="no, use uv", sentiment=-0.4
    ),
    kinds.PREFERENCE_CRYSTALLIZED: memory.PreferenceCrystallized(
        preference_id="r1", statement="use uv, not pip", strength=0.8, evidence=3
    ),
    kinds.FAILURE_RECURRING: memory.FailureRecurring(
        failure_id="x1", signature="ModuleNotFoundError: pytz", occurrences=3, example="...", last_seen=NOW
    ),
    kinds.TIER_PROMOTED: memory.TierPromoted(memory_id="f1", from_tier="short_term", to_tier="long_term"),
    kinds.SESSION_IDLED: memory.SessionIdled(session_id="s1", last_event_at=NOW, idle_minutes=30.0),
    kinds.ACTIVATION_RECORDED: memory.ActivationRecorded(memory_id="f1", at=NOW, cause="retrieved"),
    kinds.COMMUNITY_DETECTED: memory.CommunityDetected(
        community_id="c1", members=["e0", "e1"], label="storage"
    ),
    kinds.OPINION_FORMED: memory.OpinionFormed(opinion_id="o1", statement="DuckDB fits", confidence=0.6),
    kinds.OPINION_REVISED: memory.OpinionRevised(opinion_id="o1", confidence=0.3, reason="lock contention"),
    kinds.OBSERVATION_FORMED: memory.ObservationFormed(observation_id="b1", statement="tests run slow"),
    kinds.LLM_USED: llm.LLMUsed(
        provider="openai", model="qwen3", input_tokens=900, output_tokens=120, outcome="extracted"
    ),
}


def derived(kind: str, payload: Any, caused_by: tuple[str, ...] = ("01ABC",)) -> events.Event:
    return make_event(
        kind, payload, id=new_event_id(), ts=NOW, recorded_at=NOW, project="p", source=kinds.SOURCE_WORKER,
        caused_by=caused_by,
    )  # fmt: skip


def test_every_derived_kind_has_a_sample() -> None:
    assert set(SAMPLES) == registry.DERIVED_KINDS


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_derived_events_round_trip(kind: str) -> None:
    event = derived(kind, SAMPLES[kind])
    again = events.decode_event(msgspec.json.encode(event))
    assert again == event
    assert again.caused_by == ("01ABC",)
    assert events.payload_of(again) == SAMPLES[kind]


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_derived_events_must_say_where_they_came_from(kind: str) -> None:
    with pytest.raises(events.InvalidEvent, match="caused_by"):
        derived(kind, SAMPLES[kind], caused_by=())
    wire = msgspec.json.decode(msgspec.json.encode(derived(kind, SAMPLES[kind])))
    wire["caused_by"] = []
    with pytest.raises(events.InvalidEvent, match="caused_by"):
        events.decode_event(msgspec.json.encode(wire))


@pytest.mark.parametrize(
    ("kind", "change", "complaint"),
    [
        (kinds.FACT_ASSERTED, {"confidence": 1.5}, "confidence"),
        (kinds.FACT_ASSERTED, {"relation": "loves"}, "relation"),
        (kinds.FACT_ASSERTED, {"network": "dreams"}, "network"),
        (kinds.SIGNAL_DETECTED, {"sentiment": -2}, "sentiment"),
        (kinds.ENTITY_OBSERVED, {"type": "planet"}, "type"),
    ],
)
def test_values_out_of_the_vocabulary_are_refused(kind: str, change: dict[str, Any], complaint: str) -> None:
    wire = msgspec.json.decode(msgspec.json.encode(derived(kind, SAMPLES[kind])))
    wire["payload"].update(change)
    with pytest.raises(events.InvalidEvent, match=complaint):
        events.decode_event(msgspec.json.encode(wire))
