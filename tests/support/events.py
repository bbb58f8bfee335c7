"""Events made by hand, at fixed times: what Claude Code's hooks observe and what workers
derive, for the folds (a session, a story of memory), and an encoded event for the dispatcher;
and reading the projector's tables."""

from datetime import UTC, datetime, timedelta
from typing import Any

import duckdb
import msgspec

from ingest.envelope import encode_event
from reverie.testing import event_at, make_event
from schemas import events, kinds, memory
from schemas.ids import new_event_id, utc_now_iso

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)  # in the past: "current" compares with now()
# every table the projector folds into
TABLES = [
    "sessions",
    "prompts",
    "tool_uses",
    "errors",
    "passages",
    "file_versions",
    "messages",
    "subagents",
    "compactions",
    "remembered",
    "retrievals",
    "entities",
    "facts",
    "fact_history",
    "provenance",
    "episodes",
    "activation_log",
    "signals",
    "preferences",
    "failures",
    "tiers",
    "communities",
    "opinions",
    "observations",
    "llm_usage",
    "project_roots",
    "recorded_projects",
    "folded",
]


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def observed(kind: str, seconds: float, session: str = "s1", **payload: Any) -> events.Event:
    when = at(seconds)
    return make_event(
        kind,
        {"session_id": session, **payload},
        id=new_event_id(int(when.timestamp() * 1000)),
        ts=when,
        recorded_at=when,
        project="-repo",
        source=kinds.SOURCE_CLAUDE_CODE,
        session_id=session,
        agent=payload.get("agent_id", "main"),
    )


def derived(
    kind: str, seconds: float, payload: msgspec.Struct, cause: str = "01CAUSE", project: str = "-repo"
) -> events.Event:
    return event_at(kind, payload, at(seconds), project=project, caused_by=(cause,))


def rows(db: duckdb.DuckDBPyConnection, sql: str) -> list[tuple[Any, ...]]:
    return db.execute(sql).fetchall()


def checksums(db: duckdb.DuckDBPyConnection) -> dict[str, str]:
    return {
        table: rows(
            db, f"SELECT md5(coalesce(string_agg(t::VARCHAR, '|' ORDER BY t::VARCHAR), '')) FROM {table} t"
        )[0][0]
        for table in TABLES
    }


def memory_story() -> list[events.Event]:
    m = memory
    return [
        derived(
            kinds.ENTITY_OBSERVED,
            1,
            m.EntityObserved(
                entity_id="e1", type="library", name="duckdb", normalized_name="duckdb", aliases=["duck"]
            ),
        ),
        derived(
            kinds.ENTITY_OBSERVED,
            2,
            m.EntityObserved(
                entity_id="e1", type="library", name="DuckDB", normalized_name="duckdb", aliases=["duckdb-py"]
            ),
        ),
        derived(
            kinds.FACT_ASSERTED,
            3,
            m.FactAsserted(
                fact_id="f1",
                source="e0",
                relation="uses",
                target="e1",
                description="uses DuckDB 1.x",
                confidence=0.8,
                category="stack",
                valid_at=at(0),
            ),
        ),
        derived(kinds.FACT_RECONSOLIDATED, 4, m.FactReconsolidated(fact_id="f1", confidence=0.9)),
        derived(kinds.FACT_RECONSOLIDATED, 5, m.FactReconsolidated(fact_id="f1", description="uses DuckDB")),
        derived(
            kinds.FACT_ASSERTED,
            6,
            m.FactAsserted(
                fact_id="f2",
                source="e0",
                relation="uses",
                target="e1",
                description="uses DuckDB 2.0",
                valid_at=at(6),
            ),
        ),
        derived(kinds.FACT_SUPERSEDED, 7, m.FactSuperseded(fact_id="f1", by_fact_id="f2", reason="upgraded")),
        derived(kinds.FACT_EXPIRED, 8, m.FactExpired(fact_id="f2", reason="said again", duplicate_of="f1")),
        derived(
            kinds.EPISODE_RECORDED,
            9,
            m.EpisodeRecorded(episode_id="p1", title="a", summary="a", started_at=at(0), ended_at=at(5)),
        ),
        derived(
            kinds.EPISODE_RECORDED,
            10,
            m.EpisodeRecorded(episode_id="p2", title="b", summary="b", started_at=at(6), outcome="failure"),
        ),
        derived(
            kinds.EPISODE_CONSOLIDATED,
            11,
            m.EpisodeConsolidated(
                episode_id="p3", from_episodes=["p1", "p2"], title="ab", summary="a then b"
            ),
        ),
        derived(kinds.ACTIVATION_RECORDED, 12, m.ActivationRecorded(memory_id="f2", at=at(12))),
        derived(
            kinds.SIGNAL_DETECTED,
            13,
            m.SignalDetected(signal_id="g1", signal="correction", text="no", sentiment=-0.5),
        ),
        derived(
            kinds.PREFERENCE_CRYSTALLIZED,
            14,
            m.PreferenceCrystallized(preference_id="r1", statement="uv", strength=0.6, evidence=2),
        ),
        derived(
            kinds.PREFERENCE_CRYSTALLIZED,
            15,
            m.PreferenceCrystallized(preference_id="r1", statement="uv", strength=0.8, evidence=3),
        ),
        derived(
            kinds.FAILURE_RECURRING,
            16,
            m.FailureRecurring(
                failure_id="x1", signature="pytz", occurrences=2, example="...", last_seen=at(16)
            ),
        ),
        derived(
            kinds.TIER_PROMOTED,
            17,
            m.TierPromoted(memory_id="f2", from_tier="short_term", to_tier="long_term"),
        ),
        derived(kinds.COMMUNITY_DETECTED, 18, m.CommunityDetected(community_id="c1", members=["e1", "e0"])),
        derived(
            kinds.OPINION_FORMED,
            19,
            m.OpinionFormed(opinion_id="o1", statement="DuckDB fits", confidence=0.7),
        ),
        derived(kinds.OPINION_REVISED, 20, m.OpinionRevised(opinion_id="o1", confidence=0.4, reason="locks")),
        derived(
            kinds.OBSERVATION_FORMED,
            21,
            m.ObservationFormed(observation_id="b1", statement="tests are slow", about=["e0"]),
        ),
    ]


def event(prompt: str, event_id: str | None = None) -> tuple[str, bytes]:
    """A prompt as a producer encodes it for the stream: its id and bytes."""
    event_id = event_id or new_event_id()
    now = utc_now_iso()
    data = encode_event(
        "prompt.submitted", {"session_id": "s", "prompt": prompt}, event_id=event_id, ts=now, recorded_at=now,
        project="p", source="test",
    )  # fmt: skip
    return event_id, data
