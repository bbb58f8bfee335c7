"""A stash worded by the configured LLM. `reverie stash` reads where a session stands from its
events first (projections/stashing.py); when an LLM is configured, `with_llm` has it word the
goal, decisions, open threads and next steps from the session's own words, within the same daily
token budget as extraction and reflection. Over budget, failing, or answering what is not valid,
it gives None and the stash read from the events stands. What it cost is returned either way,
for the `llm.used` event. The files the session touched stay as read: the model does not name
files.
"""

import msgspec

from schemas.llm import LLMUsed
from schemas.observed import SessionStashed
from workers.llm.config import LLMSettings
from workers.llm.providers import answer_as

_MOST = 8  # items in each list the model gives
_SYSTEM = (
    "You write a developer's stash of a coding session: where the work stands, to pick it up "
    "later. Use only what the session says; add nothing. Answer in JSON: the goal (one sentence), "
    "the decisions made, the threads left open and the next steps (each a short list of short "
    "sentences; empty when the session says none)."
)


class _Worded(msgspec.Struct, frozen=True):
    goal: str
    decisions: list[str]
    open_threads: list[str]
    next_steps: list[str]


def with_llm(
    settings: LLMSettings, stand: SessionStashed, said: list[str], spent_today: int
) -> tuple[SessionStashed | None, LLMUsed]:
    """`stand` as the model words it from the session's turns `said` (oldest first), or None;
    what asking cost."""
    read = msgspec.json.encode(msgspec.structs.replace(stand, files=[])).decode()
    prompt = "The session, oldest first:\n" + "\n".join(f"- {turn}" for turn in said)
    prompt += f"\n\nWhat its events say (use it, word it better):\n{read}"
    worded, used = answer_as(settings, _SYSTEM, prompt, _Worded, spent_today)
    if worded is None:
        return None, used
    return msgspec.structs.replace(
        stand,
        goal=" ".join(worded.goal.split()) or stand.goal,
        decisions=_items(worded.decisions),
        open_threads=_items(worded.open_threads),
        next_steps=_items(worded.next_steps),
        worded_by=f"{settings.provider}:{settings.model}",
    ), used


def _items(items: list[str]) -> list[str]:
    return [line for item in items if (line := " ".join(item.split()))][:_MOST]
