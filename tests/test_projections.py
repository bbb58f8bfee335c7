"""Folding the log into DuckDB: per kind, idempotent, independent of arrival order, replayable."""

import os
import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from typing import Any

import duckdb
import fakeredis
import msgspec
import pytest

from ingest.transcripts import ImportedEvent, find_transcripts, read_transcript
from projections.projector import replay
from projections.sql import connect
from projections.store import current_store
from reverie.testing import Folding, imported_event, make_event
from schemas import events, kinds, memory
from schemas.ids import new_event_id
from schemas.observed import MemoryRemembered
from schemas.settings import Settings
from tests.support.captures import TRANSCRIPTS
from tests.support.events import T0, at, checksums, derived, memory_story, observed, rows
from tests.support.processes import BIN


def a_session() -> list[events.Event]:
    return [
        observed(kinds.SESSION_STARTED, 0, source="startup", cwd="/repo", transcript_path="/t/s1.jsonl"),
        observed(kinds.PROMPT_SUBMITTED, 1, prompt="fix the build"),
        observed(kinds.TOOL_REQUESTED, 2, tool_name="Bash", tool_use_id="t1", tool_input={"command": "make"}),
        observed(
            kinds.TOOL_USED,
            3.5,
            tool_name="Bash",
            tool_use_id="t1",
            tool_input={"command": "make"},
            tool_response={"stdout": "ok"},
        ),
        observed(
            kinds.TOOL_FAILED,
            4,
            tool_name="Edit",
            tool_use_id="t2",
            tool_input={"file_path": "/repo/a.py"},
            error="old_string not found",
        ),
        observed(kinds.ASSISTANT_STOPPED, 5, last_assistant_message="The build passes."),
        observed(kinds.SUBAGENT_STARTED, 6, agent_id="a1", agent_type="Explore"),
        observed(
            kinds.SUBAGENT_STOPPED,
            8,
            agent_id="a1",
            agent_type="Explore",
            last_assistant_message="found it",
            agent_transcript_path="/t/a1.jsonl",
        ),
        observed(kinds.COMPACTION_STARTED, 9, trigger="auto", custom_instructions=None),
        observed(kinds.COMPACTION_FINISHED, 10, trigger="auto"),
        make_event(
            kinds.MEMORY_REMEMBERED,
            MemoryRemembered(text="use uv", tags=["tooling"]),
            id=new_event_id(int(at(11).timestamp() * 1000)),
            ts=at(11),
            recorded_at=at(11),
            project="-repo",
            source=kinds.SOURCE_CLI,
        ),
        observed(kinds.MEMORY_RETRIEVED, 12, query="build", results=["f1", "f2"], scores=[0.9, 0.5]),
        observed(kinds.SESSION_ENDED, 13, reason="logout"),
    ]


def test_a_session_folds_into_its_tables(folding: Folding) -> None:
    db = folding.fold(a_session())
    assert rows(
        db,
        "SELECT session_id, project, start_source, end_reason, cwd, events, prompts, tool_uses, errors, "
        "started_at = first_event_at, ended_at = last_event_at FROM sessions",
    ) == [("s1", "/repo", "startup", "logout", "/repo", 12, 1, 2, 1, True, True)]
    assert rows(db, "SELECT prompt, chars FROM prompts") == [("fix the build", 13)]
    assert rows(
        db, "SELECT tool, input_summary, outcome, duration_ms, files_touched FROM tool_uses ORDER BY ts"
    ) == [
        ("Bash", "make", "ok", 1500.0, []),
        ("Edit", "/repo/a.py", "error", None, ["/repo/a.py"]),
    ]
    assert rows(db, "SELECT tool, error FROM errors") == [("Edit", "old_string not found")]
    assert rows(db, "SELECT text FROM messages ORDER BY ts") == [("The build passes.",), ("found it",)]
    assert rows(db, "SELECT agent_id, agent_type, stopped_at - started_at, last_message FROM subagents") == [
        ("a1", "Explore", timedelta(seconds=2), "found it")
    ]
    assert rows(db, "SELECT phase, trigger FROM compactions ORDER BY ts") == [
        ("started", "auto"),
        ("finished", "auto"),
    ]
    assert rows(db, "SELECT text, tags FROM remembered") == [("use uv", ["tooling"])]
    assert rows(db, "SELECT query, results, scores FROM retrievals") == [("build", ["f1", "f2"], [0.9, 0.5])]


def test_claude_codes_own_messages_are_no_prompts_and_a_cancelled_call_is_no_error(folding: Folding) -> None:
    prompts = [
        "fix the flaky test",
        "[Request interrupted by user for tool use]",
        "<task-notification>\n<task-id>b1</task-id>\n</task-notification>",
        "Read the output file to retrieve the result: /tmp/b1.output",
        "Your task is to create a detailed summary of the conversation",
    ]
    test: dict[str, Any] = {"tool_name": "Bash", "tool_input": {"command": "mix test"}}
    said = [
        *(observed(kinds.PROMPT_SUBMITTED, n, prompt=p) for n, p in enumerate(prompts)),
        observed(
            kinds.TOOL_FAILED, 6, **test, error="<tool_use_error>Sibling tool call errored</tool_use_error>"
        ),
        observed(kinds.TOOL_FAILED, 7, **test, error="1 failure"),
    ]
    db = folding.fold(said)
    assert rows(db, "SELECT prompt FROM prompts") == [("fix the flaky test",)]
    assert rows(db, "SELECT kind FROM harness_messages ORDER BY ts") == [
        ("interruption",), ("task_notification",), ("output_pointer",), ("compaction_request",)
    ]  # fmt: skip
    assert rows(db, "SELECT prompts, errors FROM sessions") == [(1, 1)]
    assert rows(db, "SELECT outcome FROM tool_uses ORDER BY ts") == [("cancelled",), ("error",)]
    assert rows(db, "SELECT error FROM errors") == [("1 failure",)]


def test_a_fact_imported_today_is_dated_when_it_was_true(folding: Folding, settings: Settings) -> None:
    said = observed(kinds.PROMPT_SUBMITTED, 0, prompt="we chose PostgreSQL over MySQL")
    fact = memory.FactAsserted(
        fact_id="f", source="project:r", relation="decided_for", description="PostgreSQL"
    )
    learned = make_event(
        kinds.FACT_ASSERTED, fact, id=new_event_id(), ts=said.ts, recorded_at=datetime.now(UTC),
        project="-repo", source=kinds.SOURCE_WORKER, caused_by=(said.id,),
    )  # fmt: skip
    folding.fold([said, learned])
    [(ts, created)] = (
        connect(settings)
        .execute("SELECT m.ts, f.created_at FROM memory_texts m JOIN facts f ON f.fact_id = m.memory_id")
        .fetchall()
    )
    assert ts == T0 and created > T0 + timedelta(days=1)  # valid time, not when reverie learned it


def test_a_duration_is_known_whichever_of_pre_and_post_is_folded_first(folding: Folding) -> None:
    pre = observed(kinds.TOOL_REQUESTED, 0, tool_name="Read", tool_use_id="t9")
    post = observed(kinds.TOOL_USED, 0.25, tool_name="Read", tool_use_id="t9")
    db = folding.fold([post], [pre])
    assert rows(db, "SELECT duration_ms FROM tool_uses") == [(250.0,)]


def test_a_duration_claude_code_gives_is_the_one_kept(folding: Folding) -> None:
    pre = observed(kinds.TOOL_REQUESTED, 0, tool_name="Bash", tool_use_id="t1")
    post = observed(kinds.TOOL_USED, 0.25, tool_name="Bash", tool_use_id="t1", duration_ms=27)
    alone = observed(kinds.TOOL_USED, 1, tool_name="Read", tool_use_id="t2", duration_ms=3)
    db = folding.fold([post, alone], [pre])
    durations = rows(db, "SELECT tool_use_id, duration_ms FROM tool_uses ORDER BY ts")
    assert durations == [("t1", 27.0), ("t2", 3.0)]


def test_an_event_in_two_segments_is_folded_once(folding: Folding) -> None:
    prompt = observed(kinds.PROMPT_SUBMITTED, 1, prompt="once")
    db = folding.fold([prompt], [prompt, observed(kinds.PROMPT_SUBMITTED, 2, prompt="twice?")])
    assert rows(db, "SELECT events, prompts FROM sessions") == [(2, 2)]
    assert rows(db, "SELECT count(*) FROM folded") == [(2,)]


def test_memory_folds_into_its_tables(folding: Folding) -> None:
    db = folding.fold(memory_story())
    assert rows(db, "SELECT name, aliases, observations FROM entities") == [
        ("DuckDB", ["duck", "duckdb-py"], 2)
    ]
    assert rows(
        db,
        "SELECT fact_id, description, confidence, reconsolidations, invalid_at, superseded_by, "
        "expired_at IS NOT NULL FROM facts ORDER BY fact_id",
    ) == [
        ("f1", "uses DuckDB", 0.9, 2, at(7), "f2", False),
        ("f2", "uses DuckDB 2.0", 1.0, 0, None, None, True),
    ]
    assert rows(db, "SELECT kind, count(*) FROM fact_history GROUP BY kind ORDER BY kind") == [
        ("fact.asserted", 2),
        ("fact.expired", 1),
        ("fact.reconsolidated", 2),
        ("fact.superseded", 1),
    ]
    assert rows(db, "SELECT count(DISTINCT event_id), min(caused_by) FROM provenance") == [(21, "01CAUSE")]
    assert rows(
        db, "SELECT episode_id, consolidated_into, started_at, ended_at FROM episodes ORDER BY 1"
    ) == [("p1", "p3", at(0), at(5)), ("p2", "p3", at(6), None), ("p3", None, at(0), at(6))]
    assert rows(db, "SELECT memory_id, activated_at FROM activation_log") == [("f2", at(12))]
    assert rows(db, "SELECT signal, sentiment FROM signals") == [("correction", -0.5)]
    assert rows(db, "SELECT strength, evidence FROM preferences") == [(0.8, 3)]
    assert rows(db, "SELECT occurrences FROM failures") == [(2,)]
    assert rows(db, "SELECT tier FROM tiers") == [("long_term",)]
    assert rows(db, "SELECT members FROM communities") == [(["e0", "e1"],)]
    assert rows(db, "SELECT statement, confidence, revisions FROM opinions") == [("DuckDB fits", 0.4, 1)]
    assert rows(db, "SELECT statement, about FROM observations") == [("tests are slow", ["e0"])]


def test_the_same_events_in_any_batches_fold_to_the_same_tables(settings: Settings, tmp_path: Any) -> None:
    story = a_session() + memory_story()
    together = Folding(settings).fold(story)
    apart = Folding(Settings(str(tmp_path))).fold(*([e] for e in story))
    assert checksums(apart) == checksums(together)


def test_newer_updates_win_even_when_older_ones_arrive_late(folding: Folding) -> None:
    m = memory
    first = derived(
        kinds.PREFERENCE_CRYSTALLIZED,
        1,
        m.PreferenceCrystallized(preference_id="r", statement="old", strength=0.5, evidence=1),
    )
    second = derived(
        kinds.PREFERENCE_CRYSTALLIZED,
        2,
        m.PreferenceCrystallized(preference_id="r", statement="new", strength=0.9, evidence=2),
    )
    db = folding.fold([second], [first])
    assert rows(db, "SELECT statement, evidence FROM preferences") == [("new", 2)]


def test_replay_builds_the_tables_the_live_projector_built(settings: Settings) -> None:
    imported = [
        imported_event(i)
        for f in find_transcripts(str(TRANSCRIPTS))
        for i in read_transcript(f)
        if isinstance(i, ImportedEvent)
    ]
    live = Folding(settings)
    db = live.fold(*(imported[i : i + 37] for i in range(0, len(imported), 37)))
    assert rows(db, "SELECT count(*) FROM folded") == [(len(imported),)]
    before = checksums(db)
    live_store = live.projector.store
    live.projector.close()
    assert replay(settings.event_log_dir, settings.projections_dir) == len(imported)
    rebuilt = current_store(settings.projections_dir)
    assert rebuilt is not None and live_store is not None and rebuilt.path != live_store.path
    assert not os.path.exists(live_store.path)  # the old generation is gone
    assert checksums(duckdb.connect(rebuilt.snapshot, read_only=True)) == before


def test_replay_rebuilds_what_extraction_derived_without_extracting_again(settings: Settings) -> None:
    from reverie.testing import streamed
    from workers.thinking.runner import Segment, Session, run

    imported = [
        imported_event(i)
        for f in find_transcripts(str(TRANSCRIPTS))
        for i in read_transcript(f)
        if isinstance(i, ImportedEvent)
    ]
    live = Folding(settings)
    client = fakeredis.FakeRedis()
    for start in range(0, len(imported), 150):  # batch by batch, as the dispatcher and the workers do
        batch = imported[start : start + 150]
        segment = live.log.append(batch)
        run("extract", Segment(segment, [e.id for e in batch]), client, settings)
        live.fold(streamed(client))
        client.flushall()
    for session in sorted({e.session_id for e in imported if e.session_id}):
        run("episodes", Session(session), client, settings)
    db = live.fold(streamed(client))
    assert all(rows(db, f"SELECT count(*) FROM {t}")[0][0] > 0 for t in ("entities", "facts", "episodes"))
    before = checksums(db)
    live.close()
    replay(settings.event_log_dir, settings.projections_dir)
    rebuilt = current_store(settings.projections_dir)
    assert rebuilt is not None
    assert checksums(duckdb.connect(rebuilt.snapshot, read_only=True)) == before


def test_a_store_of_another_schema_version_is_rebuilt(folding: Folding) -> None:
    db = folding.fold(a_session())
    db.execute("UPDATE meta SET value = 'older' WHERE key = 'schema_version'")
    old = folding.projector.store
    folding.projector.close()
    assert folding.projector.open() == "a store of another schema version"
    assert (
        folding.projector.store is not None and old is not None and folding.projector.store.path != old.path
    )
    assert rows(folding.projector.db, "SELECT count(*) FROM prompts") == [(1,)]  # type: ignore[arg-type]


def test_a_running_projector_follows_a_replay(folding: Folding, settings: Settings) -> None:
    folding.fold(a_session())
    replay(settings.event_log_dir, settings.projections_dir)
    folding.projector.follow()
    db = folding.fold([observed(kinds.PROMPT_SUBMITTED, 20, prompt="after the replay")])
    assert rows(db, "SELECT count(*) FROM prompts") == [(2,)]


def test_sql_reads_the_snapshot_while_the_projector_holds_its_database(
    folding: Folding, env: dict[str, str]
) -> None:
    folding.fold(a_session())  # the projector keeps memory.duckdb open for writing
    result = subprocess.run(
        [str(BIN), "sql", "SELECT prompts, tool_uses FROM sessions", "--csv"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["prompts,tool_uses", "1,2"]


def test_the_analytic_views_answer(folding: Folding, settings: Settings) -> None:
    from projections.sql import connect

    folding.fold(a_session() + memory_story())
    db = connect(settings)
    assert rows(db, "SELECT fact_id FROM facts_current") == []  # f1 superseded, f2 forgotten
    # f1 was true from T0 until T0+7s; reverie learned that it ended at T0+7s
    assert rows(db, f"SELECT fact_id, invalid_at FROM facts_as_of('{at(5)}', '{at(6.5)}')") == [("f1", None)]
    assert rows(db, f"SELECT fact_id, invalid_at FROM facts_as_of('{at(5)}', '{at(30)}') ORDER BY 1") == [
        ("f1", at(7))
    ]
    assert rows(db, f"SELECT fact_id FROM facts_as_of('{at(8)}', '{at(30)}')") == []
    assert rows(db, f"SELECT fact_id FROM facts_as_of('{at(6.5)}', '{at(7.5)}') ORDER BY 1") == [
        ("f1",),
        ("f2",),
    ]
    assert rows(db, "SELECT tool, uses, errors, median_ms FROM tool_usage_per_day ORDER BY tool") == [
        ("Bash", 1, 0, 1500.0),
        ("Edit", 1, 1, None),
    ]
    timeline = rows(
        db, "SELECT what, detail FROM entity_timeline WHERE entity_id = 'e1' ORDER BY happened_at, what"
    )
    assert timeline[0] == ("fact: uses", "uses DuckDB") and ("fact ended: uses", "uses DuckDB") in timeline
    [health] = rows(
        db, "SELECT facts, reconsolidation_rate, retrieval_hit_rate, embedding_coverage FROM memory_health"
    )
    assert health == (0, 0.5, 1.0, 0.0)  # no embedder has run


def test_one_projector_per_data_directory(settings: Settings) -> None:
    from projections.store import lock_projections
    from schemas.disk.files import Busy

    held = lock_projections(settings.projections_dir)
    with pytest.raises(Busy, match="another process is projecting"):
        lock_projections(settings.projections_dir)
    held.close()
    lock_projections(settings.projections_dir).close()


def rewrites() -> list[events.Event]:
    """Memories stated again: a fact re-asserted and superseded twice, an opinion formed twice,
    an episode, a signal and an observation recorded again."""
    m = memory

    def fact(seconds: float, **changes: Any) -> events.Event:
        base = {"fact_id": "f3", "source": "e0", "relation": "uses", "description": "pins torch"}
        return derived(kinds.FACT_ASSERTED, seconds, m.FactAsserted(**(base | changes)))

    return [
        fact(1, valid_at=at(0), invalid_at=at(4)),
        fact(2, valid_at=at(0)),  # re-asserted: no known end any more
        derived(kinds.FACT_SUPERSEDED, 10, m.FactSuperseded(fact_id="f3", invalid_at=at(5))),
        derived(kinds.FACT_SUPERSEDED, 20, m.FactSuperseded(fact_id="f3", invalid_at=at(8))),
        derived(kinds.OPINION_FORMED, 21, m.OpinionFormed(opinion_id="o2", statement="s1", confidence=0.5)),
        derived(kinds.OPINION_REVISED, 22, m.OpinionRevised(opinion_id="o2", statement="r1")),
        derived(kinds.OPINION_FORMED, 23, m.OpinionFormed(opinion_id="o2", statement="s2", confidence=0.6)),
        derived(kinds.EPISODE_RECORDED, 24, m.EpisodeRecorded(episode_id="p9", title="old", summary="",
                                                              started_at=at(0))),
        derived(kinds.EPISODE_RECORDED, 25, m.EpisodeRecorded(episode_id="p9", title="new", summary="",
                                                              started_at=at(0))),
        derived(kinds.SIGNAL_DETECTED, 26, m.SignalDetected(signal_id="g9", signal="praise", text="old")),
        derived(kinds.SIGNAL_DETECTED, 27, m.SignalDetected(signal_id="g9", signal="praise", text="new")),
        derived(kinds.OBSERVATION_FORMED, 28, m.ObservationFormed(observation_id="b9", statement="old")),
        derived(kinds.OBSERVATION_FORMED, 29, m.ObservationFormed(observation_id="b9", statement="new")),
    ]  # fmt: skip


def test_rewritten_memories_fold_alike_in_any_batches(settings: Settings, tmp_path: Any) -> None:
    story = memory_story() + rewrites()
    together = Folding(settings).fold(story)
    splits = [
        Folding(Settings(str(tmp_path / f"split{n}"))).fold(story[:n], story[n:])
        for n in range(1, len(story))
    ]
    one_by_one = Folding(Settings(str(tmp_path / "single"))).fold(*([e] for e in story))
    expected = checksums(together)
    assert all(checksums(db) == expected for db in [*splits, one_by_one])
    assert rows(together, "SELECT statement, revisions FROM opinions WHERE opinion_id = 'o2'") == [("s2", 1)]
    assert rows(together, "SELECT title FROM episodes WHERE episode_id = 'p9'") == [("new",)]
    assert rows(together, "SELECT text FROM signals WHERE signal_id = 'g9'") == [("new",)]
    assert rows(together, "SELECT statement FROM observations WHERE observation_id = 'b9'") == [("new",)]
    assert rows(together, "SELECT invalid_at FROM facts WHERE fact_id = 'f3'") == [(at(8),)]


def test_the_last_recorded_detection_and_revision_win_whatever_their_ids(
    settings: Settings, tmp_path: Any
) -> None:
    """A derived event's id is of its causes' time: a dissolution caused by the detection it
    undoes, or a revision with no newer evidence, can sort before what it replaces."""
    m = memory

    def later(kind: str, seconds: float, payload: msgspec.Struct, id: str) -> events.Event:
        return make_event(kind, payload, id=id, ts=at(1), recorded_at=at(seconds), project="-repo",
                          source=kinds.SOURCE_WORKER, caused_by=("01CAUSE",))  # fmt: skip

    story = [
        later(kinds.COMMUNITY_DETECTED, 1, m.CommunityDetected(community_id="c7", members=["e0"]), "01B"),
        later(kinds.COMMUNITY_DETECTED, 2, m.CommunityDetected(community_id="c7", members=[]), "01A"),
        later(kinds.OPINION_FORMED, 1, m.OpinionFormed(opinion_id="o7", statement="", confidence=0.8), "01D"),
        later(kinds.OPINION_REVISED, 2, m.OpinionRevised(opinion_id="o7", confidence=0.6), "01C"),
    ]  # fmt: skip
    for n, db in enumerate(
        [
            Folding(settings).fold(story),
            Folding(Settings(str(tmp_path / "apart"))).fold(*([e] for e in story)),
        ]
    ):
        assert rows(db, "SELECT members FROM communities WHERE community_id = 'c7'") == [([],)], n
        assert rows(db, "SELECT confidence FROM opinions WHERE opinion_id = 'o7'") == [(0.6,)], n


def test_facts_as_of_reads_what_was_known_then(folding: Folding, settings: Settings) -> None:
    from projections.sql import connect

    folding.fold(rewrites())
    db = connect(settings)

    def known(valid: float, known_at: float) -> list[tuple[Any, ...]]:
        return rows(db, f"SELECT fact_id, invalid_at FROM facts_as_of('{at(valid)}', '{at(known_at)}')")

    assert known(3, 1.5) == [("f3", at(4))]  # first asserted with an end at 4
    assert known(4.5, 1.5) == []
    assert known(4.5, 5) == [("f3", None)]  # re-asserted without an end
    assert known(6, 15) == []  # superseded: ended at 5
    assert known(6, 25) == [("f3", at(8))]  # superseded again: ended at 8
    assert known(0.5, 0.5) == []  # not learned yet


def test_a_fold_whose_snapshot_failed_is_published_next_round(
    folding: Folding, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from projections.sql import connect
    from projections.store import Store

    folding.fold([observed(kinds.PROMPT_SUBMITTED, 1, prompt="one")])
    real_publish = Store.publish

    def disk_full(self: Store, db: duckdb.DuckDBPyConnection) -> None:
        raise OSError("No space left on device")

    monkeypatch.setattr(Store, "publish", disk_full)
    folding.log.append([observed(kinds.PROMPT_SUBMITTED, 2, prompt="two")])
    with pytest.raises(OSError, match="No space"):
        folding.projector.catch_up()
    assert rows(connect(settings), "SELECT count(*) FROM prompts") == [(1,)]  # readers see the last snapshot
    monkeypatch.setattr(Store, "publish", real_publish)
    assert folding.projector.catch_up() == 0  # nothing new to fold, but the snapshot is behind
    assert rows(connect(settings), "SELECT count(*) FROM prompts") == [(2,)]


def test_a_connection_moved_to_the_next_snapshot_reads_it_through_its_views(
    folding: Folding, settings: Settings
) -> None:
    from projections import sql

    folding.fold([observed(kinds.PROMPT_SUBMITTED, 1, prompt="one")])
    with sql.connect(settings, snapshot_required=True, files=False) as db:
        folding.fold([observed(kinds.PROMPT_SUBMITTED, 2, prompt="two")])
        assert rows(db, "SELECT text FROM memory_texts") == [("one",)]  # the snapshot it attached
        sql.reattach(db, settings)
        assert sorted(rows(db, "SELECT text FROM memory_texts")) == [("one",), ("two",)]
        shutil.rmtree(settings.projections_dir)
        with pytest.raises(sql.NoSnapshot):
            sql.reattach(db, settings)


def test_a_snapshot_of_another_schema_version_reads_as_none_until_rebuilt(
    folding: Folding, settings: Settings
) -> None:
    from projections import sql

    folding.fold([observed(kinds.PROMPT_SUBMITTED, 1, prompt="one")])
    store = current_store(settings.projections_dir)
    assert store is not None
    with duckdb.connect(store.snapshot) as older:  # as an earlier version of reverie left it
        older.execute("UPDATE meta SET value = 'older' WHERE key = 'schema_version'")
    with pytest.raises(sql.NoSnapshot, match="of this version's schema"):
        sql.connect(settings, snapshot_required=True)
    assert rows(sql.connect(settings), "SELECT count(*) FROM memory_texts") == [(0,)]
    folding.fold([observed(kinds.PROMPT_SUBMITTED, 2, prompt="two")])  # published again
    assert rows(sql.connect(settings, snapshot_required=True), "SELECT count(*) FROM memory_texts") == [(2,)]


def test_replay_beside_a_running_projector_leaves_it_its_store(folding: Folding, settings: Settings) -> None:
    from projections.projector import prune_stores
    from projections.store import lock_projections

    folding.fold(a_session())
    running = folding.projector.store
    assert running is not None
    with lock_projections(settings.projections_dir):  # as `reverie project` holds it
        replay(settings.event_log_dir, settings.projections_dir)
        assert os.path.exists(running.database)  # still the projector's until it follows
        assert folding.projector.follow() is True
        prune_stores(settings.projections_dir)
    assert not os.path.exists(running.path)
    assert sorted(n for n in os.listdir(settings.projections_dir) if n.startswith("store-")) == [
        os.path.basename(current_store(settings.projections_dir).path)  # type: ignore[union-attr]
    ]


def test_facts_recorded_before_the_ontology_fold_into_it(folding: Folding) -> None:
    """Schema v1 named relations the ontology does not have: a replay maps them onto it."""

    def v1_fact(fact_id: str, relation: str) -> events.Event:
        when = at(5)
        payload = {
            "fact_id": fact_id,
            "source": "e-db",
            "relation": relation,
            "target": "e-app",
            "description": "x",
        }
        return make_event(
            kinds.FACT_ASSERTED, payload, id=new_event_id(int(when.timestamp() * 1000)), ts=when,
            recorded_at=when, project="/repo", source=kinds.SOURCE_WORKER, caused_by=("01CAUSE",),
        )  # fmt: skip

    db = folding.fold(
        [v1_fact("f-part", "part_of"), v1_fact("f-uses", "uses"), v1_fact("f-odd", "vibes_with")]
    )
    assert rows(
        db, "SELECT fact_id, source, relation, target, stated_relation, project FROM facts ORDER BY 1"
    ) == [
        ("f-odd", "e-db", "related_to", "e-app", "vibes_with", "/repo"),
        ("f-part", "e-app", "has_component", "e-db", "part_of", "/repo"),
        ("f-uses", "e-db", "uses", "e-app", None, "/repo"),
    ]


def test_the_store_says_which_event_last_changed_what_memories_say(folding: Folding) -> None:
    """A batch of recalls alone changes no memory's text: the mark stays, and the embedder may
    skip the memory texts (projections/embedder.py); a prompt, or a forgetting, moves it."""
    from projections.store import memories_changed_by

    prompt = observed(kinds.PROMPT_SUBMITTED, 1, prompt="fix the build")
    assert memories_changed_by(folding.fold([prompt])) == prompt.id
    recalled = observed(kinds.MEMORY_RETRIEVED, 2, query="build", results=[prompt.id], scores=[0.9])
    assert memories_changed_by(folding.fold([recalled])) == prompt.id
    forgot = observed(kinds.MEMORY_FORGOTTEN, 3, memory_id=prompt.id, reason="wrong")
    assert memories_changed_by(folding.fold([forgot])) == forgot.id


def test_recall_keeps_the_features_it_read_through_snapshots_of_recalls_alone(
    folding: Folding, settings: Settings
) -> None:
    """Each recall makes a snapshot: recall reads its activations again (a recall shows memories,
    a use of one, judged after, strengthens it), and every memory's other features only when a
    snapshot changed what memories say."""
    from projections.recall.memories import Memories

    prompt = observed(kinds.PROMPT_SUBMITTED, 1, prompt="fix the build")
    folding.fold([prompt])
    memories = Memories(settings, follow=False)
    first = memories.newer()
    assert first is not None
    memories.swap(first)
    assert memories.features([prompt.id])[prompt.id].uses == []
    recall = observed(kinds.MEMORY_RETRIEVED, 2, query="build", results=[prompt.id], scores=[0.9])
    used = memory.ActivationRecorded(memory_id=prompt.id, at=recall.ts, cause="used")
    folding.fold([recall])
    shown = memories.newer()
    assert shown is not None
    memories.swap(shown)
    assert memories.features([prompt.id])[prompt.id].uses == []  # shown, not used yet
    folding.fold([derived(kinds.ACTIVATION_RECORDED, 2, used, cause=recall.id)])
    recalled = memories.newer()
    assert recalled is not None and recalled.features is first.features
    memories.swap(recalled)
    assert len(memories.features([prompt.id])[prompt.id].uses) == 1
    later = observed(kinds.PROMPT_SUBMITTED, 3, prompt="and the docs")
    folding.fold([later])
    changed = memories.newer()
    assert changed is not None and changed.features is not first.features
    memories.swap(changed)
    assert set(memories.features([prompt.id, later.id])) == {prompt.id, later.id}
    memories.close()


def test_recall_moves_the_connection_it_swapped_out_to_the_next_snapshot_unless_a_reader_holds_it(
    folding: Folding, settings: Settings
) -> None:
    from projections.recall.memories import Memories

    def count(db: Any) -> int:
        return int(db.execute("SELECT count(*) FROM prompts").fetchall()[0][0])

    memories = Memories(settings, follow=False)
    connections = []
    for n in range(4):
        folding.fold([observed(kinds.PROMPT_SUBMITTED, n + 1, prompt=f"prompt {n}")])
        opened = memories.newer()
        assert opened is not None
        memories.swap(opened)
        connections.append(opened.db)
        assert count(memories.db()) == n + 1  # the new snapshot, whichever connection reads it
    assert connections[2] is connections[0] and connections[3] is connections[1]  # two take turns
    with memories.reader() as reader:
        folding.fold([observed(kinds.PROMPT_SUBMITTED, 5, prompt="prompt 4")])
        opened = memories.newer()
        assert opened is not None and opened.db is connections[0]
        memories.swap(opened)
        folding.fold([observed(kinds.PROMPT_SUBMITTED, 6, prompt="prompt 5")])
        newest = memories.newer()
        assert newest is not None and newest.db not in connections  # the lent one is left alone
        memories.swap(newest)
        assert reader is not None and count(reader) == 4  # still the snapshot it was lent
    assert count(memories.db()) == 6
    memories.close()


def test_features_read_hold_until_a_memory_changes_or_a_fact_begins_or_ends() -> None:
    """A fact current now may end later (or begin): the features read say which facts are
    current, so they hold until the first such instant, however quiet the memories stay."""
    import pyarrow as pa

    from projections.recall.memories import FeatureRows

    read_at = datetime(2026, 11, 1, 12, tzinfo=UTC)
    when = pa.timestamp("us", tz="UTC")
    table = pa.table({
        "memory_id": ["f1", "f2", "p1"],
        "project": ["/a", "/a", "/a"],
        "origin": ["/a", "/a", "/a"],
        "valid_at": pa.array([read_at - timedelta(days=1), read_at + timedelta(hours=3), None], when),
        "invalid_at": pa.array([read_at + timedelta(hours=1), None, None], when),
    })  # fmt: skip
    read = FeatureRows(table, "e1", read_at)
    assert read.until == read_at + timedelta(hours=1)
    assert read.hold("e1", read_at + timedelta(minutes=59))
    assert not read.hold("e1", read_at + timedelta(hours=1))  # f1 ends: current no longer
    assert not read.hold("e2", read_at) and not read.hold(None, read_at)
    assert FeatureRows(table.slice(2), "e1", read_at).until is None
    assert read.get(["f2", "gone"]).keys() == {"f2"} and read.get(["gone"]) == {}  # not embedded yet
