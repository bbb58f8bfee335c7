"""What the hooks and `reverie recall` ask the warm recall service, one JSON line per request.

The answer is one JSON line too: {"context": "..."} for a hook (the text to inject, "" for
nothing), {"recall": {...}} for `reverie recall`, or {"error": "..."}. A request line holds at
most REQUEST_LIMIT bytes: askers send a prompt's gist (schemas/prompt.py), not the whole of it.
"""

from datetime import datetime
from typing import Literal

import msgspec

from schemas.categories import Outcome, RememberedCategory
from schemas.memory import Category, Network

Weighting = Literal["cognitive", "fabric"]
REQUEST_LIMIT = 1 << 20


class RecallRequest(msgspec.Struct, kw_only=True, omit_defaults=True):
    prompt: str = ""
    project: str | None = None
    session_id: str | None = None
    limit: int = 10
    as_of: datetime | None = None
    network: Network | None = None
    category: Category | RememberedCategory | None = None
    outcome: Outcome | None = None  # remembered memories that worked, or failed (anti-patterns)
    agent: str | None = None  # an agent's own remembered memories
    global_only: bool = False  # only what holds in every project
    fusion: Literal["zscore", "rrf"] = "zscore"  # sum of z-scores, or Reciprocal Rank Fusion
    weighting: Weighting = "cognitive"  # or Memory Fabric's: recency 0.3, relevance 0.5, authority 0.2
    dedup: bool = False  # Memory Fabric's: near-duplicates merged, marked cross-validated
    # set by the hooks: answer with the context to inject for this hook event
    hook: str | None = None  # UserPromptSubmit, SessionStart
    transcript_bytes: int | None = None  # how full the context is
    # how long the asker waits for the answer, in seconds: past it the service drops the request
    deadline_s: float | None = None
