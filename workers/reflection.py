"""Reflection for an asker (`reverie reflect`, the MCP tool memory_reflect, through the recall
service or in their own process): the evidence recall found, weighed by the follower `reflect`
(workers/dynamics/follow.py) where it is asked, its events recorded as the asker's."""

import redis

from schemas.disposition import Disposition
from schemas.recall import Recall
from schemas.reflection import Asked, Reflection
from schemas.settings import Settings
from workers.dynamics.reflect import evidence
from workers.thinking.runner import ask


def reflection(
    settings: Settings,
    query: str,
    project: str,
    found: Recall,
    shaped: Disposition,
    source: str,
    client: redis.Redis | None = None,
) -> Reflection:
    """The opinion on `query` from what recall `found` on it in `project`, weighed with the
    disposition `shaped`, recorded as `source`'s to `client` (by default the settings' Redis;
    the spool while it is away)."""
    asked = Asked(query=query, project=project, evidence=evidence(found.results), disposition=shaped)
    formed, _ = ask("reflect", asked, settings, source, client)
    if not isinstance(formed, Reflection):
        raise TypeError(f"reflection answered a {type(formed).__name__}")
    return formed
