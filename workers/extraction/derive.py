"""What one batch of events teaches, as derived events: the files its tools name, the commits
git took, the pull requests and issues the agent filed and closed, what the user's prompts
state (decisions, rules, things to remember), the errors, fixes and key concepts of Claude
Code's compaction summaries, and the dependencies of the manifests its agent read. What a
whole session's commands teach (errors and their fixes, the checks it ran): `derive_session`.

Pure: the same events always give the same derived events, with the same keys, so any worker
running the job, any number of times, emits the same events (ingest/emit.py).
"""

import os
from collections.abc import Iterable, Iterator
from datetime import datetime

import msgspec

from projections.recall.words import word_set
from schemas import kinds, memory, observed
from schemas.events import Event
from schemas.memory import corrected_fact_id, fact_id
from schemas.ontology import Relation, topic_of, tulving_type
from schemas.outcomes import read
from workers.evidence.failures import CHECKS, Fixed, as_run, error_line, fixes, runs
from workers.evidence.statements import StatementKind, statements
from workers.extraction.commits import commits
from workers.extraction.files import canonical_name, entity_id, file_entities, relative, root_of
from workers.extraction.manifests import dependencies
from workers.extraction.records import records
from workers.extraction.steps import steps
from workers.extraction.summaries import bullets
from workers.thinking.follower import Derived

_QUOTED = 200  # characters of an error line a lesson quotes
_RUNNERS = frozenset(
    ["mix", "npm", "pnpm", "yarn", "bun", "npx", "run", "python", "python3", "uv", "cargo", "go", "make", "m"]
)
# what each kind of statement asserts: its relation, its subject, and where it goes in the budget
_STATED: dict[StatementKind, tuple[Relation, str, memory.Category]] = {
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
    yield from _records(events)
    yield from _statements(events)
    yield from _corrections(events)
    yield from _summaries(events)
    yield from _dependencies(events)


def derive_session(events: list[Event]) -> Iterator[Derived]:
    """What a whole session's commands teach (one session's events, in any order): the errors
    they met, as `error_pattern` entities, what fixed each (`solved_by`: the edits and commands
    before the same command no longer failed that way), and the checks it ran (tests, builds,
    linters) as `command` entities with how often they ran and failed. A check left failing
    blocks the work (`blocked_by`) unless a later commit or the user's approval shows it solved
    (schemas/outcomes.py)."""
    by_id = {e.id: e for e in events}
    blocking = {e.step.event_id for e in read(steps(events)).blockers}
    for fixed in fixes(events):
        event = by_id[fixed.failure.event_id]
        error = error_entity(fixed.signature, event.project)
        yield Derived(
            kinds.ENTITY_OBSERVED, error, event.project, (event.id,), event.session_id, error.entity_id
        )
        if fixed.then is not None and (fixed.edited or fixed.ran):
            yield from _solved(by_id[fixed.then.event_id], event, error, fixed)
        elif fixed.then is None and _left_failing(fixed, events) and fixed.failure.event_id in blocking:
            yield from _unsolved(event, error, fixed)
    yield from _overruled(events)
    yield from _checks(events)


def _overruled(events: list[Event]) -> Iterator[Derived]:
    """The errors a compaction summary called unresolved that the session's checks overrule: a
    check that speaks of the error (its command names a word the bullet holds: `mix dialyzer`
    for "Dialyzer false positive (UNRESOLVED)") ran after the summary, and its last run passed
    (the tools have the last word, as for the episode's outcome). The block ends there."""
    ordered = sorted(events, key=lambda e: (e.ts, e.id))
    at = {e.id: i for i, e in enumerate(ordered)}
    checks = [(at[r.event_id], r) for r in runs(ordered) if CHECKS.match(r.key)]
    last = {r.key: (i, r) for i, r in checks}
    for bullet in bullets(ordered):
        if bullet.section != "errors" or bullet.solved:
            continue
        said, named = ordered[at[bullet.event_id]], word_set(bullet.text)
        speaking = {r.key for i, r in checks if i > at[bullet.event_id] and _checked(r.key) & named}
        passed = [last[key] for key in speaking if not last[key][1].failed]
        if not speaking or len(passed) < len(speaking):
            continue
        passed_at, run = max(passed, key=lambda p: p[0])
        block = fact_id(said.project, "blocked_by", bullet.text)
        ended = memory.FactSuperseded(
            fact_id=block,
            invalid_at=ordered[passed_at].ts,
            reason=f"`{as_run(run)}` passed after the summary, to the session's end",
        )
        causes = (said.id, run.event_id)
        yield Derived(kinds.FACT_SUPERSEDED, ended, said.project, causes, said.session_id, f"{block}>passed")


def _checked(key: str) -> frozenset[str]:
    """What a check's command says it checks: its words but the runner's (`mix`, `npm`, `uv`...)."""
    return word_set(key) - _RUNNERS


def _left_failing(fixed: Fixed, events: list[Event]) -> bool:
    """Whether a test, build or lint still failed this way when the session ended: its last run."""
    if not CHECKS.match(fixed.failure.key):
        return False
    last = [r for r in runs(sorted(events, key=lambda e: (e.ts, e.id))) if r.key == fixed.failure.key][-1]
    return last.event_id == fixed.failure.event_id


def _unsolved(failed: Event, error: memory.EntityObserved, fixed: Fixed) -> Iterator[Derived]:
    """A check the session left failing: what blocks the work, until a later fix ends it."""
    said = _quoted(error_line(fixed.failure.output))
    description = f"`{as_run(fixed.failure)}` still failed when the session ended: {said}"
    fact = memory.FactAsserted(
        fact_id=fact_id(failed.project, "blocked_by", error.entity_id),
        source=subject("project", failed.project).entity_id,
        relation="blocked_by",
        target=error.entity_id,
        description=description,
        memory_type="episodic",
        network="experience",
        category="errors",
        topic=topic_of(description),
        dimensions=memory.Dimensions(what=fixed.signature, when=failed.ts.isoformat()),
        valid_at=failed.ts,
    )
    project = subject("project", failed.project)
    yield Derived(
        kinds.ENTITY_OBSERVED, project, failed.project, (failed.id,), failed.session_id, project.entity_id
    )
    yield Derived(kinds.FACT_ASSERTED, fact, failed.project, (failed.id,), failed.session_id, fact.fact_id)


def _quoted(line: str) -> str:
    """An error line as a lesson quotes it: verbatim, cut to _QUOTED characters."""
    line = line.strip()
    return line if len(line) <= _QUOTED else line[: _QUOTED - 1] + "…"


def error_entity(signature: str, project: str) -> memory.EntityObserved:
    """The entity of an error, by its signature (workers/evidence/failures.py)."""
    return memory.EntityObserved(
        entity_id=entity_id("error_pattern", signature, project),
        type="error_pattern",
        name=signature,
        normalized_name=signature.lower(),
        properties={"project": project},
    )


def _solved(then: Event, failed: Event, error: memory.EntityObserved, fixed: Fixed) -> Iterator[Derived]:
    how = []
    if fixed.edited:
        root = root_of(then)
        files = [relative(p, root) if os.path.isabs(p) else p for p in fixed.edited]
        how.append(
            "editing " + ", ".join(files[:5]) + (f" and {len(files) - 5} more" if len(files) > 5 else "")
        )
    if fixed.ran:
        how.append("running " + "; ".join(f"`{c}`" for c in fixed.ran[:3]))
    said = _quoted(error_line(fixed.failure.output)).rstrip(".: ")
    description = f"`{as_run(fixed.failure)}` failed with: {said}. Fixed by {' and '.join(how)}."
    fact = memory.FactAsserted(
        fact_id=fact_id(then.project, "solved_by", error.entity_id, description),
        source=error.entity_id,
        relation="solved_by",
        description=description,
        memory_type=tulving_type("solved_by", description, None, then.recorded_at),
        network="experience",
        category="errors",
        topic=topic_of(description),
        dimensions=memory.Dimensions(what=fixed.signature, when=failed.ts.isoformat(), why=" and ".join(how)),
    )
    causes = tuple(sorted({failed.id, *fixed.between}))
    yield Derived(kinds.FACT_ASSERTED, fact, then.project, causes, then.session_id, fact.fact_id)


def _checks(events: list[Event]) -> Iterator[Derived]:
    """The tests, builds and linters a session ran, an entity each, with its runs and failures."""
    by_id = {e.id: e for e in events}
    ran: dict[tuple[str, str], list[tuple[str, bool]]] = {}
    for run in runs(sorted(events, key=lambda e: (e.ts, e.id))):
        if CHECKS.match(run.key):
            ran.setdefault((by_id[run.event_id].project, run.key), []).append((run.event_id, run.failed))
    for (project, key), outcomes in sorted(ran.items()):
        failed = sum(1 for _, f in outcomes if f)
        entity = memory.EntityObserved(
            entity_id=entity_id("command", key, project),
            type="command",
            name=key,
            normalized_name=key,
            properties={
                "project": project,
                "runs": len(outcomes),
                "failures": failed,
                "last": "failed" if outcomes[-1][1] else "passed",
            },
        )
        last = by_id[outcomes[-1][0]]
        causes = tuple(sorted(event_id for event_id, _ in outcomes))
        yield Derived(kinds.ENTITY_OBSERVED, entity, project, causes, last.session_id, entity.entity_id)


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


def _records(events: list[Event]) -> Iterator[Derived]:
    """The pull requests and issues the agent filed, and why it closed them, as what it did."""
    by_id = {e.id: e for e in events}
    for record in records(events):
        event = by_id[record.event_id]
        dimensions = memory.Dimensions(what=record.text, when=event.ts.isoformat())
        yield from _fact(
            event,
            subject("project", event.project),
            "created",
            f"{record.what}: {record.text}",
            network="experience",
            category="decisions",
            dimensions=dimensions,
            valid_at=event.ts,
        )


def _statements(events: list[Event]) -> Iterator[Derived]:
    """What the user states: their own prompts only (a subagent's prompt is the agent's task)."""
    for event in events:
        if event.kind != kinds.PROMPT_SUBMITTED or event.agent != "main":
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


def _corrections(events: list[Event]) -> Iterator[Derived]:
    """What holds where the user corrected a fact: a standing fact in their words about what the
    wrong one was about (its subject, relation and object: the graph links it where the wrong one
    was), with full confidence and the user as who said it; the wrong one superseded by it from
    the correction on, and so are the prompts that stated the wrong one (`stated_in`). All are
    of the correction's time, after every event of the wrong fact (its newest is a cause). The
    supersession comes first: settling then takes the new fact as said (workers/extraction/
    settling.py), never as a restatement of another."""
    for event in events:
        if event.kind != kinds.FACT_CORRECTED:
            continue
        said = msgspec.json.decode(event.payload, type=observed.FactCorrected)
        right = corrected_fact_id(event.project, said.fact_id, said.text)
        asserted = memory.FactAsserted(
            fact_id=right,
            source=said.source,
            relation=said.relation,
            target=said.target,
            description=said.text,
            confidence=1.0,
            # a standing fact, whatever the wrong one was (a procedure stays one)
            memory_type="procedural" if said.memory_type == "procedural" else "semantic",
            network=said.network,
            category=said.category,
            topic=topic_of(said.text),
            dimensions=memory.Dimensions(what=said.text, who="the user", when=event.ts.isoformat()),
            scope=said.scope,
            valid_at=event.ts,
        )
        ended = memory.FactSuperseded(
            fact_id=said.fact_id, by_fact_id=right, invalid_at=event.ts, reason="corrected by the user"
        )
        causes = (event.id, said.updated_by)
        yield Derived(kinds.FACT_SUPERSEDED, ended, event.project, causes, event.session_id, said.fact_id)
        yield Derived(kinds.FACT_ASSERTED, asserted, event.project, causes, event.session_id, right)
        for prompt in sorted(set(said.stated_in)):
            why = f"it stated a fact the user corrected: {said.text}"
            unsaid = memory.MemorySuperseded(memory_id=prompt, by_memory_id=right, reason=why)
            key = f"{prompt}>{right}"
            yield Derived(kinds.MEMORY_SUPERSEDED, unsaid, event.project, (event.id, prompt), None, key)


def _dependencies(events: list[Event]) -> Iterator[Derived]:
    """Each dependency a manifest declares: a library, and the project's fact about it (one fact
    per library: a later version rewords it)."""
    by_id = {e.id: e for e in events}
    latest = {(by_id[d.event_id].project, canonical_name(d.name)): d for d in dependencies(events)}
    for (project, canonical), dependency in sorted(latest.items()):
        event = by_id[dependency.event_id]
        name = dependency.name  # as the manifest spells it: lazy_html, @xterm/addon-fit
        library = memory.EntityObserved(
            entity_id=entity_id("library", canonical, project),
            type="library",
            name=name,
            normalized_name=canonical,
            aliases=[name],
            properties={"project": project, "version": dependency.version, "manifest": dependency.manifest},
        )
        causes = (event.id,)
        yield Derived(kinds.ENTITY_OBSERVED, library, project, causes, event.session_id, library.entity_id)
        about = subject("project", project)
        relation: Relation = "uses" if dependency.dev else "depends_on"
        said = "uses, to develop," if dependency.dev else "depends on"
        description = f"{about.name} {said} {name} {dependency.version}".strip()
        fact = memory.FactAsserted(
            fact_id=fact_id(project, relation, canonical),
            source=about.entity_id,
            relation=relation,
            target=library.entity_id,
            description=description,
            category="stack",
            topic=topic_of(description),
            dimensions=memory.Dimensions(what=name, where=os.path.basename(dependency.manifest)),
        )
        yield Derived(kinds.ENTITY_OBSERVED, about, project, causes, event.session_id, about.entity_id)
        yield Derived(kinds.FACT_ASSERTED, fact, project, causes, event.session_id, fact.fact_id)


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
