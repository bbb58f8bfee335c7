"""Recall: from a prompt to the memories that matter, each with why.

1. Classify the task and generate 3 to 5 weighted queries (recall/tasks.py).
2. Gather candidates with four retrievers: semantic (LanceDB ANN over the embedded chunks),
   full text (LanceDB BM25 over the memories, and over whole sessions), graph (the entities the
   prompt names, breadth first along facts to depth 2) and temporal (the best matches among the
   memories of a time the prompt names: "yesterday", "in March", a date); then the turns just
   before and after each conversation turn found.
3. Score every candidate on every component: the model's cosine with the memory alone, with the
   turn before it, and with the turns either side; BM25 of the memory, and of its whole session;
   found by the graph. Fuse them: by default the sum of their z-scores (recall/baseline.py),
   or Reciprocal Rank Fusion (k = 60) as an option; each turn then takes a share of the turns
   either side (z-scores only: ranks have no size to share), and the memories of the time the
   prompt names come first.
4. Weigh the fused relevance by how strongly each memory comes to mind (ACT-R activation, FSRS
   retrievability, recency) and by its confidence (recall/scoring.py). Facts superseded, ended
   or forgotten are left out, unless `as_of` asks about a time when they held.
"""

import math
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor, wait
from datetime import UTC, datetime, timedelta
from typing import Literal

import msgspec
import numpy as np
import pyarrow as pa

from projections.embeddings import Encoder
from projections.literals import string_literal
from projections.recall import fabric, scoring
from projections.recall.baseline import Baseline, sparse_z, views
from projections.recall.fusion import reciprocal_ranks
from projections.recall.memories import Around, Features, Memories
from projections.recall.tasks import Query, Task, classify, keywords, queries
from projections.recall.timeframes import Window, window
from projections.vectors import Vector, Vectors
from schemas.memory import Category, Network
from schemas.recall import RecallRequest, Weighting

Sides = tuple[str | None, str | None]  # the turns before and after a turn
_SHORTLIST = 50  # candidates weighed by strength and confidence at once, the most relevant first


class Fusion(msgspec.Struct, frozen=True):
    """How the components of a memory's relevance make one score.

    Each weight multiplies a component's z-score ("zscore") or its reciprocal rank ("rrf").
    The defaults were measured on LoCoMo's development split (benchmarks/locomo.py and the
    prototype in docs/recall.md, where leaving any one component out cost 2 to 8 points of R@5).
    """

    method: Literal["zscore", "rrf"] = "zscore"
    semantic: float = 1.0  # the model, on the memory alone
    semantic_before: float = 1.0  # ... on a turn read with the one before it
    semantic_around: float = 1.0  # ... on a turn read with the turns either side
    fulltext: float = 1.0  # BM25 on the memory
    session: float = 1.0  # BM25 on the memory's whole session
    graph: float = 1.0  # found along the entities the prompt names
    neighbour_share: float = 0.2  # of each turn's score, added to the turns either side
    timeframe: float = 10.0  # added to the memories of the time the prompt names: in z units, first
    vague_timeframe: float = 1.0  # ... when it names it loosely ("recently", "last year"): a hint
    k: int = 60  # Reciprocal Rank Fusion's


DEFAULT_FUSION = Fusion()


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


class Recall(msgspec.Struct, frozen=True):
    prompt: str
    task: Task
    queries: list[Query]
    window: Window | None
    results: list[Scored]


class Candidates(msgspec.Struct):
    """What the retrievers found, before scoring."""

    found: dict[str, list[str]]  # memory id -> the retrievers that found it
    fulltext: list[tuple[dict[str, float], float]]  # per query: BM25 score per memory, query weight
    sessions: dict[str, float]  # session id -> BM25 score of its whole conversation
    session_turns: dict[str, int]
    named: list[str]  # the entities the prompt names: the context activation spreads from
    graph: list[str]
    in_window: set[str]


class Recaller:
    """Everything recall needs, loaded once: the model, the vectors, the projections."""

    def __init__(
        self,
        encoder: Encoder,
        vectors: Vectors,
        memories: Memories,
        fusion: Fusion = DEFAULT_FUSION,
        depth: int = 100,
    ) -> None:
        self.encoder = encoder
        self.vectors = vectors
        self.memories = memories
        self.fusion = fusion
        self.depth = depth  # candidates each retriever hands to fusion
        self._baselines: dict[str | None, Baseline] = {}  # per project (None: all)
        self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="recall")

    def recall(
        self,
        prompt: str,
        *,
        limit: int = 10,
        project: str | None = None,
        as_of: datetime | None = None,
        network: Network | None = None,
        category: Category | None = None,
        fusion: Fusion | None = None,
        weighting: Weighting = "cognitive",
        dedup: bool = False,
        now: datetime | None = None,
    ) -> Recall:
        now = now or datetime.now(UTC)
        fusion = fusion or self.fusion
        task = classify(prompt)
        asked = queries(prompt, task)
        span = window(prompt, as_of or now)
        query, candidates = self._candidates(prompt, asked, span, project, as_of)
        vague = span is not None and span.vague
        relevance, components = self._relevance(query, candidates, project, fusion, vague)
        ranked = sorted(relevance, key=lambda m: -relevance[m])
        step = max(_SHORTLIST, 3 * limit)
        scored: list[Scored] = []
        for start in range(0, len(ranked), step):  # the best first, until enough are admitted
            ids = ranked[start : start + step]
            features = self.memories.features(ids, candidates.named)
            scored += [
                _score(
                    features[m],
                    relevance[m],
                    candidates.found.get(m, ["neighbour"]),
                    {name: round(float(values[m]), 6) for name, values in components.items() if m in values},
                    weighting,
                    len(candidates.named),
                    now,
                )
                for m in ids
                if m in features and _admitted(features[m], as_of, now, network, category)
            ]
            if len(scored) >= limit:
                break
        scored.sort(key=lambda s: -s.score)
        if dedup:
            merged = fabric.deduplicated(scored, lambda r: r.text)
            scored = [msgspec.structs.replace(r, cross_validated=twice) for r, twice in merged]
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
            fusion=msgspec.structs.replace(self.fusion, method=request.fusion),
            weighting=request.weighting,
            dedup=request.dedup,
        )

    def _relevance(
        self, query: Vector, candidates: Candidates, project: str | None, fusion: Fusion, vague: bool
    ) -> tuple[dict[str, float], dict[str, dict[str, float]]]:
        """Each candidate's relevance, fused and scaled from the worst (0) to the best (1), and
        its components. The turns next to those found are candidates too."""
        sides = _sides(self.memories.around(list(candidates.found)))
        read = [*candidates.found, *sides, *(t for pair in sides.values() for t in pair if t)]
        vectors, sessions = self.vectors.vectors_of(list(dict.fromkeys(read)))
        # a memory not embedded yet is left for a later recall
        ids = [m for m in dict.fromkeys([*candidates.found, *sides]) if m in vectors]
        components = self._components(query, ids, sides, vectors, sessions, candidates, project)
        if fusion.method == "rrf":
            components = {name: reciprocal_ranks(values, fusion.k) for name, values in components.items()}
        fused = _fuse(fusion, ids, components, sides, candidates.in_window, vague)
        high, low = max(fused.values(), default=1.0), min(fused.values(), default=0.0)
        return {m: (f - low) / (high - low) if high > low else 1.0 for m, f in fused.items()}, components

    def _candidates(
        self,
        prompt: str,
        asked: list[Query],
        span: Window | None,
        project: str | None,
        as_of: datetime | None,
    ) -> tuple[Vector, Candidates]:
        """The prompt's vector and what the retrievers found, asked all at once: the model, LanceDB
        and DuckDB each leave the interpreter while they work."""
        where = _where(project, as_of)
        pool = self._pool
        encoded = pool.submit(lambda: self.encoder.encode([asked[0].text])[0])
        texts = [pool.submit(self.vectors.matching, q.text, self.depth, where) for q in asked]
        sessions = pool.submit(self.vectors.matching_sessions, prompt, self.depth, _where(project, None))
        graph = pool.submit(self._graph, prompt)
        asking = [encoded, *texts, sessions, graph]
        try:
            query = encoded.result()
            inside = _where(project, as_of, _recorded_about(span)) if span else None
            semantic = pool.submit(self.vectors.nearest, query.tolist(), self.depth, where)
            timely = (
                [  # the best matches among the memories of that time
                    pool.submit(self.vectors.nearest, query.tolist(), self.depth, inside),
                    pool.submit(self.vectors.matching, prompt, self.depth, inside),
                ]
                if inside
                else []
            )
            asking += [semantic, *timely]
            found: dict[str, list[str]] = {}
            _note(found, _memories(semantic.result()), "semantic")
            fulltext = []
            for weighed, matching in zip(asked, texts, strict=True):
                matches = _best_scores(matching.result(), "memory_id")
                _note(found, matches, "fulltext")
                fulltext.append((matches, weighed.weight))
            named, facts = graph.result()
            _note(found, facts, "graph")
            in_window = {m for future in timely for m in _memories(future.result())}
            _note(found, sorted(in_window), "temporal")
            matched = sessions.result()
        finally:  # a failed retriever: the others end before the next recall uses DuckDB
            wait(asking)
        turns = dict(zip(matched["session_id"].to_pylist(), matched["turns"].to_pylist(), strict=True))
        return query, Candidates(
            found, fulltext, _best_scores(matched, "session_id"), turns, named, facts, in_window
        )

    def _graph(self, prompt: str) -> tuple[list[str], list[str]]:
        """The entities the prompt names, and the facts around them."""
        named = self.memories.named_entities(prompt, keywords(prompt))
        return named, self.memories.around_entities(named, self.depth)

    def _components(
        self,
        query: Vector,
        ids: list[str],
        sides: dict[str, Sides],
        vectors: dict[str, Vector],
        sessions: dict[str, str | None],
        candidates: Candidates,
        project: str | None,
    ) -> dict[str, dict[str, float]]:
        """Each component's value for each candidate (z-scores, but for the graph: 1 if found)."""
        baseline = self.baseline(project)
        rows = list(vectors)
        row = {m: i for i, m in enumerate(rows)}
        matrix = np.stack(list(vectors.values())) if rows else np.zeros((0, self.vectors.dim), np.float32)
        before, after = ([row.get(sides.get(m, (None, None))[i] or "", -1) for m in rows] for i in (0, 1))
        with_before, both_sides = views(matrix, before, after)
        scored = [m for m in ids if m in row]
        picked = [row[m] for m in scored]
        values: dict[str, dict[str, float]] = {}
        for name, spread, readings in (
            ("semantic", baseline.semantic, matrix),
            ("semantic_before", baseline.semantic_before, with_before),
            ("semantic_around", baseline.semantic_around, both_sides),
        ):
            values[name] = dict(zip(scored, spread.z(query, readings[picked]).tolist(), strict=True))
        total_weight = sum(weight for _, weight in candidates.fulltext) or 1.0
        per_query = [(sparse_z(scores, None, baseline.memories), w) for scores, w in candidates.fulltext]
        values["fulltext"] = {m: sum(w * z.get(m, z[""]) for z, w in per_query) / total_weight for m in ids}
        by_session = sparse_z(candidates.sessions, candidates.session_turns, baseline.memories)
        values["session"] = {m: by_session.get(sessions.get(m) or "", by_session[""]) for m in ids}
        values["graph"] = {m: 1.0 for m in candidates.graph if m in vectors}
        return values

    def baseline(self, project: str | None) -> Baseline:
        """The spread of the scores of the memories in scope (computed on first use)."""
        known = self._baselines.get(project)
        if known is None:
            known = self._baselines[project] = Baseline(self.vectors.first_chunks(_where(project, None)))
        return known

    def refresh_baselines(self) -> None:
        """Compute again the baselines whose scope grew or shrank by a tenth since."""
        for project, known in list(self._baselines.items()):
            where = _where(project, None)
            if abs(self.vectors.count_memories(where) - known.memories) * 10 > known.memories:
                self._baselines[project] = Baseline(self.vectors.first_chunks(where))


def _fuse(
    fusion: Fusion,
    ids: list[str],
    components: dict[str, dict[str, float]],
    sides: dict[str, Sides],
    in_window: set[str],
    vague: bool,
) -> dict[str, float]:
    weights = msgspec.structs.asdict(fusion)
    timeframe = fusion.vague_timeframe if vague else fusion.timeframe
    relevance = {
        m: sum(weights[name] * values.get(m, 0.0) for name, values in components.items()) for m in ids
    }
    if fusion.method == "rrf":  # ranks have no size to share, and the window comes first
        boost = timeframe * max(relevance.values(), default=0.0)
        return {m: r + (boost if m in in_window else 0.0) for m, r in relevance.items()}
    share = fusion.neighbour_share
    return {
        m: relevance[m]
        + share * sum(relevance.get(t or "", 0.0) for t in sides.get(m, ()))
        + (timeframe if m in in_window else 0.0)
        for m in ids
    }


def _sides(around: dict[str, Around]) -> dict[str, Sides]:
    """The turns either side of each turn found, and of the turns next to them."""
    sides = {m: (a.before, a.after) for m, a in around.items()}
    for m, a in around.items():
        if a.before:
            sides.setdefault(a.before, (a.two_before, m))
        if a.after:
            sides.setdefault(a.after, (m, a.two_after))
    return sides


def _note(found: dict[str, list[str]], ids: Iterable[str], retriever: str) -> None:
    for memory_id in ids:
        sources = found.setdefault(memory_id, [])
        if retriever not in sources:
            sources.append(retriever)


def _best_scores(rows: pa.Table, key: str) -> dict[str, float]:
    """BM25 results -> each key's best `_score`."""
    best: dict[str, float] = {}
    for k, score in zip(rows.column(key).to_pylist(), rows.column("_score").to_pylist(), strict=True):
        best[k] = max(best.get(k, 0.0), score)
    return best


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


def _score(
    memory: Features,
    relevance: float,
    sources: list[str],
    components: dict[str, float],
    weighting: Weighting,
    in_context: int,
    now: datetime,
) -> Scored:
    moments = [m for m in [memory.ts, *memory.uses] if m is not None and m <= now]
    ages = [(now - m).total_seconds() for m in moments]
    activation = scoring.base_level(ages, memory.emotional) if ages else -math.inf
    activation += scoring.spreading(memory.fans, in_context) + scoring.associative(
        memory.associated, in_context
    )
    days_since_use = min(ages, default=0.0) / scoring.DAY_S
    retrievability = scoring.retrievability(days_since_use, scoring.stability_days(ages))
    recency = scoring.recency(max(ages, default=0.0) / scoring.DAY_S)
    strength = 0.4 * scoring.logistic(activation) + 0.3 * retrievability + 0.3 * recency
    if weighting == "fabric":
        score = fabric.weighted(relevance, recency, memory.confidence)
    else:  # how well it matches comes first; strength and confidence weigh it
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
        components,
    )
