"""The ontology memory is written in: relations and their categories, how free-form relations
map onto them, and the deterministic rules that type a fact (Tulving's kind of memory, Memory
Fabric's topic).

Every rule here is a pure function of its arguments: two workers typing the same fact agree,
and a replay never needs them (the types travel in the events).
"""

import re
from datetime import datetime, timedelta
from typing import Literal, get_args

import msgspec

RelationCategory = Literal["structural", "technological", "learning", "experience", "actor", "conceptual"]
# HORA's relations in its 6 categories: the 33 the issue lists by name (it counts 34).
Relation = Literal[
    "has_component", "depends_on", "extends", "implements", "configures", "replaces", "hosts",
    "uses", "integrates", "built_with", "migrated_from",
    "decided_for", "decided_against", "learned_that", "caused_by", "solved_by", "blocked_by",
    "workaround_for",
    "works_well_for", "fails_for", "performs_better_than", "anti_pattern_in",
    "works_on", "prefers", "frustrated_with", "satisfied_with", "created", "maintains",
    "related_to", "inspired_by", "contradicts", "specializes", "exemplifies",
]  # fmt: skip
_CATEGORIES: dict[RelationCategory, str] = {
    "structural": "has_component depends_on extends implements configures replaces hosts",
    "technological": "uses integrates built_with migrated_from",
    "learning": "decided_for decided_against learned_that caused_by solved_by blocked_by workaround_for",
    "experience": "works_well_for fails_for performs_better_than anti_pattern_in",
    "actor": "works_on prefers frustrated_with satisfied_with created maintains",
    "conceptual": "related_to inspired_by contradicts specializes exemplifies",
}
RELATIONS: tuple[Relation, ...] = get_args(Relation)
CATEGORY_OF: dict[str, RelationCategory] = {
    relation: category for category, relations in _CATEGORIES.items() for relation in relations.split()
}

# What other vocabularies call a relation: reverie's own before this ontology, Memory Fabric's
# (USES, RECOMMENDS, ...) and common free-form words. `reversed`: the ontology's relation
# reads the other way ("A part_of B" is "B has_component A").
ALIASES: dict[str, tuple[Relation, bool]] = {
    # reverie before the ontology
    "part_of": ("has_component", True),
    "is_a": ("specializes", False),
    "calls": ("depends_on", False),
    "defines": ("has_component", False),
    "tests": ("related_to", False),
    "fixes": ("solved_by", True),
    "causes": ("caused_by", True),
    "breaks": ("blocked_by", True),
    "avoids": ("decided_against", False),
    "decided": ("decided_for", False),
    "owns": ("maintains", False),
    "located_in": ("hosts", True),
    # Memory Fabric's (USES, PREFERS, DEPENDS_ON and BLOCKED_BY are the ontology's own)
    "recommends": ("works_well_for", True),
    "requires": ("depends_on", False),
    "enables": ("works_well_for", False),
    "chose_over": ("performs_better_than", False),
    "used_for": ("works_well_for", False),
    # free-form
    "involves": ("related_to", False),
    "ecosystem": ("has_component", False),
    "contains": ("has_component", False),
    "includes": ("has_component", False),
    "has": ("has_component", False),
    "needs": ("depends_on", False),
    "depends": ("depends_on", False),
    "use": ("uses", False),
    "using": ("uses", False),
    "used": ("uses", False),
    "built_on": ("built_with", False),
    "fixed_by": ("solved_by", False),
    "resolved_by": ("solved_by", False),
    "blocks": ("blocked_by", True),
    "replaced": ("replaces", False),
    "chose": ("decided_for", False),
    "chosen": ("decided_for", False),
    "rejected": ("decided_against", False),
    "likes": ("prefers", False),
    "dislikes": ("frustrated_with", False),
    "migrated_to": ("migrated_from", True),
    "about": ("related_to", False),
}


class NormalizedRelation(msgspec.Struct, frozen=True):
    relation: Relation
    reversed: bool = False  # the source and target swap places
    stated: str | None = None  # the relation as it was stated, when the ontology's differs


def normalize_relation(stated: str) -> NormalizedRelation:
    """The ontology's relation for `stated` (any case, spaces or dashes): never refused, an
    unknown relation is `related_to`, and keeps how it was stated."""
    key = re.sub(r"[\s\-]+", "_", stated.strip().lower())
    if key in CATEGORY_OF:
        return NormalizedRelation(key)  # type: ignore[arg-type]
    relation, backwards = ALIASES.get(key, ("related_to", False))
    return NormalizedRelation(relation, backwards, stated)


# Tulving's kinds of long-term memory, by HORA's deterministic rules: a procedural relation says
# how to do something; markers of a moment (an ISO date, "session", "yesterday", in French too)
# or a fact valid within 48 h of when it was learned make it episodic; else it is semantic.
MemoryType = Literal["episodic", "semantic", "procedural"]
PROCEDURAL: frozenset[str] = frozenset(
    {
        "implements",
        "configures",
        "solved_by",
        "workaround_for",
        "works_well_for",
        "fails_for",
        "anti_pattern_in",
    }
)
_EPISODIC = re.compile(
    r"\b(?:\d{4}-\d{2}-\d{2}|sessions?|yesterday|hier|aujourd'hui)\b",
    re.IGNORECASE,
)
_RECENT = timedelta(hours=48)


def tulving_type(
    relation: str, description: str, valid_at: datetime | None, learned_at: datetime
) -> MemoryType:
    """Which kind of memory a fact is (see the rules above)."""
    if relation in PROCEDURAL:
        return "procedural"
    if _EPISODIC.search(description) or (valid_at is not None and abs(learned_at - valid_at) <= _RECENT):
        return "episodic"
    return "semantic"


# Memory Fabric's 17 topics, in its order of priority: the first whose keywords a text holds.
Topic = Literal[
    "decision", "architecture", "pattern", "blocker", "constraint", "pagination", "database",
    "authentication", "api", "frontend", "performance", "testing", "deployment", "observability",
    "ai-ml", "data-pipeline", "security",
]  # fmt: skip
_TOPIC_WORDS: dict[Topic, str] = {
    "decision": r"decided?|decision|chose|chosen|choose|opted|go with|went with|switch(?:ed)? (?:from|to)|"
    r"instead of",
    "architecture": r"architecture|architectural|design|layer(?:s|ing)?|modules?|components?|monolith|"
    r"microservices?|event[- ]sourc\w*|schema",
    "pattern": r"pattern|convention|idiom|always|never|best practice|anti[- ]pattern",
    "blocker": r"block(?:ed|er|s)?|stuck|cannot|can't|unable|fail(?:s|ed|ing|ure)?|broken|crash\w*|error",
    "constraint": r"constraint|must(?:n't)?|limit(?:s|ed)?|requirement|only|at most|at least|budget",
    "pagination": r"paginat\w*|cursor|offset|page size|next page",
    "database": r"database|sql|postgres\w*|mysql|sqlite|duckdb|redis|mongo\w*|migration|table|query|index",
    "authentication": r"auth\w*|login|logout|oauth|jwt|token|session cookie|password|credential",
    "api": r"api|endpoint|rest|graphql|grpc|http|request|response|webhook|route",
    "frontend": r"frontend|front-end|react|vue|svelte|css|html|ui|component|browser|tailwind",
    "performance": r"performance|latency|slow|fast(?:er)?|speed|throughput|memory|cache|optimi[sz]\w*|"
    r"p99|p50",
    "testing": r"tests?|testing|pytest|jest|unit test|integration test|coverage|fixture|assert\w*|mock\w*",
    "deployment": r"deploy\w*|release|ci|cd|pipeline|docker|kubernetes|k8s|helm|production|staging",
    "observability": r"log(?:s|ging)?|metric(?:s)?|trac(?:e|ing)|monitor\w*|alert\w*|dashboard|sentry",
    "ai-ml": r"llm|model|embedding\w*|ml|machine learning|prompt|claude|gpt|openai|anthropic|inference",
    "data-pipeline": r"etl|pipeline|ingest\w*|batch(?:es)?|stream(?:s|ing)?|kafka|parquet|airflow",
    "security": r"security|secrets?|vulnerab\w*|cve|xss|csrf|injection|permissions?|encrypt\w*|"
    r"sanitiz\w*",
}
_TOPICS = [(topic, re.compile(rf"\b(?:{words})\b", re.IGNORECASE)) for topic, words in _TOPIC_WORDS.items()]


def topic_of(text: str) -> Topic | None:
    """The first topic, by priority, whose keywords `text` holds; None if none does."""
    return next((topic for topic, words in _TOPICS if words.search(text)), None)
