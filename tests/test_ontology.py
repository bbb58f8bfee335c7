"""The ontology: HORA's 34 relations in 6 categories, every other relation normalized onto them
(never refused), and the deterministic rules that type a fact."""

from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import get_args

import msgspec
import pytest

from schemas import memory
from schemas.ontology import CATEGORY_OF, RELATIONS, normalize_relation, topic_of, tulving_type

NOW = datetime(2026, 11, 23, tzinfo=UTC)


def test_the_listed_relations_in_six_categories() -> None:
    assert len(RELATIONS) == 33 == len(set(RELATIONS))  # as listed by name (the count given is 34)
    assert set(CATEGORY_OF) == set(RELATIONS)
    sizes = Counter(CATEGORY_OF.values())
    assert sizes == {
        "structural": 7,
        "technological": 4,
        "learning": 7,
        "experience": 4,
        "actor": 6,
        "conceptual": 5,
    }
    assert CATEGORY_OF["solved_by"] == "learning" and CATEGORY_OF["hosts"] == "structural"


def test_entity_types_are_horas_and_memory_fabrics() -> None:
    types = set(get_args(memory.EntityType))
    hora = {
        "project",
        "tool",
        "error_pattern",
        "preference",
        "concept",
        "person",
        "file",
        "library",
        "pattern",
        "decision",
    }
    assert hora | {"agent", "technology", "anti_pattern"} <= types
    assert types - hora - {"agent", "technology", "anti_pattern"} == {"command"}


@pytest.mark.parametrize(
    ("stated", "relation", "backwards"),
    [
        ("uses", "uses", False),
        ("Solved By", "solved_by", False),
        ("depends-on", "depends_on", False),
        ("involves", "related_to", False),
        ("ecosystem", "has_component", False),
        ("part_of", "has_component", True),
        ("USES", "uses", False),
        ("RECOMMENDS", "works_well_for", True),
        ("REQUIRES", "depends_on", False),
        ("ENABLES", "works_well_for", False),
        ("PREFERS", "prefers", False),
        ("CHOSE_OVER", "performs_better_than", False),
        ("USED_FOR", "works_well_for", False),
        ("DEPENDS_ON", "depends_on", False),
        ("BLOCKED_BY", "blocked_by", False),
        ("is totally unheard of", "related_to", False),
    ],
)
def test_any_relation_is_normalized_onto_the_ontology(stated: str, relation: str, backwards: bool) -> None:
    normalized = normalize_relation(stated)
    assert (normalized.relation, normalized.reversed) == (relation, backwards)
    spelled_alike = stated.lower().replace(" ", "_").replace("-", "_") == relation
    assert normalized.stated == (None if spelled_alike else stated)  # how it was put, when it differs


def test_a_fact_with_a_relation_outside_the_ontology_is_not_an_event() -> None:
    fact = {"fact_id": "f", "source": "e", "relation": "involves", "description": "x"}
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert(fact, memory.FactAsserted)


@pytest.mark.parametrize(
    ("relation", "description", "valid_days_before", "kind"),
    [
        ("solved_by", "the flaky test was fixed by pinning the seed", None, "procedural"),
        ("uses", "on 2026-11-02 the deploy failed", None, "episodic"),
        ("uses", "in this session we moved to uv", None, "episodic"),
        ("uses", "yesterday the cache broke", None, "episodic"),
        ("uses", "hier le cache a cassé", None, "episodic"),
        ("uses", "aujourd'hui on passe à uv", None, "episodic"),
        ("uses", "the cache broke", 1, "episodic"),
        ("uses", "the project uses DuckDB", 3, "semantic"),
        ("uses", "the project uses DuckDB", None, "semantic"),
    ],
)
def test_tulving_types_by_horas_rules(
    relation: str, description: str, valid_days_before: int | None, kind: str
) -> None:
    valid_at = None if valid_days_before is None else NOW - timedelta(days=valid_days_before)
    assert tulving_type(relation, description, valid_at, NOW) == kind


@pytest.mark.parametrize(
    ("text", "topic"),
    [
        ("we decided to keep Postgres for the queue", "decision"),
        ("the query on the orders table is slow", "database"),
        ("pytest fixtures share one server", "testing"),
        ("the docker image is pushed on release", "deployment"),
        ("rotate the secrets before the audit", "security"),
        ("the cursor for the next page is opaque", "pagination"),
        ("good morning", None),
    ],
)
def test_the_topic_is_the_first_by_priority_whose_keywords_a_text_holds(text: str, topic: str | None) -> None:
    assert topic_of(text) == topic
