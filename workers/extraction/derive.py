"""What one batch of events teaches, as derived events: the files its tools name, the commits
git took, what the user's prompts state (decisions, rules, things to remember), and the
errors, fixes and key concepts of Claude Code's compaction summaries.

Pure: the same events always give the same derived events, with the same keys, so any worker
running the job, any number of times, emits the same events (ingest/emit.py).
"""

import hashlib
import os
from collections.abc import Iterable, Iterator
from datetime import datetime

import msgspec

from schemas import kinds, memory
from schemas.events import Event
from schemas.ontology import Relation, topic_of, tulving_type
from workers.extraction.commits import commits
from workers.extraction.files import entity_id, file_entities
from workers.extraction.statements import Said, statements
from workers.extraction.summaries import bullets


class Derived(msgspec.Struct, frozen=True):
    """A derived event to emit: what, in which project and session, from which events."""

    kind: str
    payload: msgspec.Struct
    project: str
    caused_by: tuple[str, ...]
    session_id: str | None = None
    key: str | None = None  # what names it, whatever its wording (its fact or entity id)


# what each kind of statement asserts: its relation, its subject, and where it goes in the budget
_STATED: dict[Said, tuple[Relation, str, memory.Category]] = {
    "decision": ("decided_for", "project", "decisions"),
    "rule": ("prefers", "person", "patterns"),
    "remember": ("learned_that", "project", "context"),
}


def derive(events: Iterable[Event]) -> Iterator[Derived]:
    """Everything `events` teach (see the module's docstring)."""
    events = list(events)
    for entity, project, causes in file_entities(events):
        yield Derived(kinds.ENTITY_OBSERVED, entity, project, tuple(causes), key=entity.entity_id)
    yield from _commits(events)
    yield from _statements(events)
    yield from _summaries(events)


def subject(entity_type: str, project: str) -> memory.EntityObserved:
    """The entity a project's facts are about: the project itself, or its user."""
    name = (os.path.basename(project.rstrip("/\\")) or project) if entity_type == "project" else "the user"
    return memory.EntityObserved(
        entity_id=entity_id(entity_type, project if entity_type == "project" else "user", project),
        type=entity_type,  # type: ignore[arg-type]
        name=name,
        normalized_name=name.lower(),
        properties={"project": project},
    )


def fact_id(project: str, *said: str) -> str:
    """A fact's id: the same statement in the same project is one fact."""
    digest = hashlib.blake2b("\0".join([project, *said]).lower().encode(), digest_size=10).hexdigest()
    return f"fact:{digest}"


def _fact(
    event: Event,
    about: memory.EntityObserved,
    relation: Relation,
    description: str,
    *,
    category: memory.Category,
    dimensions: memory.Dimensions,
    network: memory.Network = "world",
    valid_at: datetime | None = None,  # a moment's fact; a standing one holds from when it was said
) -> Iterator[Derived]:
    fact = memory.FactAsserted(
        fact_id=fact_id(event.project, relation, description),
        source=about.entity_id,
        relation=relation,
        description=description,
        memory_type=tulving_type(relation, description, valid_at, event.recorded_at),
        network=network,
        category=category,
        topic=topic_of(description),
        dimensions=dimensions,
        valid_at=valid_at,
    )
    causes = (event.id,)
    yield Derived(kinds.ENTITY_OBSERVED, about, event.project, causes, event.session_id, about.entity_id)
    yield Derived(kinds.FACT_ASSERTED, fact, event.project, causes, event.session_id, fact.fact_id)


def _commits(events: list[Event]) -> Iterator[Derived]:
    by_id = {e.id: e for e in events}
    for commit in commits(events):
        event = by_id[commit.event_id]
        said = f"Commit {commit.sha[:7]} on {commit.branch}: {commit.subject}"
        description = f"{said}\n{commit.body}" if commit.body else said
        dimensions = memory.Dimensions(what=commit.subject, when=event.ts.isoformat(), where=commit.branch)
        yield from _fact(
            event,
            subject("project", event.project),
            "created",
            description,
            network="experience",
            category="decisions",
            dimensions=dimensions,
            valid_at=event.ts,
        )


def _statements(events: list[Event]) -> Iterator[Derived]:
    for event in events:
        if event.kind != kinds.PROMPT_SUBMITTED:
            continue
        prompt = msgspec.json.decode(event.payload).get("prompt")
        for statement in statements(prompt if isinstance(prompt, str) else ""):
            relation, about, category = _STATED[statement.said]
            dimensions = memory.Dimensions(what=statement.text, who="the user", when=event.ts.isoformat())
            yield from _fact(
                event,
                subject(about, event.project),
                relation,
                statement.text,
                category=category,
                dimensions=dimensions,
            )


def _summaries(events: list[Event]) -> Iterator[Derived]:
    by_id = {e.id: e for e in events}
    for bullet in bullets(events):
        event = by_id[bullet.event_id]
        project = subject("project", event.project)
        if bullet.section == "errors":
            relation: Relation = "solved_by" if bullet.solved else "blocked_by"
            dimensions = memory.Dimensions(what=bullet.text.split(":", 1)[0], when=event.ts.isoformat())
            yield from _fact(
                event,
                project,
                relation,
                bullet.text,
                category="errors",
                network="experience",
                dimensions=dimensions,
            )
        else:
            dimensions = memory.Dimensions(what=bullet.text)
            yield from _fact(event, project, "uses", bullet.text, category="stack", dimensions=dimensions)
