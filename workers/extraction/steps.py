"""A session's steps, from its events, as schemas/outcomes.py reads them: each shell command
(as workers/evidence/failures.py reads it: a check whose output says it failed failed, though a
pipe lost its status), each other tool use (an edit by its file), each commit git took, and
each of the user's own prompts, in the session's order. What never ran (a call Claude Code
cancelled, or the user refused or interrupted) is no step.
"""

from collections.abc import Iterable

import msgspec

from schemas import kinds, outcomes
from schemas.events import Event
from schemas.outcomes import Step
from schemas.text.commands import shown
from schemas.text.harness import cancelled, clean, is_noise
from workers.evidence.failures import Run, output_of, runs
from workers.evidence.tool_uses import tool_uses
from workers.extraction.commits import commits


def steps(events: Iterable[Event]) -> list[Step]:
    """The steps of one session's `events` (see the module's docstring)."""
    ordered = sorted(events, key=lambda e: (e.ts, e.id))
    ran = {r.event_id: r for r in runs(ordered)}
    used = {u.event.id: u for u in tool_uses(ordered) if u.name != "Bash"}
    taken = {c.event_id: c.subject for c in commits(ordered)}
    found: list[Step] = []
    for event in ordered:
        if (run := ran.get(event.id)) is not None:
            found.append(_ran(run))
        elif (use := used.get(event.id)) is not None:
            given = next(
                (v for k in ("file_path", "notebook_path") if isinstance(v := use.given.get(k), str)), ""
            )
            error = output_of(use.payload.get("error")) if use.failed else ""
            target = outcomes.target(use.name, given)
            if target is not None and not cancelled(error):
                found.append(
                    Step("used", event.id, target, use.failed, error, outcomes.shown(use.name, given))
                )
        elif event.kind == kinds.PROMPT_SUBMITTED and event.agent == "main":
            prompt = msgspec.json.decode(event.payload).get("prompt")
            if isinstance(prompt, str) and not is_noise(prompt):
                found.append(Step("said", event.id, text=clean(prompt)))
        if event.id in taken:
            found.append(Step("committed", event.id, text=taken[event.id]))
    return found


def _ran(run: Run) -> Step:
    return Step("ran", run.event_id, run.key, run.failed, run.output, shown(run.command, run.key))
