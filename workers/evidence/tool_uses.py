"""The tool calls among a session's events, decoded once: what every extractor that reads
tools (files, commands, manifests) starts from."""

from collections.abc import Iterable, Iterator
from typing import Any

import msgspec

from schemas import kinds
from schemas.events import Event

_TOOL_KINDS = (kinds.TOOL_USED, kinds.TOOL_FAILED)


class ToolUse(msgspec.Struct, frozen=True):
    event: Event
    name: str  # the tool's name: Bash, Read, Edit...
    given: dict[str, Any]  # its input
    payload: dict[str, Any]  # the whole payload (its response or error too)

    @property
    def failed(self) -> bool:
        return self.event.kind == kinds.TOOL_FAILED


def tool_uses(events: Iterable[Event]) -> Iterator[ToolUse]:
    """Every tool call among `events` whose input is an object, in the order given."""
    for event in events:
        if event.kind not in _TOOL_KINDS:
            continue
        payload = msgspec.json.decode(event.payload)
        given, name = payload.get("tool_input"), payload.get("tool_name")
        if isinstance(given, dict) and isinstance(name, str):
            yield ToolUse(event, name, given, payload)
