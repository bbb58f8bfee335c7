"""`reverie reflect QUERY` (and the MCP tool memory_reflect): recall, then ask reflection.

Recall finds the evidence (the warm service, else in this process); the follower `reflect`
(workers/dynamics/follow.py) weighs it, shaped by the project's disposition (`.reverie.toml`
at its root, table `[reflect]`), has it worded by the LLM when one is configured, and records
it as events (to the stream, or the spool while the stack is down). This module asks, and
shows the opinion.
"""

import os
from collections.abc import Sequence

import msgspec

from projections.recall import fabric
from reverie.console import err, fail, out
from reverie.recalling import RecallFailed, find
from schemas import kinds
from schemas.recall import RecallRequest, Scored
from schemas.reflection import Asked, Reflection
from schemas.settings import Settings
from workers.dynamics.reflect import BadDisposition, disposition
from workers.llm.config import BadSettings, llm_settings
from workers.thinking.runner import ask

_EVIDENCE = 20

__all__ = ["BadDisposition", "reflect_command", "reflection", "shown"]


def reflection(
    settings: Settings,
    query: str,
    project: str,
    source: str,
    root: str | None = None,
    load_model: bool = True,
) -> Reflection:
    """The opinion memory forms on `query` in `project`, recorded (see the module's docstring),
    shaped by the disposition of the worktree `root` (by default the project, if it is a folder);
    `load_model` as `find` takes it."""
    shaped = disposition(root if root is not None else project if os.path.isabs(project) else None)
    try:
        llm_settings(settings)
    except BadSettings as e:
        err.print(f"the LLM is misconfigured, so the evidence alone speaks: {e}")
    request = RecallRequest(prompt=query, project=project, limit=2 * _EVIDENCE, answers_only=True)
    found = find(settings, request, load_model)
    asked = Asked(query=query, project=project, evidence=evidence(found.results), disposition=shaped)
    formed, _ = ask("reflect", asked, settings, source)
    if not isinstance(formed, Reflection):
        raise TypeError(f"reflection answered a {type(formed).__name__}")
    return formed


def evidence(results: Sequence[Scored]) -> list[Scored]:
    """What recall found that may weigh, near-duplicates merged: not reverie's own opinions. An
    opinion is a conclusion drawn from evidence, not evidence; and, recalled first, it would
    stand for the memory it quotes, which then no longer counts (the opinion names the question,
    so it is left out as a copy of it)."""
    found = [r for r in results if r.kind != "opinion"]
    merged = fabric.deduplicated(found, lambda r: r.text)
    return [msgspec.structs.replace(r, cross_validated=twice) for r, twice in merged][:_EVIDENCE]


def shown(formed: Reflection) -> str:
    """The opinion as a person reads it: the statement, the confidence, the evidence each way."""
    lines = [f"{formed.statement}", f"confidence {formed.confidence:.2f} ({formed.formed_by})"]
    if formed.revised_from is not None:
        lines[-1] += f", was {formed.revised_from:.2f}"
    for title, side in (("for", formed.supporting), ("against", formed.contradicting)):
        if side:
            lines.append(f"{len(side)} {title}:")
            lines += [
                f"  - {' '.join(e.text.split())[:200]} ({e.kind}, {e.weight:.2f}; id {e.memory_id})"
                for e in side[:5]
            ]
    if formed.contradicting and formed.supporting:
        lines.append("memory contradicts itself here: see the evidence against")
    if formed.promote:
        lines.append("above 0.9: worth a line in CLAUDE.md's memory section")
    return "\n".join(lines)


def reflect_command(query: str, project: str, as_json: bool, root: str | None = None) -> int:
    settings = Settings.from_env()
    try:
        formed = reflection(settings, query, project, kinds.SOURCE_CLI, root=root)
    except (RecallFailed, BadDisposition) as e:
        return fail(str(e))
    if as_json:
        out.print_json(msgspec.json.encode(formed).decode())
    else:
        out.print(shown(formed), highlight=False, markup=False)
    return 0
