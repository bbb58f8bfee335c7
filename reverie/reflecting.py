"""`reverie reflect QUERY` (and the MCP tool memory_reflect): recall, then ask reflection.

Recall finds the evidence; the follower `reflect` (workers/dynamics/follow.py) weighs it,
shaped by the project's disposition (`.reverie.toml` at its root, table `[reflect]`, read here
and sent), has it worded by the LLM when one is configured (the stack's settings), and records
it as events (to the stream, or the spool while the stack is down). The warm service does both
(this process loads nothing); while it is down, they run here. This module asks, and shows the
opinion.
"""

import os

import msgspec

from reverie.console import err, fail, out
from reverie.recalling import NOT_ANSWERING, RecallFailed, asked, find
from schemas import kinds
from schemas.disposition import BadDisposition, Disposition, disposition
from schemas.recall import RecallRequest
from schemas.reflection import Reflection
from schemas.settings import Settings
from workers.llm.config import BadSettings, llm_settings

_SERVICE_DEADLINE_S = 10.0  # and the LLM's own timeout, when one words the opinion

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
    formed by the warm service, else here if `load_model` (as `find` takes it)."""
    shaped = disposition(root if root is not None else project if os.path.isabs(project) else None)
    deadline_s = _SERVICE_DEADLINE_S
    try:
        if (llm := llm_settings(settings)) is not None:
            deadline_s += llm.timeout_s
    except BadSettings as e:
        err.print(f"the LLM is misconfigured, so the evidence alone speaks: {e}")
    request = RecallRequest(prompt=query, project=project, reflect=shaped, asked_by=source)
    answer = asked(settings, request, deadline_s)
    if answer is not None and "reflection" in answer:
        return msgspec.convert(answer["reflection"], Reflection)
    if not load_model:
        raise RecallFailed(NOT_ANSWERING)
    return _in_process(settings, query, project, shaped, source)


def _in_process(settings: Settings, query: str, project: str, shaped: Disposition, source: str) -> Reflection:
    """The reflection the service would form, here: recall loads the model in this process."""
    from workers.dynamics.reflect import evidence_request
    from workers.reflection import reflection as formed

    return formed(settings, query, project, find(settings, evidence_request(query, project)), shaped, source)


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
