"""The fact lifecycle: a restatement strengthens the fact it repeats, a change supersedes the fact
it ends (never deletes it), a fact changes at most 5 times and an episodic one never."""

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta

import fakeredis
import msgspec
import pytest

from ingest.emit import Worker
from projections.recall.words import jaccard, word_set
from projections.sql import connect
from reverie.testing import Folding, make_event, streamed
from schemas import kinds, memory
from schemas.ids import new_event_id
from schemas.memory import fact_id
from schemas.settings import Settings
from workers.extraction.settling import Cosine, StandingFact, settle
from workers.thinking.follower import Derived
from workers.thinking.reading import Reading
from workers.thinking.runner import Segment, run

PROJECT = "/home/u/app"
DAY_1 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def cosine() -> Iterator[Cosine]:
    with Reading(Settings("/nonexistent"), Worker("test", 1), [], DAY_1) as reading:  # only its model
        yield reading.cosine


def known(
    description: str, *, memory_type: str = "semantic", versions: int = 1, relation: str = "prefers"
) -> StandingFact:
    return StandingFact(
        fact_id=fact_id(PROJECT, relation, description),
        source="person:u",
        relation=relation,
        description=description,
        confidence=0.8,
        memory_type=memory_type,
        versions=versions,
    )


def proposed(description: str, relation: str = "prefers") -> Derived:
    fact = memory.FactAsserted(
        fact_id=fact_id(PROJECT, relation, description),
        source="person:u",
        relation=relation,  # type: ignore[arg-type]
        description=description,
    )
    return Derived(kinds.FACT_ASSERTED, fact, PROJECT, (new_event_id(),), "s", fact.fact_id)


def settled(new: Derived, *standing: StandingFact, cosine: Cosine) -> list[Derived]:
    def facts(project: str) -> Sequence[StandingFact]:
        return standing if project == PROJECT else ()

    return list(settle([new], facts, cosine))


RULE = "Always run pytest -x before you commit"


def test_two_texts_are_compared_by_the_words_recall_reads() -> None:
    assert word_set("Use a DB, use the db!") == {"use", "db"}  # stop words left out
    assert word_set("runs the tests") == word_set("running test")  # stemmed
    assert word_set("Never use pip") != word_set("Always use pip")  # but negations kept
    assert word_set("Don't squash commits") == {"t", "squash", "commit"}
    assert jaccard(word_set(RULE), word_set(RULE + ", fast")) == pytest.approx(4 / 5)


def test_a_restatement_strengthens_the_fact_it_repeats_instead_of_adding_one(cosine: Cosine) -> None:
    rule = known(RULE)
    [again] = settled(proposed(RULE + ", please"), rule, cosine=cosine)
    assert again.kind == kinds.FACT_RECONSOLIDATED
    assert isinstance(again.payload, memory.FactReconsolidated)
    assert again.payload.fact_id == rule.fact_id
    assert again.payload.confidence is not None and again.payload.confidence > rule.confidence


def test_a_hedged_restatement_weakens_the_fact(cosine: Cosine) -> None:
    rule = known(RULE)
    [again] = settled(proposed("Maybe always run pytest -x before you commit"), rule, cosine=cosine)
    assert isinstance(again.payload, memory.FactReconsolidated)
    assert again.payload.confidence is not None and again.payload.confidence < rule.confidence


def test_a_fact_of_other_words_is_a_fact_of_its_own(cosine: Cosine) -> None:
    [asserted] = settled(proposed("Always run mypy before you commit"), known(RULE), cosine=cosine)
    assert asserted.kind == kinds.FACT_ASSERTED


def test_a_fact_changes_at_most_five_times_and_an_episodic_one_never(cosine: Cosine) -> None:
    assert settled(proposed(RULE + ", please"), known(RULE, versions=5), cosine=cosine) == []
    assert settled(proposed(RULE + ", please"), known(RULE, memory_type="episodic"), cosine=cosine) == []
    [again] = settled(proposed(RULE + ", please"), known(RULE, versions=4), cosine=cosine)
    assert again.kind == kinds.FACT_RECONSOLIDATED


def test_restatements_in_one_batch_strengthen_one_fact_step_by_step(cosine: Cosine) -> None:
    rule = known(RULE)
    out = list(settle([proposed(RULE + ", please"), proposed(RULE + ".")], lambda _: [rule], cosine))
    confidences = [d.payload.confidence for d in out if isinstance(d.payload, memory.FactReconsolidated)]
    assert len(confidences) == 2 and rule.confidence < confidences[0] < confidences[1]  # type: ignore[operator]


def test_a_change_that_names_what_it_replaces_supersedes_it(cosine: Cosine) -> None:
    npm = known("Let's use npm for the frontend packages", relation="decided_for")
    other = known("Let's use Vite for the frontend build", relation="decided_for")
    new = proposed("Switch from npm to pnpm for the frontend packages", relation="decided_for")
    asserted, ended = settled(new, npm, other, cosine=cosine)
    assert asserted == new
    assert ended.kind == kinds.FACT_SUPERSEDED and isinstance(ended.payload, memory.FactSuperseded)
    assert (ended.payload.fact_id, ended.payload.by_fact_id) == (npm.fact_id, new.key)
    assert ended.caused_by == new.caused_by


def test_a_rule_from_now_on_ends_no_other_rule(cosine: Cosine) -> None:
    [asserted] = settled(
        proposed("From now on always run ruff before you commit"), known(RULE), cosine=cosine
    )
    assert asserted.kind == kinds.FACT_ASSERTED


def said(text: str, when: datetime) -> list:  # type: ignore[type-arg]
    return [
        make_event(
            kinds.PROMPT_SUBMITTED, {"prompt": text}, id=new_event_id(int(when.timestamp() * 1000)), ts=when,
            recorded_at=when, project=PROJECT, source=kinds.SOURCE_CLAUDE_CODE, session_id=f"s{when.day}",
        )
    ]  # fmt: skip


def extracted(folding: Folding, settings: Settings, events: list) -> list:  # type: ignore[type-arg]
    """Archive `events`, extract them as the job does, and fold what it emitted."""
    client = fakeredis.FakeRedis()
    segment = folding.log.append(events)
    run("extract", Segment(segment, [e.id for e in events]), client, settings)
    emitted = streamed(client)
    folding.fold(emitted)
    return emitted


def test_a_change_supersedes_the_fact_it_replaces_and_time_travel_still_finds_it(
    settings: Settings,
) -> None:
    """The seed's example: day 1 "the project uses a fixed 30-day expiration", day 15 "the project
    now uses ACT-R activation"."""
    folding = Folding(settings)
    try:
        extracted(folding, settings, said("Remember that the project uses a fixed 30-day expiration.", DAY_1))
        day_15 = DAY_1 + timedelta(days=14)
        emitted = extracted(
            folding, settings, said("Remember that the project now uses ACT-R activation.", day_15)
        )
        folding.fold()
        db = connect(settings)  # reverie sql's views, over the snapshot the projector published
        [old] = db.execute("SELECT fact_id FROM facts WHERE description LIKE '%30-day%'").fetchall()
        [new] = db.execute("SELECT fact_id FROM facts WHERE description LIKE '%ACT-R%'").fetchall()
        superseded = [msgspec.json.decode(e.payload) for e in emitted if e.kind == kinds.FACT_SUPERSEDED]
        assert [(s["fact_id"], s["by_fact_id"]) for s in superseded] == [(old[0], new[0])]

        def as_of(valid: datetime) -> list[str]:
            return [r[0] for r in db.execute("SELECT fact_id FROM facts_as_of(?, now())", [valid]).fetchall()]

        assert as_of(DAY_1 + timedelta(days=9)) == [old[0]]
        assert as_of(datetime.now(UTC)) == [new[0]]
        invalid_at, superseded_by = db.execute(
            "SELECT invalid_at, superseded_by FROM facts WHERE fact_id = ?", [old[0]]
        ).fetchone()  # type: ignore[misc]
        assert (invalid_at, superseded_by) == (day_15, new[0])  # never deleted: ended, and pointing on
    finally:
        folding.close()
