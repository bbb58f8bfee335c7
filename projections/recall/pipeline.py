"""Recall: from a prompt to the memories that matter, each with why.

1. Classify the task and generate 3 to 5 weighted queries (recall/tasks.py).
2. Retrieve with four retrievers: semantic (LanceDB ANN over the embedded chunks), full text
   (LanceDB BM25), graph (entities the prompt names, breadth first along facts to depth 2)
   and temporal (the window a prompt names: "yesterday", "in March", a date).
3. Fuse every (retriever, query) ranking with Reciprocal Rank Fusion, k = 60.
4. Score: relevance (the fused score, scaled to the best) weighed by how strongly each memory
   comes to mind (ACT-R activation, FSRS retrievability, recency) and by its confidence
   (recall/scoring.py). Facts superseded, ended or forgotten are left out, unless `as_of`
   asks about a time when they held.
"""

import math
from datetime import UTC, datetime, timedelta

import msgspec
import pyarrow as pa

from projections.embeddings import Encoder
from projections.literals import string_literal
from projections.recall import scoring
from projections.recall.fusion import fuse
from projections.recall.memories import Features, Memories
from projections.recall.tasks import Query, Task, classify, identifiers, keywords, queries
from projections.recall.timeframes import Window, window
from projections.vectors import Vectors
from schemas.memory import Category, Network
from schemas.recall import RecallRequest


class RetrieverWeights(msgspec.Struct, frozen=True):
    """How much each retriever's ranking counts in the fusion.

    Full text reads each turn with the one before it, the model reads one turn; on LoCoMo's
    development conversations the model's ranking is worth less than half of full text's, and
    a time the prompt names narrows the field more than either.
    """

    semantic: float = 0.4
    fulltext: float = 1.0
    graph: float = 0.7
    temporal: float = 1.5


DEFAULT_WEIGHTS = RetrieverWeights()
NEIGHBOUR_SHARE = 0.2


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
    sources: list[str]  # the retrievers that found it


class Recall(msgspec.Struct, frozen=True):
    prompt: str
    task: Task
    queries: list[Query]
    window: Window | None
    results: list[Scored]


class Recaller:
    """Everything recall needs, loaded once: the model, the vectors, the projections."""

    def __init__(
        self,
        encoder: Encoder,
        vectors: Vectors,
        memories: Memories,
        weights: RetrieverWeights = DEFAULT_WEIGHTS,
        depth: int = 50,
    ) -> None:
        self.encoder = encoder
        self.vectors = vectors
        self.memories = memories
        self.weights = weights
        self.depth = depth  # candidates each retriever hands to fusion

    def recall(
        self,
        prompt: str,
        *,
        limit: int = 10,
        project: str | None = None,
        as_of: datetime | None = None,
        network: Network | None = None,
        category: Category | None = None,
        now: datetime | None = None,
    ) -> Recall:
        now = now or datetime.now(UTC)
        task = classify(prompt)
        asked = queries(prompt, task)
        span = window(prompt, as_of or now)
        rankings = self._retrieve(prompt, asked, span, project, as_of)
        fused = self._with_neighbours(fuse([(ranking, weight) for ranking, weight, _ in rankings]))
        sources: dict[str, list[str]] = {}
        for ranking, _, name in rankings:
            for memory_id in ranking:
                sources.setdefault(memory_id, [])
                if name not in sources[memory_id]:
                    sources[memory_id].append(name)
        features = self.memories.features(list(fused))
        best = max(fused.values(), default=1.0)
        scored = [
            _score(features[m], rrf / best, sources.get(m, ["neighbour"]), now)
            for m, rrf in fused.items()
            if m in features and _admitted(features[m], as_of, now, network, category)
        ]
        scored.sort(key=lambda s: -s.score)
        return Recall(prompt, task, asked, span, scored[:limit])

    def answer(self, request: RecallRequest) -> Recall:
        """Recall as a request (from a hook or `reverie recall`) asks for it."""
        return self.recall(
            request.prompt,
            limit=request.limit,
            project=request.project,
            as_of=request.as_of,
            network=request.network,
            category=request.category,
        )

    def _with_neighbours(self, fused: dict[str, float]) -> dict[str, float]:
        """Turns no retriever found take a share of the found turns around them: an answer sits
        next to its question, and a turn between two relevant ones is likely relevant too."""
        around = self.memories.neighbours(list(fused))
        smoothed = dict(fused)
        for memory_id, (before, after) in around.items():
            for neighbour in (before, after):
                if neighbour is not None and neighbour not in fused:  # found already: ranked on its own
                    smoothed[neighbour] = smoothed.get(neighbour, 0.0) + NEIGHBOUR_SHARE * fused[memory_id]
        return dict(sorted(smoothed.items(), key=lambda pair: -pair[1]))

    def _retrieve(
        self,
        prompt: str,
        asked: list[Query],
        span: Window | None,
        project: str | None,
        as_of: datetime | None,
    ) -> list[tuple[list[str], float, str]]:
        where = _where(project, as_of)
        # the model reads the prompt itself (the other queries only reword it: measured, they add
        # nothing to the semantic ranking but time); full text reads each turn with the one before
        # it, but identifiers are looked up in the turns alone (the turn that names one first)
        vector = self.encoder.encode([asked[0].text])[0].tolist()
        semantic = self.vectors.nearest(vector, self.depth, where)
        found = [(_memories(semantic), self.weights.semantic, "semantic")]
        for query in asked:
            column = "text" if identifiers(query.text) else "search_text"
            fulltext = self.vectors.matching(query.text, self.depth, where, column)
            found.append((_memories(fulltext), self.weights.fulltext * query.weight, "fulltext"))
        if graph := self.memories.around_entities(prompt, keywords(prompt), self.depth):
            found.append((graph, self.weights.graph, "graph"))
        if span:  # the best matches among the memories of that time
            inside = _where(project, as_of, _recorded_about(span))
            ranked = _memories(self.vectors.nearest(vector, self.depth, inside))
            ranked += _memories(self.vectors.matching(asked[0].text, self.depth, inside))
            found.append((list(dict.fromkeys(ranked)), self.weights.temporal, "temporal"))
        return found


def _recorded_about(span: Window) -> Window:
    """Where memories about `span` are: at it, or in the days after (people tell what they did)."""
    days = (span.end - span.start).days
    return Window(span.start, span.end + timedelta(days=3 if days <= 7 else 7))


def _where(project: str | None, as_of: datetime | None, span: Window | None = None) -> str | None:
    clauses = []
    if project is not None:
        clauses.append(f"project = {string_literal(project)}")
    if as_of is not None:
        clauses.append(f"ts <= {_timestamp(as_of)}")
    if span is not None:
        clauses.append(f"ts >= {_timestamp(span.start)} AND ts < {_timestamp(span.end)}")
    return " AND ".join(clauses) or None


def _timestamp(moment: datetime) -> str:
    return f"timestamp {string_literal(moment.astimezone(UTC).isoformat(sep=' '))}"


def _memories(chunks: pa.Table) -> list[str]:
    """Chunk rows in rank order -> memory ids in rank order, each at its best chunk."""
    return list(dict.fromkeys(chunks.column("memory_id").to_pylist()))


def _admitted(
    memory: Features,
    as_of: datetime | None,
    now: datetime,
    network: Network | None,
    category: Category | None,
) -> bool:
    if network is not None and memory.network != network:
        return False
    if category is not None and memory.category != category:
        return False
    if memory.kind != "fact":
        return as_of is None or memory.ts is None or memory.ts <= as_of
    at = as_of or now
    known = as_of is None or memory.created_at is None or memory.created_at <= as_of
    began = memory.valid_at is None or memory.valid_at <= at
    ended = memory.invalid_at is not None and memory.invalid_at <= at
    forgotten = memory.expired_at is not None and memory.expired_at <= at
    superseded = as_of is None and memory.superseded_by is not None
    return known and began and not ended and not forgotten and not superseded


def _score(memory: Features, relevance: float, sources: list[str], now: datetime) -> Scored:
    moments = [m for m in [memory.ts, *memory.uses] if m is not None and m <= now]
    ages = [(now - m).total_seconds() for m in moments]
    activation = scoring.base_level(ages, memory.emotional) if ages else -math.inf
    days_since_use = min(ages, default=0.0) / scoring.DAY_S
    retrievability = scoring.retrievability(days_since_use, scoring.stability_days(ages))
    recency = scoring.recency(max(ages, default=0.0) / scoring.DAY_S)
    strength = 0.4 * scoring.logistic(activation) + 0.3 * retrievability + 0.3 * recency
    score = relevance * (0.75 + 0.25 * strength) * (0.5 + 0.5 * memory.confidence)
    return Scored(
        memory.memory_id,
        memory.kind,
        memory.text,
        memory.ts,
        memory.project,
        memory.session_id,
        memory.memory_type,
        round(score, 6),
        round(relevance, 6),
        activation,
        round(retrievability, 6),
        round(recency, 6),
        memory.confidence,
        sources,
    )
