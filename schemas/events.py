"""The event envelope and the payload of every observed kind, as msgspec Structs.

An `Event` keeps its payload as raw JSON: the log stores exactly what was observed (fields a
newer Claude Code adds are kept, not dropped), and `payload_of` gives the typed view. Payload
Structs tolerate what real hooks send across CLI versions: unknown fields are ignored, missing
ones take defaults, and `null` is accepted wherever a CLI has been seen to send it.
"""

from datetime import datetime
from typing import Annotated, Any

import msgspec

from schemas import kinds, memory


class HookPayload(msgspec.Struct, kw_only=True):
    """Fields every Claude Code hook payload carries (some only in newer CLIs)."""

    session_id: str | None = None
    transcript_path: str | None = None
    cwd: str | None = None
    hook_event_name: str | None = None
    permission_mode: str | None = None
    agent_id: str | None = None
    agent_type: str | None = None


class SessionStarted(HookPayload, kw_only=True):
    source: str | None = None  # startup, resume, clear, compact
    model: str | None = None


class SessionEnded(HookPayload, kw_only=True):
    reason: str | None = None


class PromptSubmitted(HookPayload, kw_only=True):
    prompt: str | None = None


class ToolRequested(HookPayload, kw_only=True):
    tool_name: str | None = None
    tool_input: dict[str, Any] | None = None
    tool_use_id: str | None = None


class ToolUsed(ToolRequested, kw_only=True):
    tool_response: Any = None


class ToolFailed(ToolRequested, kw_only=True):
    error: Any = None
    is_interrupt: bool | None = None


class PermissionRequested(ToolRequested, kw_only=True):
    permission_suggestions: list[Any] | None = None


class AssistantStopped(HookPayload, kw_only=True):
    stop_hook_active: bool | None = None
    last_assistant_message: str | None = None


class SubagentStarted(HookPayload, kw_only=True):
    pass


class SubagentStopped(AssistantStopped, kw_only=True):
    agent_transcript_path: str | None = None


class CompactionStarted(HookPayload, kw_only=True):
    trigger: str | None = None  # manual, auto
    custom_instructions: str | None = None


class CompactionFinished(HookPayload, kw_only=True):
    trigger: str | None = None
    compact_summary: str | None = None


class Notification(HookPayload, kw_only=True):
    message: str | None = None
    title: str | None = None
    notification_type: str | None = None


class MemoryRemembered(msgspec.Struct, kw_only=True):
    """Something the user or agent asked reverie to remember, explicitly."""

    text: str
    tags: list[str] = []


class MemoryRetrieved(msgspec.Struct, kw_only=True):
    """A recall and what it returned, in rank order."""

    query: str
    results: list[str] = []
    scores: list[float] = []


Payload = (
    SessionStarted
    | SessionEnded
    | PromptSubmitted
    | ToolRequested
    | ToolUsed
    | ToolFailed
    | PermissionRequested
    | AssistantStopped
    | SubagentStarted
    | SubagentStopped
    | CompactionStarted
    | CompactionFinished
    | Notification
    | MemoryRemembered
    | MemoryRetrieved
    | memory.EntityObserved
    | memory.FactAsserted
    | memory.FactSuperseded
    | memory.FactReconsolidated
    | memory.FactExpired
    | memory.EpisodeRecorded
    | memory.EpisodeConsolidated
    | memory.SignalDetected
    | memory.PreferenceCrystallized
    | memory.FailureRecurring
    | memory.TierPromoted
    | memory.ActivationRecorded
    | memory.CommunityDetected
    | memory.OpinionFormed
    | memory.OpinionRevised
    | memory.ObservationFormed
)

PAYLOAD_TYPES: dict[str, type[Payload]] = {
    kinds.SESSION_STARTED: SessionStarted,
    kinds.SESSION_ENDED: SessionEnded,
    kinds.PROMPT_SUBMITTED: PromptSubmitted,
    kinds.TOOL_REQUESTED: ToolRequested,
    kinds.TOOL_USED: ToolUsed,
    kinds.TOOL_FAILED: ToolFailed,
    kinds.PERMISSION_REQUESTED: PermissionRequested,
    kinds.ASSISTANT_STOPPED: AssistantStopped,
    kinds.SUBAGENT_STARTED: SubagentStarted,
    kinds.SUBAGENT_STOPPED: SubagentStopped,
    kinds.COMPACTION_STARTED: CompactionStarted,
    kinds.COMPACTION_FINISHED: CompactionFinished,
    kinds.NOTIFICATION: Notification,
    kinds.MEMORY_REMEMBERED: MemoryRemembered,
    kinds.MEMORY_RETRIEVED: MemoryRetrieved,
    kinds.ENTITY_OBSERVED: memory.EntityObserved,
    kinds.FACT_ASSERTED: memory.FactAsserted,
    kinds.FACT_SUPERSEDED: memory.FactSuperseded,
    kinds.FACT_RECONSOLIDATED: memory.FactReconsolidated,
    kinds.FACT_EXPIRED: memory.FactExpired,
    kinds.EPISODE_RECORDED: memory.EpisodeRecorded,
    kinds.EPISODE_CONSOLIDATED: memory.EpisodeConsolidated,
    kinds.SIGNAL_DETECTED: memory.SignalDetected,
    kinds.PREFERENCE_CRYSTALLIZED: memory.PreferenceCrystallized,
    kinds.FAILURE_RECURRING: memory.FailureRecurring,
    kinds.TIER_PROMOTED: memory.TierPromoted,
    kinds.ACTIVATION_RECORDED: memory.ActivationRecorded,
    kinds.COMMUNITY_DETECTED: memory.CommunityDetected,
    kinds.OPINION_FORMED: memory.OpinionFormed,
    kinds.OPINION_REVISED: memory.OpinionRevised,
    kinds.OBSERVATION_FORMED: memory.ObservationFormed,
}


class Event(msgspec.Struct, frozen=True, kw_only=True):
    """One immutable fact about what happened, as it travels and as the log keeps it."""

    id: str
    kind: str
    ts: datetime
    recorded_at: datetime
    project: str
    session_id: str | None = None
    agent: str = "main"
    source: str
    v: Annotated[int, msgspec.Meta(ge=0, le=32767)] = kinds.SCHEMA_VERSION
    payload: msgspec.Raw
    caused_by: tuple[str, ...] = ()


class InvalidEvent(ValueError):
    """Bytes that are not a valid event; the message says why."""


_envelope_decoder = msgspec.json.Decoder(Event)
_payload_decoders = {kind: msgspec.json.Decoder(t) for kind, t in PAYLOAD_TYPES.items()}


def decode_event(data: bytes | str) -> Event:
    """Decode and validate an event: the envelope, its kind and its payload's types."""
    try:
        event = _envelope_decoder.decode(data)
        bytes(event.payload).decode("utf-8")  # the log stores it as text
    except (msgspec.DecodeError, UnicodeDecodeError) as e:
        raise InvalidEvent(f"envelope: {e}") from None
    _check_provenance(event.kind, event.caused_by)
    payload_of(event)
    return event


def _check_provenance(kind: str, caused_by: tuple[str, ...]) -> None:
    if kind in kinds.DERIVED_KINDS and not caused_by:
        raise InvalidEvent(f"{kind} is derived: caused_by must name the events it came from")


def payload_of(event: Event) -> Payload:
    """The typed payload of an event."""
    decoder = _payload_decoders.get(event.kind)
    if decoder is None:
        raise InvalidEvent(f"unknown event kind {event.kind!r}")
    try:
        return decoder.decode(event.payload)
    except (msgspec.DecodeError, UnicodeDecodeError) as e:
        raise InvalidEvent(f"{event.kind} payload: {e}") from None


def encode_event(event: Event) -> bytes:
    return msgspec.json.encode(event)


def make_event(
    kind: str,
    payload: Payload | dict[str, Any],
    *,
    id: str,
    ts: datetime,
    recorded_at: datetime,
    project: str,
    source: str,
    session_id: str | None = None,
    agent: str = "main",
    caused_by: tuple[str, ...] = (),
) -> Event:
    """Build an event in Python (the hook path builds the same JSON without msgspec)."""
    _check_provenance(kind, caused_by)
    return Event(
        id=id,
        kind=kind,
        ts=ts,
        recorded_at=recorded_at,
        project=project,
        session_id=session_id,
        agent=agent,
        source=source,
        payload=msgspec.Raw(msgspec.json.encode(payload)),
        caused_by=caused_by,
    )
