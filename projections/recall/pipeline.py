"""Recall: from a prompt to the memories that matter, each with why.

1. Classify the task and generate 3 to 5 weighted queries (recall/tasks.py).
2. Gather candidates with four retrievers, all but the graph searching the memory index
   (recall/index.py): semantic (the prompt's vector against every memory's), full text (BM25
   over the memories, and over whole sessions, whose best turns are candidates), graph (the
   entities the prompt names, breadth first along facts to depth 2) and temporal (the best
   matches among the memories of a time the prompt names: "yesterday", "in March", a date);
   then the turns just before and after each conversation turn found.
3. Score every candidate on every component: the model's cosine with the memory alone, with the
   turn before it, and with the turns either side; BM25 of the memory, and of its whole session;
   found by the graph. Fuse them: by default the sum of their z-scores (recall/baseline.py),
   or Reciprocal Rank Fusion (k = 60) as an option; each turn then takes a share of the turns
   either side (z-scores only: ranks have no size to share), and the memories of the time the
   prompt names come first.
4. Weigh the fused relevance by how strongly each memory comes to mind (ACT-R activation, FSRS
   retrievability, recency) and by its confidence (recall/scoring.py). Facts superseded, ended
   or forgotten are left out, unless `as_of` asks about a time when they held. A global memory
   made in another project is first weighed by how related that project is to the one asking
   (`_by_origin`); memories never cross projects otherwise.

Recall reads a prompt's gist (schemas/text/gist.py: at most 2,000 characters, the most telling),
and every step on its text is linear. Given a deadline, a recall that passes it between two
steps stops there (Overdue): nobody waits for the answer any more, and others may be waiting
for the model.
"""

import math
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from datetime import UTC, datetime, timedelta
from typing import Literal, TypeVar

import msgspec
import numpy as np

from projections.embedding_model import Encoder
from projections.recall import block, fabric, scoring
from projections.recall.baseline import Baseline, z_scores
from projections.recall.block import Shown
from projections.recall.fusion import reciprocal_ranks
from projections.recall.index import BM25, Bm25, Floats, Mask, MemoryIndex, RowIds, Rows, Scope, best
from projections.recall.memories import Features, Kinship, Memories
from projections.recall.tasks import classify, keywords, queries
from projections.recall.timeframes import asks_when, window
from projections.recall.words import word_set
from projections.vectors import Vector, Vectors
from schemas.categories import Outcome, RememberedCategory
from schemas.kinds import SOURCE_CLAUDE_MEMORY
from schemas.memory import Category, Network
from schemas.recall import Query, Recall, RecallRequest, Scored, Task, Weighting, Window
from schemas.text.gist import gist

_SEMANTIC = ("semantic", "semantic_before", "semantic_around")  # the model, on the three readings
_SESSIONS = 3  # the sessions whose best turns are candidates (1 or 3: the same on LoCoMo)
_VECTORS_KEPT = 8  # prompts whose vectors are kept
_INJECTION_CANDIDATES = 50  # recalled for the hook's block, which keeps the few that answer
_SHORTLIST = 50  # candidates weighed by strength and confidence at once, the most relevant first


class Fusion(msgspec.Struct, frozen=True):
    """How the components of a memory's relevance make one score.

    Each weight multiplies a component's z-score ("zscore") or its reciprocal rank ("rrf").
    The defaults are those leave-one-conversation-out chooses on LoCoMo's development split,
    and hold when chosen again without each of its conversations (benchmarks/locomo_cv.py: 74.9
    R@5 and 82.1 R@10 on the conversation left out, against 75.0 and 82.3 in sample;
    docs/recall.md says what each is worth).
    """

    method: Literal["zscore", "rrf"] = "zscore"
    semantic: float = 1.0  # the model, on the memory alone
    semantic_before: float = 1.0  # ... on a turn read with the one before it
    semantic_around: float = 1.0  # ... on a turn read with the turns either side
    fulltext: float = 1.5  # BM25 on the memory
    session: float = 1.5  # BM25 on the memory's whole session
    graph: float = 1.0  # found along the entities the prompt names
    dated: float = 6.0  # the memory tells a time, and the prompt asks for one ("when did ...?")
    neighbour_share: float = 0.1  # of each turn's score, added to the turns either side
    answer_share: float = 0.3  # of a turn that asks, added to the turn after it: its answer
    timeframe: float = 10.0  # added to the memories of the time the prompt names: in z units, first
    vague_timeframe: float = 1.0  # ... when it names it loosely ("recently", "last year"): a hint
    k: int = 60  # Reciprocal Rank Fusion's


DEFAULT_FUSION = Fusion()


class Candidates(msgspec.Struct):
    """What the retrievers found, before scoring."""

    scope: Scope  # the memories searched
    found: dict[str, list[str]]  # memory id -> the retrievers that found it
    fulltext: list[tuple[Floats, float]]  # per query: each row's BM25 score, the query's weight
    sessions: Floats  # each session's BM25 score, its conversation read as one document
    named: list[str]  # the entities the prompt names: the context activation spreads from
    graph: list[str]
    in_window: set[str]


class Table(msgspec.Struct, frozen=True):
    """Every candidate of one recall, in row order, and what fusion reads of each. Computing it
    takes the model, BM25 and DuckDB; fusing it (`fused`) takes a few numpy passes over its few
    hundred entries, under any constants: benchmarks/locomo_cv.py fuses one table per grid point."""

    ids: list[str]  # the candidates
    components: dict[str, Floats]  # each component's value for each (z-scores; the graph: 1 if found)
    found: dict[str, Mask]  # where each component has a value (everywhere, but for the graph)
    before: RowIds  # the place among the candidates of the turn before each (-1: none there)
    after: RowIds  # ... and of the turn after it
    in_window: Mask  # of the time the prompt names
    vague: bool  # the prompt names that time loosely ("recently", "last year")
    answers: Mask  # the turn before it asks (and, for a prompt asking when, it tells a time)


class Prepared(msgspec.Struct, frozen=True):
    """What recall knows of a prompt before any constant of fusion or weighting is applied."""

    prompt: str  # its gist
    rows: Rows  # the view of the index it was computed on
    task: Task
    asked: list[Query]
    span: Window | None
    query: Vector  # the prompt's vector
    candidates: Candidates
    table: Table


class Overdue(TimeoutError):
    """A recall passed its deadline; nobody waits for its answer any more."""


def _in_time(deadline: float | None) -> None:
    if deadline is not None and time.monotonic() > deadline:
        raise Overdue("recall passed its deadline")


class Recaller:
    """Everything recall needs, loaded once: the model, the memory index, the projections."""

    def __init__(
        self,
        encoder: Encoder,
        vectors: Vectors,
        memories: Memories,
        fusion: Fusion = DEFAULT_FUSION,
        depth: int = 100,
        bm25: Bm25 = BM25,
    ) -> None:
        self.encoder = encoder
        self.index = MemoryIndex(vectors)
        self.memories = memories
        self.fusion = fusion
        self.depth = depth  # candidates each retriever hands to fusion
        self.bm25 = bm25  # full text's constants
        self._baselines: dict[str | None, Baseline] = {}  # per project (None: all)
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="recall")
        self._vectors: dict[str, Vector] = {}  # the last prompts' vectors, oldest first

    def recall(
        self,
        prompt: str,
        *,
        limit: int = 10,
        project: str | None = None,
        as_of: datetime | None = None,
        network: Network | None = None,
        category: Category | RememberedCategory | None = None,
        outcome: Outcome | None = None,
        agent: str | None = None,
        global_only: bool = False,
        within_session: str | None = None,
        hooked: bool = False,
        fusion: Fusion | None = None,
        weighting: Weighting = "cognitive",
        dedup: bool = False,
        answers_only: bool = False,
        now: datetime | None = None,
        deadline: float | None = None,
    ) -> Recall:
        """The memories that matter for `prompt`, best first; Overdue past `deadline` (a
        time.monotonic() instant). `answers_only`: questions asked before are left out
        (block.asked_before), before the `limit` best are taken; `hooked`: for a hook, which
        gives the agent nothing Claude Code loads itself."""
        now = now or datetime.now(UTC)
        fusion = fusion or self.fusion
        prepared = self.prepare(
            prompt, project=project, as_of=as_of, now=now, deadline=deadline, questions=not answers_only
        )
        rows, query, candidates, table = prepared.rows, prepared.query, prepared.candidates, prepared.table
        said = word_set(prepared.prompt)
        fused, components = _fused(table, fusion)
        relevance = dict(zip(table.ids, scaled(fused).tolist(), strict=True))
        relevance, factors = _by_origin(relevance, project, self.memories.kinship())
        place = {m: i for i, m in enumerate(table.ids)}
        ranked = sorted(relevance, key=lambda m: -relevance[m])
        step = weighed_at_once(limit)
        scored: list[Scored] = []
        for start in range(0, len(ranked), step):  # the best first, until enough are admitted
            _in_time(deadline)
            ids = ranked[start : start + step]
            features = self.memories.features(ids, candidates.named)
            scored += [
                _score(
                    features[m],
                    relevance[m],
                    candidates.found.get(m, ["neighbour"]),
                    _explained(components, table.found, place[m], factors.get(m)),
                    weighting,
                    len(candidates.named),
                    now,
                    _similarity(rows, query, m),
                )
                for m in ids
                if m in features
                and admitted(features[m], as_of, now, network, category)
                and _in_scope(features[m], outcome, agent, global_only)
                and not _in_window(features[m], within_session)
                # Claude Code's own memory files (their kind in memory_texts is their source):
                # Claude Code loads them itself, so a hook never gives them again
                and not (hooked and features[m].kind == SOURCE_CLAUDE_MEMORY)
                and not (answers_only and block.asked_before(features[m].kind, features[m].text, said))
            ]
            if len(scored) >= limit:
                break
        scored.sort(key=lambda s: -s.score)
        if dedup:
            merged = fabric.deduplicated(scored, lambda r: r.text)
            scored = [msgspec.structs.replace(r, cross_validated=twice) for r, twice in merged]
        return Recall(prepared.prompt, prepared.task, prepared.asked, prepared.span, scored[:limit])

    def prepare(
        self,
        prompt: str,
        *,
        project: str | None = None,
        as_of: datetime | None = None,
        now: datetime | None = None,
        deadline: float | None = None,
        questions: bool = True,
    ) -> Prepared:
        """Everything recall computes of `prompt` before fusing: its gist, task and queries, the
        time it names, its vector, the candidates and their components. The costly part of a
        recall (the model, BM25, DuckDB's graph); Overdue past `deadline`. Without `questions`,
        the prompts that ask are no memories at all: neither candidates nor counted in BM25's
        statistics, so that asking a question, or asking it again, changes no answer."""
        if self.memories.follow:
            self.refresh()
        rows = self.index.rows
        prompt = gist(prompt)
        task = classify(prompt)
        asked = queries(prompt, task)
        span = window(prompt, as_of or now or datetime.now(UTC))
        query, candidates = self._candidates(rows, prompt, asked, span, project, as_of, questions)
        _in_time(deadline)
        vague = span is not None and span.vague
        table = self._table(rows, query, candidates, project, vague, asks_when(prompt))
        return Prepared(prompt, rows, task, asked, span, query, candidates, table)

    def answer(self, request: RecallRequest, deadline: float | None = None) -> Recall:
        """Recall as a request (from a hook or `reverie recall`) asks for it."""
        return self.recall(
            request.prompt,
            limit=request.limit,
            project=request.project,
            as_of=request.as_of,
            network=request.network,
            category=request.category,
            outcome=request.outcome,
            agent=request.agent,
            global_only=request.global_only,
            within_session=request.session_id if request.hook else None,
            hooked=request.hook is not None,
            fusion=msgspec.structs.replace(self.fusion, method=request.fusion),
            weighting=request.weighting,
            dedup=request.dedup,
            answers_only=request.answers_only,
            deadline=deadline,
        )

    def injection(
        self, request: RecallRequest, deadline: float | None = None, known: Sequence[str] = ()
    ) -> list[Shown]:
        """What the UserPromptSubmit hook injects for `request`: the few memories that answer its
        prompt, each once, a long one as its passage that matters (projections/recall/block.py);
        [] when nothing in memory answers it. `known`: what the agent holds already."""
        return self.injected(request, deadline, known)[1]

    def injected(
        self, request: RecallRequest, deadline: float | None = None, known: Sequence[str] = ()
    ) -> tuple[Recall, list[Shown], dict[str, str]]:
        """`injection`, the recall it chose from (the candidates, each with its scores), and why
        each candidate left out is."""
        wide = msgspec.structs.replace(
            request, limit=max(request.limit, _INJECTION_CANDIDATES), answers_only=True
        )
        found = self.answer(wide, deadline)
        _in_time(deadline)
        query = self.vector_of(found.queries[0].text)
        shown, left = block.select_explained(
            found.prompt, found.results, query, self.index.passages, self.index.rows.rarity, known
        )
        return found, shown, left

    def vector_of(self, text: str) -> Vector:
        """The model's vector of `text`; the last few asked for are kept (a recall and the block
        it makes ask for the same prompt's)."""
        vector = self._vectors.pop(text, None)
        if vector is None:
            vector = self.encoder.encode([text])[0]
        self._vectors[text] = vector
        while len(self._vectors) > _VECTORS_KEPT:
            del self._vectors[next(iter(self._vectors))]
        return vector

    def refresh(self) -> bool:
        """Bring the index in step with the vectors; compute again the baselines whose scope grew
        or shrank by a tenth since. Whether the memories changed."""
        if not self.index.sync():
            return False
        for project, known in list(self._baselines.items()):
            scope = self.index.rows.scope(project)
            if abs(scope.count - known.memories) * 10 > known.memories:
                self._baselines[project] = Baseline(scope)
        return True

    def baseline(self, rows: Rows, project: str | None) -> Baseline:
        """The spread of the scores of the memories in scope (computed on first use)."""
        known = self._baselines.get(project)
        if known is None:
            known = self._baselines[project] = Baseline(rows.scope(project))
        return known

    def _candidates(
        self,
        rows: Rows,
        prompt: str,
        asked: list[Query],
        span: Window | None,
        project: str | None,
        as_of: datetime | None,
        questions: bool = True,
    ) -> tuple[Vector, Candidates]:
        """The prompt's vector and what the retrievers found: the model and DuckDB work in
        threads while numpy searches the words."""
        scope = rows.scope(project, as_of, bm25=self.bm25, questions=questions)
        encoded = self._pool.submit(self.vector_of, asked[0].text)
        graph = self._pool.submit(self._graph, prompt)
        try:
            fulltext = [(scope.bm25(q.text), q.weight) for q in asked]
            sessions = scope.session_bm25(prompt)
            query = encoded.result()
            named, facts = graph.result()
        finally:  # a failed retriever: the others end before the next recall uses DuckDB
            wait([encoded])
            wait([graph])
        cosines = rows.vectors @ query
        found: dict[str, list[str]] = {}
        _note(found, rows.ids[scope.nearest(cosines, self.depth)], "semantic")
        for scores, _ in fulltext:
            _note(found, rows.ids[scope.matching(scores, self.depth)], "fulltext")
        _note(found, scope.holding(facts), "graph")  # what shares an entity may be another project's
        sessions_found = np.argsort(-sessions)[:_SESSIONS]
        sessions_found = sessions_found[sessions[sessions_found] > 0]
        in_sessions = scope.mask & rows.turn & np.isin(rows.session, sessions_found)
        _note(found, rows.ids[best(cosines, self.depth, in_sessions)], "session")  # their best turns
        in_window: set[str] = set()
        if span:  # the best matches among the memories of that time
            inside = rows.scope(project, as_of, _recorded_about(span), self.bm25, questions)
            in_window.update(rows.ids[inside.nearest(cosines, self.depth)])
            in_window.update(rows.ids[inside.matching(inside.bm25(prompt), self.depth)])
            _note(found, sorted(in_window), "temporal")
        return query, Candidates(scope, found, fulltext, sessions, named, facts, in_window)

    def _graph(self, prompt: str) -> tuple[list[str], list[str]]:
        """The entities the prompt names, and the facts around them."""
        named = self.memories.named_entities(prompt, keywords(prompt))
        return named, self.memories.around_entities(named, self.depth)

    def _table(
        self, rows: Rows, query: Vector, candidates: Candidates, project: str | None, vague: bool, when: bool
    ) -> Table:
        """The candidates and their components. The turns next to those found are candidates
        too; a memory not in the index yet (not embedded) is left for a later recall. `when`: the
        prompt asks for a time, which the memories that tell one hold (the component "dated")."""
        found = np.fromiter(rows.rows_of(list(candidates.found)).values(), np.int64)
        beside = np.concatenate([rows.before[found], rows.after[found]])
        picked = np.unique(np.concatenate([found, beside[beside >= 0]]))
        ids: list[str] = rows.ids[picked].tolist()
        components = self._components(rows, query, picked, candidates, project)
        graph = _holding(rows, picked, candidates.graph)
        components["graph"] = graph.astype(np.float64)
        dated = rows.dated[picked] & when
        components["dated"] = dated.astype(np.float64)
        everywhere = np.ones(len(picked), np.bool_)
        found_by = {name: everywhere for name in components} | {"graph": graph, "dated": dated}
        in_window = _holding(rows, picked, sorted(candidates.in_window))
        prior = rows.before[picked]
        before, after = _place(picked, prior), _place(picked, rows.after[picked])
        answers = (prior >= 0) & rows.asks[np.maximum(prior, 0)] & (dated if when else True)
        return Table(ids, components, found_by, before, after, in_window, vague, answers)

    def _components(
        self, rows: Rows, query: Vector, picked: RowIds, candidates: Candidates, project: str | None
    ) -> dict[str, Floats]:
        """Each component's z-score for each candidate, but for the graph."""
        baseline = self.baseline(rows, project)
        readings = rows.readings(picked)
        values: dict[str, Floats] = {}
        spreads = (baseline.semantic, baseline.semantic_before, baseline.semantic_around)
        for name, spread, reading in zip(_SEMANTIC, spreads, readings, strict=True):
            values[name] = spread.z(query, reading)
        among = candidates.scope.mask
        total_weight = sum(weight for _, weight in candidates.fulltext) or 1.0
        fulltext = sum(
            (w * z_scores(s, among, picked) for s, w in candidates.fulltext), np.zeros(len(picked))
        )
        values["fulltext"] = fulltext / total_weight
        by_session = np.zeros(rows.count)  # a turn's session's score; other memories have none
        by_session[rows.turn] = candidates.sessions[rows.session[rows.turn]]
        # a memory that is no turn (a fact, a passage) has no session to be read with: neutral,
        # not the z-score of a session that matched nothing. A turn's is weighed among the turns:
        # among every memory, the passages' zeros would make the best session's turns stand ten
        # deviations out, above every passage that answers
        turns = among & rows.turn
        values["session"] = np.where(rows.turn[picked], z_scores(by_session, turns, picked), 0.0)
        return values


def fused(table: Table, fusion: Fusion) -> Floats:
    """Each candidate's fused score under `fusion` (see `Fusion`), before scaling: a few numpy
    passes over the table, no model, no DuckDB."""
    return _fused(table, fusion)[0]


def _fused(table: Table, fusion: Fusion) -> tuple[Floats, dict[str, Floats]]:
    """The fused scores, and the components as they were summed (z-scores or reciprocal ranks)."""
    components = table.components
    if fusion.method == "rrf":
        components = {n: reciprocal_ranks(v, table.found[n], fusion.k) for n, v in components.items()}
    relevance = np.zeros(len(table.ids))
    for name, values in components.items():  # in the order of the components, as they were summed
        relevance = relevance + getattr(fusion, name) * values
    timeframe = fusion.vague_timeframe if table.vague else fusion.timeframe
    if fusion.method == "rrf":  # ranks have no size to share, and the window comes first
        boost = timeframe * float(relevance.max()) if len(relevance) else 0.0
        return relevance + np.where(table.in_window, boost, 0.0), components
    sides = fusion.neighbour_share * (_at(relevance, table.before) + _at(relevance, table.after))
    asked = fusion.answer_share * np.where(table.answers, _at(np.maximum(relevance, 0.0), table.before), 0.0)
    return relevance + sides + asked + np.where(table.in_window, timeframe, 0.0), components


def scaled(fused: Floats) -> Floats:
    """`fused` scaled from the worst candidate (0) to the best (1); all 1 when they are equal."""
    if not len(fused):
        return fused
    high, low = float(fused.max()), float(fused.min())
    return (fused - low) / (high - low) if high > low else np.ones(len(fused))


def _at(values: Floats, places: RowIds) -> Floats:
    """The values at these places, 0 where the place is -1."""
    return np.where(places >= 0, values[np.maximum(places, 0)], 0.0)


def _holding(rows: Rows, picked: RowIds, memory_ids: list[str]) -> Mask:
    """Which of the `picked` rows are those of `memory_ids`."""
    return np.isin(picked, np.fromiter(rows.rows_of(memory_ids).values(), np.int64))


def _place(picked: RowIds, rows: RowIds) -> RowIds:
    """The place of each of `rows` in `picked` (sorted), -1 for a row not there."""
    if not len(picked):
        return np.full(len(rows), -1, np.int64)
    places = np.minimum(np.searchsorted(picked, rows), len(picked) - 1)
    return np.where((rows >= 0) & (picked[places] == rows), places, -1)


def _explained(
    components: dict[str, Floats], found: dict[str, Mask], place: int, kinship: float | None
) -> dict[str, float]:
    """A candidate's components as `--explain` shows them, and its kinship factor if weighed."""
    shown = {n: round(float(values[place]), 6) for n, values in components.items() if found[n][place]}
    return shown | ({"kinship": kinship} if kinship is not None else {})


def _by_origin(
    relevance: dict[str, float], project: str | None, kinship: Kinship
) -> tuple[dict[str, float], dict[str, float]]:
    """Each candidate's relevance, that of a global memory made in another project multiplied
    by (1 + r) / 2, r being how related that project is to the one asking (0 to 1: the view
    related_projects, HORA's measure of shared dependencies and entities); and those factors.

    (1 + r) / 2 is the mean of the two readings of "global": as true here as where it was made
    (x 1), and only as true as the two projects are alike (x r). So such a memory from a project
    sharing nothing with this one keeps half its relevance, and one from a project sharing all
    keeps it whole. The project's own memories, and those made global in it or in no project,
    are left as they are: without global memories from elsewhere recall ranks as before. It
    weighs the relevance scaled from 0 (the worst candidate) to 1 (the best), never the fused
    z-scores, whose sign would turn it into a boost. A dict lookup per candidate; recall across
    all projects (`project` None) has no asker to be related to, and is left alone.
    """
    if project is None or not kinship.origins:
        return relevance, {}
    factors = {m: (1 + kinship.relatedness(m, project)) / 2 for m in relevance if m in kinship.origins}
    factors = {m: f for m, f in factors.items() if f < 1}
    return {m: r * factors.get(m, 1.0) for m, r in relevance.items()}, factors


def _similarity(rows: Rows, query: Vector, memory_id: str) -> float:
    """The model's cosine of the prompt and the memory (0 for one not in the index)."""
    row = rows.row_of.get(memory_id)
    return round(float(rows.vectors[row] @ query), 6) if row is not None else 0.0


def _note(found: dict[str, list[str]], ids: Iterable[str], retriever: str) -> None:
    for memory_id in ids:
        sources = found.setdefault(memory_id, [])
        if retriever not in sources:
            sources.append(retriever)


def _recorded_about(span: Window) -> Window:
    """Where memories about `span` are: at it, or in the days after (people tell what they did)."""
    days = (span.end - span.start).days
    return Window(span.start, span.end + timedelta(days=3 if days <= 7 else 7))


def _in_window(memory: Features, session_id: str | None) -> bool:
    """Whether the memory is a turn of the session asking, which its agent has before it already:
    injecting its own earlier prompts again would crowd out what it does not know."""
    return session_id is not None and memory.session_id == session_id and memory.kind in block.RAW


def _in_scope(memory: Features, outcome: Outcome | None, agent: str | None, global_only: bool) -> bool:
    """Whether a memory is of the outcome and the agent asked for, and everyone's if asked."""
    if outcome is not None and memory.outcome != outcome:
        return False
    if agent is not None and memory.agent != agent:
        return False
    return not (global_only and memory.project is not None)


def weighed_at_once(limit: int) -> int:
    """How many candidates, the most relevant first, are weighed by strength at a time, until
    `limit` of them are admitted."""
    return max(_SHORTLIST, 3 * limit)


def admitted(
    memory: Features,
    as_of: datetime | None,
    now: datetime,
    network: Network | None,
    category: Category | RememberedCategory | None,
) -> bool:
    """Whether recall may answer with `memory`: of the network and category asked, and, for a
    fact, believed now (or at `as_of`)."""
    if network is not None and memory.network != network:
        return False
    if category is not None and memory.category != category:
        return False
    if memory.kind != "fact":
        return as_of is None or memory.ts is None or memory.ts <= as_of
    if as_of is None:  # what is believed now: the one definition (projections/folds/facts.py)
        return memory.current
    known = memory.created_at is None or memory.created_at <= as_of
    began = memory.valid_at is None or memory.valid_at <= as_of
    ended = memory.invalid_at is not None and memory.invalid_at <= as_of
    forgotten = memory.expired_at is not None and memory.expired_at <= as_of
    return known and began and not ended and not forgotten


def strength_of(memory: Features, in_context: int, now: datetime) -> tuple[float, float, float, float]:
    """How strongly a memory comes to mind now, whatever the prompt: its ACT-R activation (with
    what spreads from the `in_context` entities the prompt names), FSRS retrievability and
    recency, and the strength they make (0 to 1)."""
    at = now.timestamp()
    moments = [*([memory.ts.timestamp()] if memory.ts else []), *memory.uses]
    ages = [at - m for m in moments if m <= at]
    activation = scoring.base_level(ages, memory.emotional) if ages else -math.inf
    activation += scoring.spreading(memory.fans, in_context) + scoring.associative(
        memory.associated, in_context
    )
    days_since_use = min(ages, default=0.0) / scoring.DAY_S
    failed = [at - m for m in memory.failed if m <= at]
    retrievability = scoring.retrievability(days_since_use, scoring.stability_days(ages, failed))
    recency = scoring.recency(max(ages, default=0.0) / scoring.DAY_S)
    strength = 0.4 * scoring.logistic(activation) + 0.3 * retrievability + 0.3 * recency
    return activation, retrievability, recency, strength


Number = TypeVar("Number", float, Floats)


def cognitive(relevance: Number, strength: Number, confidence: Number) -> Number:
    """A memory's score by the default weighting: how well it matches comes first, strength
    and confidence weigh it. Numbers or arrays alike (benchmarks/locomo_cv.py scores arrays)."""
    return relevance * (0.75 + 0.25 * strength) * (0.5 + 0.5 * confidence)


def _score(
    memory: Features,
    relevance: float,
    sources: list[str],
    components: dict[str, float],
    weighting: Weighting,
    in_context: int,
    now: datetime,
    similarity: float,
) -> Scored:
    activation, retrievability, recency, strength = strength_of(memory, in_context, now)
    if weighting == "fabric":
        score = fabric.weighted(relevance, recency, memory.confidence)
    else:
        score = cognitive(relevance, strength, memory.confidence)
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
        similarity=similarity,
        category=memory.category,
        derived_from=memory.derived_from,
    )
