"""Recall's request and its answer, in one place: what the hooks, `reverie recall` and the MCP
server ask the warm recall service, one JSON line per request, and the Recall it answers (the
memories scored, the task and queries read from the prompt, the time it names). Readers of an
answer need nothing of the pipeline (projections/recall/) that makes it.

The answer is one JSON line too: {"context": "..."} for a hook (the text to inject, "" for
nothing), {"recall": {...}} for `reverie recall`, {"vectors": "<base64>"} for a request to
`encode` (the texts' unit vectors, float32 little-endian, row after row: the service holds the
stack's one copy of the embedding model, and the workers ask it), {"status": {...}} for
`reverie status` (schemas/status.py), {"why": {...}} for `reverie why` (schemas/why.py),
{"reflection": {...}} for a request to `reflect` (schemas/reflection.py), or {"error": "..."}.
A request line holds at most REQUEST_LIMIT bytes: askers send a long prompt's gist
(schemas/text/gist.py), not the whole of it; the service reads the gist of any prompt. Over
TCP the line comes after a handshake, with its proof (ingest/handshake.py).
"""

from datetime import datetime
from typing import Literal

import msgspec

from schemas.categories import Outcome, RememberedCategory
from schemas.disposition import Disposition
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
    answers_only: bool = False  # leave out questions asked before (the prompt's copies, and questions)
    # set by the hooks: answer with the context to inject for this hook event
    hook: str | None = None  # UserPromptSubmit, SessionStart, SubagentStart; Stop, PreCompact (a manifest)
    source: str | None = None  # SessionStart's: startup, resume, clear, compact
    transcript_bytes: int | None = None  # how full the context is
    # Stop's: the agent's last message (redacted and cut as its event's), whose next steps the
    # manifest keeps: the snapshot does not know it yet
    last_message: str | None = None
    # how long the asker waits for the answer, in seconds: past it the service drops the request
    deadline_s: float | None = None
    # set by the workers: these texts' vectors, by the stack's model, and no recall
    encode: list[str] | None = None
    # set by `reverie status`: the stack's status (schemas/status.py), and no recall
    status: bool = False
    # set by `reverie why` and memory_why: why memory holds this id (schemas/why.py), and no recall
    why: str | None = None
    # set by `reverie reflect` and memory_reflect: an opinion on the prompt, weighed with the
    # project's disposition, recorded as the asker's (`asked_by`: kinds.SOURCE_CLI, SOURCE_MCP)
    reflect: Disposition | None = None
    asked_by: str | None = None
    # set by the dashboard's playground, with hook UserPromptSubmit: what the hook would inject
    # now, and why (`Preview`), recording nothing
    preview: bool = False


Task = Literal["feature", "bugfix", "refactor", "question", "design", "debug", "unknown"]


class Query(msgspec.Struct, frozen=True):
    """One of the queries recall asks on a prompt's behalf, aimed at a category of memory."""

    text: str
    category: Category
    weight: float


class Window(msgspec.Struct, frozen=True):
    """[start, end): the span of time a prompt asks about. Vague: said loosely ("recently",
    "last year"), a hint rather than a bound."""

    start: datetime
    end: datetime
    vague: bool = False


class Scored(msgspec.Struct, frozen=True):
    """A recalled memory, with every component of its score (see `reverie recall --explain`)."""

    memory_id: str
    kind: str
    text: str
    ts: datetime | None
    project: str | None
    session_id: str | None
    memory_type: str | None
    score: float
    relevance: float
    activation: float
    retrievability: float
    recency: float
    confidence: float
    sources: list[str]  # the retrievers that found it ("neighbour": next to one they found)
    components: dict[str, float]  # each component's z-score (or reciprocal rank)
    cross_validated: bool = False  # with dedup: another memory found said the same
    similarity: float = 0.0  # the model's cosine of the prompt and the memory: how near it is, as is
    category: str | None = None  # a fact's (stack, decisions, errors...), or a remembered one's
    derived_from: list[str] = []  # the memories a fact was drawn from (its prompt, its message)


class Given(msgspec.Struct, frozen=True):
    """A memory the hook gave with a prompt, and why: its recall score and each component
    (`Scored`), its cosine to the prompt, and what let it past the block's floor."""

    memory_id: str
    score: float
    similarity: float
    components: dict[str, float]
    passed: str


class Recall(msgspec.Struct, frozen=True):
    prompt: str
    task: Task
    queries: list[Query]
    window: Window | None
    results: list[Scored]


class Preview(msgspec.Struct, frozen=True):
    """What the UserPromptSubmit hook would inject for a prompt now (`context`), each memory
    given and why, every candidate recall weighed (`recall`), and why each other was left out
    (`left_out`, by memory id)."""

    context: str
    given: list[Given]
    recall: Recall
    left_out: dict[str, str] = {}
