"""What the hooks and `reverie recall` ask the warm recall service, one JSON line per request.

The answer is one JSON line too: {"context": "..."} for a hook (the text to inject, "" for
nothing), {"recall": {...}} for `reverie recall`, or {"error": "..."}.
"""

from datetime import datetime

import msgspec


class RecallRequest(msgspec.Struct, kw_only=True, omit_defaults=True):
    prompt: str = ""
    project: str | None = None
    session_id: str | None = None
    limit: int = 10
    as_of: datetime | None = None
    network: str | None = None  # world, experience, opinion, observation
    category: str | None = None  # stack, context, decisions, errors, patterns
    # set by the hooks: answer with the context to inject for this hook event
    hook: str | None = None  # UserPromptSubmit, SessionStart
    transcript_bytes: int | None = None  # how full the context is
