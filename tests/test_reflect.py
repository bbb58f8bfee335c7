"""Reflection: an opinion weighed from evidence for and against, shaped by the disposition, and
the disposition read from the project's file with a clear answer when it is wrong."""

import pathlib
from datetime import UTC, datetime

import msgspec
import pytest

from schemas.disposition import BadDisposition, Disposition, disposition
from schemas.recall import Scored
from schemas.settings import Settings
from workers.dynamics.reflect import NEAR, opinion_id, reflect, stance, subject, weigh


def scored(memory_id: str, text: str, relevance: float = 1.0, kind: str = "fact", **more: float) -> Scored:
    values = {"activation": 0.0, "recency": 1.0, "confidence": 1.0, "similarity": 0.0, **more}
    return Scored(
        memory_id, kind, text, None, "p", None, None, relevance, relevance, values["activation"], 1.0,
        values["recency"], values["confidence"], ["vector"], {}, similarity=values["similarity"],
    )  # fmt: skip


def test_a_memory_contradicts_when_it_says_something_failed_or_is_to_be_avoided() -> None:
    assert stance("DuckDB fits the analytics workload") == "supports"
    assert stance("DuckDB failed under concurrent writers") == "contradicts"
    assert stance("we no longer use DuckDB for the queue") == "contradicts"
    assert stance("on n'utilise pas DuckDB pour la file") == "contradicts"
    assert stance("la migration a échoué") == "contradicts"


def test_a_memory_that_chose_another_option_contradicts_a_question_about_it() -> None:
    chosen = "we chose PostgreSQL over MySQL because of JSONB"
    assert stance(chosen, "should we use MySQL?") == "contradicts"
    assert stance(chosen, "should we drop MySQL?") == "supports"
    assert stance(chosen, "should we use PostgreSQL?") == "supports"
    for other in ("use Postgres instead of MySQL", "we dropped MySQL last year", "we no longer use MySQL"):
        assert stance(other, "should we use MySQL?") == "contradicts"
    assert stance("MySQL worked well for the reports", "should we use MySQL?") == "supports"


def test_the_questions_earlier_copies_are_no_evidence_and_the_opinion_names_its_question() -> None:
    results = [
        scored("q", "should we use MySQL?", kind="prompt"),
        scored("f", "we chose PostgreSQL over MySQL because of JSONB", 0.9),
    ]
    formed = reflect("Should we use MySQL?", "p", results, Disposition())
    assert [e.memory_id for e in formed.contradicting] == ["f"] and formed.supporting == []
    assert formed.statement.startswith("On 'Should we use MySQL?', memory argues against it: we chose")


def test_evidence_below_an_earlier_question_and_nothing_else_still_argues() -> None:
    # recall scales relevance from its worst candidate (0) to its best: here the question asked
    # before, which is no evidence, so the choice is at 0 and must still count
    results = [
        scored("q", "should we use MySQL?", kind="prompt"),
        scored("f", "we chose PostgreSQL over MySQL because of JSONB", 0.0),
    ]
    formed = reflect("should we use MySQL?", "p", results, Disposition())
    assert [e.memory_id for e in formed.contradicting] == ["f"] and formed.confidence > 0.5


def test_memory_that_holds_nothing_makes_an_even_opinion() -> None:
    formed = reflect("should we use DuckDB?", "p", [], Disposition())
    assert formed.confidence == 0.5 and not formed.supporting and not formed.contradicting
    assert (
        formed.statement == "On 'should we use DuckDB?', memory does not know: nothing it holds speaks to it."
    )
    assert formed.opinion_id == opinion_id("p", "Should we use  DuckDB?")  # case and spaces aside


# what recall gives for "should we use numpy in calc?" in a project about calc: the nearest
# memories by the model's cosine (all-MiniLM-L6-v2's, measured) and by words, none about numpy
UNRELATED = [
    scored("m1", "calc.py has an add function and a subtract function", 1.0, similarity=0.46),
    scored("m2", "add a subtract function", 0.9, kind="episode", similarity=0.27),
    scored("m3", "test_add is failing", 0.8, kind="episode", similarity=0.07),
    scored("m4", "The users table migration adds an email column", 0.7, similarity=-0.04),
    scored("m5", "the calc CLI prints the result with two decimals", 0.6, similarity=0.4),
]
NUMPY = "should we use numpy in calc?"


def test_a_question_asks_about_its_subject_not_where_it_is_asked() -> None:
    assert subject(NUMPY) == {"numpi": True}
    assert subject("should we rely on numpy in calc?") == {"numpi": True}  # the verb frames it
    assert subject("in calc, should we avoid numpy?") == {"numpi": False}
    assert subject("should we use MySQL for the new service?") == {"mysql": True, "sql": True}  # My SQL
    assert subject("is it a good idea to keep pandas?") == {"panda": True}
    assert subject("staging cluster") == {"stage": True, "cluster": True}
    assert subject("what do you think?") == {}


def test_unrelated_memories_are_no_support_memory_does_not_know() -> None:
    formed = reflect(NUMPY, "p", UNRELATED, Disposition())
    assert formed.supporting == [] and formed.contradicting == []
    assert formed.statement == f"On {NUMPY!r}, memory does not know: nothing it holds speaks to it."
    assert formed.confidence == 0.5 and not formed.promote


def test_an_anti_pattern_about_the_subject_argues_against_it_whatever_else_recall_found() -> None:
    anti = scored(
        "a", "Anti-pattern (it failed): numpy in calc.py made the CLI start in 2 s", 0.5,
        kind="remembered", similarity=0.52,
    )  # fmt: skip
    formed = reflect(NUMPY, "p", [*UNRELATED, anti], Disposition())
    assert [e.memory_id for e in formed.contradicting] == ["a"] and formed.supporting == []
    assert formed.statement.startswith(f"On {NUMPY!r}, memory argues against it: Anti-pattern")
    assert formed.confidence > 0.5
    # literalism 5 keeps what matches half as well as the best that speaks: the anti-pattern is it
    assert [e.memory_id for e in weigh([*UNRELATED, anti], Disposition(literalism=5), NUMPY)] == ["a"]
    # so is a rule against it, and a statement of what went wrong with it
    for against in (
        "never use numpy in calc",
        "don't add numpy, the wheel is 30 MB",
        "numpy broke the build",
    ):
        assert stance(against, NUMPY) == "contradicts", against
    assert stance("numpy made the matrix code ten times faster", NUMPY) == "supports"


def test_a_memory_speaks_without_the_questions_words_only_when_the_model_puts_it_very_near() -> None:
    near = scored("n", "is a numerical library worth it for the calculator?", 0.5, similarity=NEAR)
    loose = scored("l", "the calculator should stay dependency-free", 0.5, similarity=0.31)
    assert [e.memory_id for e in weigh([near, loose, *UNRELATED], Disposition(), NUMPY)] == ["n"]


def test_evidence_for_outweighs_evidence_against_and_both_are_surfaced() -> None:
    results = [
        scored("a", "DuckDB fits the analytics workload", 1.0),
        scored("b", "DuckDB queries ran in milliseconds on the events", 0.9),
        scored("c", "DuckDB failed under concurrent writers", 0.8),
    ]
    formed = reflect("DuckDB for analytics", "p", results, Disposition())
    assert formed.statement.startswith("On 'DuckDB for analytics', memory supports it: DuckDB fits")
    assert [e.memory_id for e in formed.supporting] == ["a", "b"]
    assert [e.memory_id for e in formed.contradicting] == ["c"]
    assert 0.5 < formed.confidence < 0.9 and not formed.promote


def test_skepticism_asks_for_more_evidence() -> None:
    results = [scored(str(i), f"pytest -x catches it early {i}") for i in range(6)]
    asked = "should we run pytest with -x?"
    trusting = reflect(asked, "p", results, Disposition(skepticism=1)).confidence
    doubting = reflect(asked, "p", results, Disposition(skepticism=5)).confidence
    assert trusting > doubting > 0.5
    assert reflect(asked, "p", results, Disposition(skepticism=1)).promote  # (6 + 0.25) / (6 + 0.5) > 0.9


def test_literalism_drops_loose_matches_and_empathy_weighs_the_users_words() -> None:
    results = [scored("close", "uv for every project", 1.0), scored("loose", "uv lock is fine", 0.3)]
    asked = "should we use uv?"
    assert {e.memory_id for e in weigh(results, Disposition(literalism=1), asked)} == {"close", "loose"}
    assert {e.memory_id for e in weigh(results, Disposition(literalism=5), asked)} == {"close"}
    said = [
        scored("user", "use uv in each project", kind="prompt"),
        scored("agent", "use uv in each project"),
    ]
    [user, agent] = weigh(said, Disposition(empathy=5), asked)
    assert user.weight == pytest.approx(1.5 * agent.weight)


def test_the_disposition_comes_from_the_projects_file(tmp_path: pathlib.Path) -> None:
    assert disposition(str(tmp_path)) == Disposition()
    (tmp_path / ".reverie.toml").write_text('[reflect]\nskepticism = 5\nbackground = "a CLI"\n')
    assert disposition(str(tmp_path)) == Disposition(skepticism=5, background="a CLI")
    (tmp_path / ".reverie.toml").write_text("[reflect]\nempathy = 9\n")
    with pytest.raises(BadDisposition, match="1 to 5"):
        disposition(str(tmp_path))


def test_an_opinion_is_recorded_then_revised_by_new_evidence(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    """With the stack down, the events wait in the spool; folded, the next reflection revises."""
    from ingest.spool import spooled
    from reverie import reflecting
    from reverie.testing import Folding, make_event
    from schemas import kinds
    from schemas.events import decode_event
    from schemas.recall import Recall

    prompt = make_event(
        kinds.PROMPT_SUBMITTED, {"prompt": "DuckDB fits"}, id="01JCZ0000000000000000000AB",
        ts=datetime(2026, 11, 1, tzinfo=UTC), recorded_at=datetime(2026, 11, 1, tzinfo=UTC),
        project=str(tmp_path), source=kinds.SOURCE_CLAUDE_CODE, session_id="s1",
    )  # fmt: skip
    folding = Folding(settings)
    folding.fold([prompt])
    evidence = [scored(prompt.id, "DuckDB fits the analytics workload", kind="prompt")]
    monkeypatch.setattr(reflecting, "find", lambda *_: Recall("q", "question", [], None, list(evidence)))

    def recorded() -> list[tuple[str, dict[str, object]]]:
        events = [decode_event(open(path, "rb").read()) for path in spooled(settings.spool_dir)]
        return [(e.kind, msgspec.json.decode(e.payload)) for e in events]

    first = reflecting.reflection(settings, "DuckDB for analytics?", str(tmp_path), kinds.SOURCE_CLI)
    [(kind, formed)] = recorded()
    assert kind == kinds.OPINION_FORMED and formed["confidence"] == first.confidence > 0.5
    folding.fold([decode_event(open(p, "rb").read()) for p in spooled(settings.spool_dir)])
    evidence.append(scored(prompt.id, "DuckDB failed under concurrent writers", kind="fact"))
    second = reflecting.reflection(settings, "DuckDB for analytics?", str(tmp_path), kinds.SOURCE_CLI)
    assert second.revised_from == first.confidence and second.confidence < first.confidence
    assert [e.memory_id for e in second.contradicting] == [prompt.id]
    assert [k for k, _ in recorded()].count(kinds.OPINION_REVISED) == 1
    folding.close()
