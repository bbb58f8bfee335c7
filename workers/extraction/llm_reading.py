"""A session read by a model: what it is shown, what it must answer, and what its answer becomes.

The model is shown the session as a digest (the user's prompts, the agent's last words of each
turn, the commits, the failures, the compaction summaries; cleaned of Claude Code's wrappers,
at most 30,000 characters) and must answer `Extracted` (schemas/llm.py). An answer that does
not validate is sent back once with msgspec's reason; a second bad answer, a provider error, or
a spent daily budget leaves the session to the deterministic extractor. Every call is an
`llm.used` event with its tokens, whatever its outcome.
"""

from collections.abc import Iterator

import msgspec

from schemas import kinds, memory
from schemas.events import Event
from schemas.llm import Extracted, LLMUsed, Spent, extracted_schema
from schemas.memory import fact_id
from schemas.ontology import RELATIONS, normalize_relation, topic_of, tulving_type
from schemas.registry import DERIVED_KINDS
from schemas.text.harness import clean, is_noise
from workers.extraction.commits import commits
from workers.extraction.episodes import episode_id
from workers.extraction.files import canonical_name, entity_id
from workers.llm.config import LLMSettings
from workers.llm.providers import Completion, ProviderError, complete, spent
from workers.thinking.follower import Derived

DIGEST_MAX = 30_000
_TURN_MAX = 1_500
_SUMMARY_MAX = 6_000

SYSTEM = f"""You read one session between a developer and an AI coding agent, and record what should be
remembered long after it: decisions taken (and what was rejected), errors met and what fixed them,
the libraries, tools and files the project uses, conventions and preferences the user stated, and
what was learned. Record only what the session shows; never guess. Prefer few precise facts to many.
Each fact is one standalone sentence a developer would understand months later without the session.
Relations, by preference: {", ".join(RELATIONS)}.
Categories: stack (what the project is built with), context, decisions, errors, patterns.
The episode: its title is the session's goal; its summary says what was tried and how it ended;
its outcome is success, failure, partial or unknown."""


class Asked(msgspec.Struct, frozen=True):
    """What asking the model gave: what it extracted (None: fall back), and what it cost."""

    extracted: Extracted | None
    used: LLMUsed


def digest(events: list[Event]) -> str:
    """The session as the model reads it (see the module's docstring)."""
    lines: list[str] = []
    taken = {c.event_id: c for c in commits(events)}
    for event in sorted(events, key=lambda e: (e.ts, e.id)):
        if event.kind in DERIVED_KINDS:
            continue
        payload = msgspec.json.decode(event.payload)
        if event.id in taken:
            lines.append(f"COMMIT: {taken[event.id].subject}")
        elif event.kind == kinds.PROMPT_SUBMITTED and not is_noise(text := str(payload.get("prompt") or "")):
            said = "USER" if event.agent == "main" else "AGENT TO A SUBAGENT"  # a task is not the user's
            lines.append(f"{said}: {_cut(clean(text), _TURN_MAX)}")
        elif event.kind in (kinds.ASSISTANT_STOPPED, kinds.SUBAGENT_STOPPED):
            text = clean(str(payload.get("last_assistant_message") or ""))
            limit = _SUMMARY_MAX if "Errors and Fixes:" in text or "Primary Request" in text else _TURN_MAX
            if text:
                lines.append(f"{'SUMMARY' if limit == _SUMMARY_MAX else 'AGENT'}: {_cut(text, limit)}")
        elif event.kind == kinds.COMPACTION_FINISHED and (
            text := clean(str(payload.get("compact_summary") or ""))
        ):
            lines.append(f"SUMMARY: {_cut(text, _SUMMARY_MAX)}")
        elif event.kind == kinds.TOOL_FAILED:
            given = payload.get("tool_input") if isinstance(payload.get("tool_input"), dict) else {}
            what = given.get("command") or given.get("file_path") or ""
            error = clean(str(payload.get("error") or "")).strip().splitlines()
            lines.append(
                f"FAILED {payload.get('tool_name')} {_cut(str(what), 200)}: {error[0][:300] if error else ''}"
            )
    text = "\n".join(lines)
    if len(text) <= DIGEST_MAX:
        return text
    head = DIGEST_MAX // 3
    left_out = f"[... {len(text) - DIGEST_MAX} characters left out ...]"
    return f"{text[:head]}\n{left_out}\n{text[-(DIGEST_MAX - head) :]}"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def ask(settings: LLMSettings, events: list[Event], spent_today: int) -> Asked:
    """The session's memory as the configured model extracts it (see the module's docstring)."""

    def used(outcome: Spent, reason: str = "", *calls: Completion) -> LLMUsed:
        return spent(settings, outcome, reason, *calls)

    if spent_today >= settings.daily_token_budget:
        return Asked(
            None, used("over_budget", f"{spent_today} of {settings.daily_token_budget} tokens spent today")
        )
    schema = extracted_schema()
    prompt = f"The session:\n\n{digest(events)}"
    calls: list[Completion] = []
    try:
        calls.append(complete(settings, SYSTEM, prompt, schema))
        try:
            return Asked(_decoded(calls[0].text), used("extracted", "", *calls))
        except (msgspec.ValidationError, msgspec.DecodeError) as wrong:
            repair = (
                f"{prompt}\n\nYour last answer was not valid ({wrong}):\n{calls[0].text[:4000]}\n\n"
                "Answer again, valid."
            )
            calls.append(complete(settings, SYSTEM, repair, schema))
            return Asked(_decoded(calls[1].text), used("repaired", str(wrong), *calls))
    except ProviderError as e:
        return Asked(None, used("fell_back", str(e), *calls, e.spent))
    except (msgspec.ValidationError, msgspec.DecodeError) as e:
        return Asked(None, used("fell_back", f"still not valid after one repair: {e}", *calls))


def _decoded(text: str) -> Extracted:
    text = text.strip()
    if text.startswith("```"):  # a model that fenced its JSON anyway
        text = text.split("\n", 1)[-1].rsplit("```", 1)[0]
    return msgspec.json.decode(text, type=Extracted)


def memories(extracted: Extracted, events: list[Event]) -> Iterator[Derived]:
    """What `extracted` says, as derived events of the session's project: its entities (one per
    name, however spelled), its facts in the ontology, and its episode."""
    ordered = sorted(events, key=lambda e: (e.ts, e.id))
    first, last = ordered[0], ordered[-1]
    project, session = first.project, first.session_id
    causes = tuple(sorted({first.id, last.id}))
    named: dict[str, memory.EntityObserved] = {}

    def entity(name: str, entity_type: memory.EntityType = "concept") -> memory.EntityObserved:
        key = canonical_name(name)
        if key not in named:
            named[key] = memory.EntityObserved(
                entity_id=entity_id(entity_type, key, project), type=entity_type, name=name,
                normalized_name=key, aliases=[name], properties={"project": project},
            )  # fmt: skip
        return named[key]

    for found in extracted.entities:
        entity(found.name, found.type)
    facts = []
    for said in extracted.facts:
        relation = normalize_relation(said.relation)
        source, target = entity(said.subject), entity(said.object) if said.object else None
        if relation.reversed and target is not None:
            source, target = target, source
        facts.append(
            memory.FactAsserted(
                fact_id=fact_id(project, relation.relation, said.statement),
                source=source.entity_id,
                relation=relation.relation,
                target=target.entity_id if target else None,
                description=said.statement,
                confidence=said.confidence,
                memory_type=tulving_type(relation.relation, said.statement, None, last.recorded_at),
                network="experience" if said.category == "errors" else "world",
                category=said.category,
                topic=topic_of(said.statement),
                stated_relation=relation.stated,
            )
        )
    for observed in named.values():
        yield Derived(kinds.ENTITY_OBSERVED, observed, project, causes, session, observed.entity_id)
    for fact in facts:
        yield Derived(kinds.FACT_ASSERTED, fact, project, causes, session, fact.fact_id)
    if session is not None:
        episode = memory.EpisodeRecorded(
            episode_id=episode_id(project, session),
            session_id=session,
            title=extracted.episode.title,
            summary=extracted.episode.summary,
            started_at=first.ts,
            ended_at=last.ts,
            outcome=extracted.episode.outcome,
            entities=[e.entity_id for e in named.values()],
        )
        yield Derived(kinds.EPISODE_RECORDED, episode, project, causes, session, episode.episode_id)
