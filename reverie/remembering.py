"""Remembering, forgetting and correcting by hand: `reverie remember`, `reverie forget`, the MCP
server's `memory_remember` and `memory_forget`, and the dashboard record their events the same
way.

The event goes to the stream through an Emitter (ingest/emit.py); if Redis cannot take it, to
the spool, which the stack delivers once it runs (so nothing is lost while it is down), and the
answer says where it went. Forgetting is an event too: the memory is hidden from recall, never
deleted (`reverie sql "select * from forgotten"`).
"""

import os
from typing import TYPE_CHECKING, Any

import msgspec

from ingest.emit import Emitter
from ingest.project import place_of
from ingest.spool import SUFFIX
from schemas import kinds
from schemas.categories import Outcome, RememberedCategory, detect_category
from schemas.memory import corrected_fact_id
from schemas.observed import (
    FactCorrected,
    MemoryApproved,
    MemoryForgotten,
    MemoryRemembered,
    ObservationPromoted,
    PreferencePinned,
)
from schemas.settings import Settings

if TYPE_CHECKING:
    import redis

TEXT_LIMIT = 2000  # Memory Fabric's: longer text is cut, and the answer says so


class Recorded(msgspec.Struct, frozen=True):
    """What was recorded, and where it went: the stream, or the spool until the stack runs."""

    event_id: str
    went_to: str
    project: str
    category: str | None = None
    cut: bool = False
    memory_id: str | None = None  # the memory it makes, where that is not the event itself


def current_place(environ: dict[str, str] | None = None) -> tuple[str, str]:
    """(project, worktree root) of the folder reverie runs in, as the hooks name it
    (ingest/project.py): its repository, else its real path."""
    env = dict(os.environ if environ is None else environ)
    return place_of({"cwd": os.getcwd()}, env)


def current_project(environ: dict[str, str] | None = None) -> str:
    """The project of the folder reverie runs in, as the hooks name it."""
    return current_place(environ)[0]


def remember(
    settings: Settings,
    text: str,
    *,
    project: str,
    source: str,
    category: RememberedCategory | None = None,
    outcome: Outcome | None = None,
    agent: str | None = None,
    everywhere: bool = False,
    session_id: str | None = None,
) -> Recorded:
    """Record `text` as remembered (its category told from it when not given)."""
    text = " ".join(text.split())
    if not text:
        raise ValueError("nothing to remember: the text is empty")
    cut = len(text) > TEXT_LIMIT
    text = text[:TEXT_LIMIT]
    category = category or detect_category(text)
    payload = MemoryRemembered(
        text=text,
        category=category,
        outcome=outcome,
        agent=agent or None,
        scope="global" if everywhere else "project",
    )
    with Emitter(_connect(settings), source, spool=settings) as out:
        event_id = out.emit(
            kinds.MEMORY_REMEMBERED, payload, project=project, session_id=session_id, agent=agent
        )
    return Recorded(event_id, out.went_to, project, category, cut)


def forget(settings: Settings, memory_id: str, reason: str, *, project: str, source: str) -> Recorded:
    """Record that the memory `memory_id` is to be forgotten, and why. ValueError if no memory
    has that id, or none this project sees."""
    memory_id = memory_id.strip()
    if not memory_id:
        raise ValueError("which memory? give the id recall shows for it")
    _known_here(settings, memory_id, project)
    payload = MemoryForgotten(memory_id=memory_id, reason=reason.strip() or "no reason given")
    return record(settings, source, kinds.MEMORY_FORGOTTEN, payload, project)


def correct(settings: Settings, wrong: str, text: str, *, source: str) -> Recorded:
    """Record that the fact `wrong` no longer holds and `text` says what does (`fact.corrected`):
    the wrong one is forgotten as it is folded, and extraction derives the fact that holds now
    from this event alone (what the wrong one was about: its subject, relation, object, project
    and scope, in the user's words), superseding the wrong one, and the user's prompts that
    stated the wrong one (`stated_in`) by it. The answer names the fact that holds now.
    ValueError if no current fact has that id, or `text` is empty."""
    text = " ".join(text.split())[:TEXT_LIMIT]
    if not text:
        raise ValueError("what holds instead? the correction is empty")
    old = _current_fact(settings, wrong)
    kept = ("source", "relation", "target", "category", "memory_type", "network", "scope", "updated_by")
    said = msgspec.convert(
        {"fact_id": wrong, "text": text, "stated_in": old["stated_in"], **{k: old[k] for k in kept}},
        FactCorrected,
    )
    done = record(settings, source, kinds.FACT_CORRECTED, said, old["project"])
    return msgspec.structs.replace(done, memory_id=corrected_fact_id(old["project"], wrong, text))


def pin(settings: Settings, preference_id: str, pinned: bool, *, source: str) -> Recorded:
    """Record that the preference `preference_id` is pinned (every new session is told it first)
    or unpinned. ValueError if no preference has that id."""
    found = _row(settings, "SELECT project FROM preferences WHERE preference_id = $id", preference_id)
    if found is None:
        raise ValueError(f"no preference has the id {preference_id!r}")
    payload = PreferencePinned(preference_id=preference_id.strip(), pinned=pinned)
    return record(settings, source, kinds.PREFERENCE_PINNED, payload, found["project"] or "")


def promote(settings: Settings, observation_id: str, promoted: bool, *, source: str) -> Recorded:
    """Record that the observation `observation_id` is chosen for CLAUDE.md's memory section (or
    no longer is). ValueError if no observation has that id."""
    found = _row(settings, "SELECT project FROM observations WHERE observation_id = $id", observation_id)
    if found is None:
        raise ValueError(f"no observation has the id {observation_id!r}")
    payload = ObservationPromoted(observation_id=observation_id.strip(), promoted=promoted)
    return record(settings, source, kinds.OBSERVATION_PROMOTED, payload, found["project"] or "")


def approve(settings: Settings, memory_id: str, approved: bool, *, source: str) -> Recorded:
    """Record the user's yes (or no) to a memory entering CLAUDE.md's memory section: one that
    waits for it (projections/curation.py). ValueError if no memory has that id."""
    found = _row(
        settings,
        "SELECT origin AS project FROM memory_texts WHERE memory_id = $id "
        "UNION ALL SELECT project FROM stashes WHERE event_id = $id",
        memory_id,
    )
    if found is None:
        raise ValueError(
            f"no memory has the id {memory_id!r}: `reverie curate --review` lists those that wait"
        )
    payload = MemoryApproved(memory_id=memory_id.strip(), approved=approved)
    return record(settings, source, kinds.MEMORY_APPROVED, payload, found["project"] or "")


def record(
    settings: Settings,
    source: str,
    kind: str,
    payload: msgspec.Struct,
    project: str,
    session_id: str | None = None,
) -> Recorded:
    """One event of `kind` recorded, to the stream or the spool, and where it went."""
    with Emitter(_connect(settings), source, spool=settings) as out:
        event_id = out.emit(kind, payload, project=project, session_id=session_id)
    return Recorded(event_id, out.went_to, project)


def _row(settings: Settings, query: str, wanted: str) -> dict[str, Any] | None:
    """The first row `query` reads, `$id` being `wanted`, in the newest snapshot, by column name;
    None when it reads none."""
    from projections.sql import connect

    db = connect(settings, files=False)
    try:
        cursor = db.execute(query, {"id": wanted.strip()})
        columns = [d[0] for d in cursor.description or []]
        found = cursor.fetchall()
    finally:
        db.close()
    return dict(zip(columns, found[0], strict=True)) if found else None


# the user's own prompts the fact `$id` was asserted from (extraction's statements), with their words
_STATED_IN = f"""
SELECT DISTINCT q.event_id, q.clean FROM fact_history h
JOIN provenance v ON v.event_id = h.event_id
JOIN prompts q ON q.event_id = v.caused_by
WHERE h.fact_id = $id AND h.kind = '{kinds.FACT_ASSERTED}' AND q.agent = 'main'
ORDER BY q.event_id"""
STATED = 0.8  # of a fact's words a prompt holds, to be one that stated it (recall's block: SAID)


def _current_fact(settings: Settings, wanted: str) -> dict[str, Any]:
    """What the current fact `wanted` is about, as the newest snapshot has it, and the prompts
    that stated it (`stated_in`: those it was asserted from that hold STATED of its words);
    ValueError if none."""
    from projections.folds import current
    from projections.recall.words import covered, word_set
    from projections.sql import connect

    query = (
        "SELECT fact_id, source, relation, target, category, memory_type, network, scope, project, "
        f"updated_by, description FROM facts WHERE fact_id = $id AND {current()}"
    )
    db = connect(settings, files=False)
    try:
        cursor = db.execute(query, {"id": wanted.strip()})
        columns = [d[0] for d in cursor.description or []]
        found = cursor.fetchall()
        prompts = db.execute(_STATED_IN, {"id": wanted.strip()}).fetchall() if found else []
    finally:
        db.close()
    if not found:
        raise ValueError(f"no fact holds now with the id {wanted!r}: only a current fact can be corrected")
    fact = dict(zip(columns, found[0], strict=True))
    words = word_set(fact["description"] or "")
    fact["stated_in"] = [p for p, said in prompts if words and covered(words, word_set(said or "")) >= STATED]
    return fact


def _known_here(settings: Settings, memory_id: str, project: str) -> None:
    """ValueError unless `memory_id` names a memory `project` sees (its own, or one that holds
    everywhere) in the newest snapshot, or one forgotten already, or an event the snapshot does
    not hold yet (remembered a moment ago: in the log, or spooled while the stack is down); a
    project's request never hides another project's memory anyway (the view memory_texts).
    Costs a read of the snapshot and of the log's ids."""
    from projections.sql import NoSnapshot, connect

    try:
        db = connect(settings, snapshot_required=True)
    except NoSnapshot:
        db = connect(settings)
    try:
        query = "SELECT project FROM memory_texts WHERE memory_id = $id"
        holders = [row[0] for row in db.execute(query, {"id": memory_id}).fetchall()]
        if holders and not any(holder in (None, project) for holder in holders):
            raise ValueError(f"no memory has the id {memory_id!r} in this project ({project})")
        known = (
            holders
            or db.execute(
                "SELECT 1 FROM forgotten WHERE memory_id = $id UNION ALL SELECT 1 FROM events WHERE id = $id",
                {"id": memory_id},
            ).fetchall()
        )
    finally:
        db.close()
    spooled = "/" not in memory_id and os.path.exists(os.path.join(settings.spool_dir, memory_id + SUFFIX))
    if not known and not spooled:
        raise ValueError(f"no memory has the id {memory_id!r}: `reverie recall QUERY` shows each memory's id")


def _connect(settings: Settings) -> "redis.Redis":
    from workers.redis_client import connect  # here: the MCP server starts faster without redis-py

    return connect(settings, timeout=2.0)


def remember_command(
    text: str,
    category: RememberedCategory | None,
    outcome: Outcome | None,
    agent: str | None,
    everywhere: bool,
) -> int:
    """`reverie remember`."""
    from reverie.console import err, fail

    try:
        done = remember(
            Settings.from_env(),
            text,
            project=current_project(),
            source=kinds.SOURCE_CLI,
            category=category,
            outcome=outcome,
            agent=agent,
            everywhere=everywhere,
        )
    except ValueError as e:
        return fail(str(e))
    err.print(_said(done, "remembered", "every project" if everywhere else done.project), highlight=False)
    return 0


def forget_command(memory_id: str, reason: str) -> int:
    """`reverie forget`."""
    from reverie.console import err, fail

    try:
        done = forget(
            Settings.from_env(), memory_id, reason, project=current_project(), source=kinds.SOURCE_CLI
        )
    except ValueError as e:
        return fail(str(e))
    err.print(_said(done, f"{memory_id} forgotten (hidden from recall, kept)", done.project), highlight=False)
    return 0


def _said(done: Recorded, what: str, where: str) -> str:
    about = f" as {done.category}" if done.category else ""
    cut = f" (cut to its first {TEXT_LIMIT} characters)" if done.cut else ""
    later = (
        "; the stack is down: it is spooled and delivered once `reverie up` runs"
        if done.went_to == "spool"
        else ""
    )
    return f"{what}{about} for {where}{cut}: event {done.event_id}{later}"
