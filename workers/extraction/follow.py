"""Extraction's two followers: what each archived batch teaches, and what each session that
ends teaches (its episode, its commands' lessons, and what an LLM reads in it when one is
configured). Both settle what they find against the facts the snapshot holds
(workers/extraction/settling.py); a batch's remembered memories are compared with those the
snapshot holds, the newer superseding what it updates (workers/extraction/updates.py).
"""

from collections.abc import Iterator

import structlog

from schemas import kinds
from schemas.events import Event
from schemas.llm import LLMUsed
from schemas.settings import Settings
from workers.extraction.derive import derive, derive_session
from workers.extraction.episodes import episodes
from workers.extraction.llm_reading import ask, memories
from workers.extraction.settling import settle, standing_facts
from workers.extraction.updates import standing_remembered, superseded
from workers.llm.config import BadSettings, LLMSettings, llm_settings
from workers.thinking.follower import Derived
from workers.thinking.reading import Reading, tokens_today

log = structlog.get_logger("reverie.extraction")


def from_batch(reading: Reading) -> Iterator[Derived]:
    """What the batch's events teach (workers/extraction/derive.py), settled; and the remembered
    memories its own update, or that update them (workers/extraction/updates.py)."""
    yield from settle(derive(reading.events), lambda p: standing_facts(reading.snapshot, p), reading.cosine)
    yield from superseded(reading.events, lambda p: standing_remembered(reading.snapshot, p))


def from_session(reading: Reading) -> Iterator[Derived]:
    """The session's episode and what its commands teach, and, when an LLM is configured, what
    the model reads in it (its episode then, unless it fell back), settled."""
    events = reading.events
    found: list[Derived] = []
    if (llm := _llm(reading.settings)) is not None:
        asked = ask(llm, events, tokens_today(reading.snapshot))
        found.append(_spent(asked.used, events))
        if asked.extracted is not None:
            found += memories(asked.extracted, events)
    if not any(f.kind == kinds.EPISODE_RECORDED for f in found):  # no LLM, or it fell back
        found += [
            Derived(kinds.EPISODE_RECORDED, e, p, c, events[0].session_id, e.episode_id)
            for e, p, c in episodes(events)
        ]
    found += derive_session(events)
    yield from settle(found, lambda p: standing_facts(reading.snapshot, p), reading.cosine)


def _llm(settings: Settings) -> LLMSettings | None:
    try:
        return llm_settings(settings)
    except BadSettings as e:
        log.warning("llm.misconfigured", error=str(e), using="the deterministic extractor")
        return None


def _spent(used: LLMUsed, events: list[Event]) -> Derived:
    ordered = sorted(events, key=lambda e: (e.ts, e.id))
    first, last = ordered[0], ordered[-1]
    causes = tuple(sorted({first.id, last.id}))
    key = f"{first.session_id}:{used.provider}:{used.model}"
    return Derived(kinds.LLM_USED, used, first.project, causes, first.session_id, key)
