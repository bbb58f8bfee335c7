"""What recall searches, held in the memory of the process that recalls: every memory's vector,
words, project, session, time and place in its conversation, read from the vectors' LanceDB
table and kept in step with it (`MemoryIndex.sync`).

Each memory is a row: its chunks' texts joined, the normalized mean of their vectors. Rows are
only ever appended, so that a recall reading one view (`Rows`) is never disturbed by the sync
that makes the next: a memory whose text changed gets a new row and its old one dies; when a
quarter of the rows are dead, everything is read again.

Why not LanceDB's own searches, which recall used before: its BM25 does not let one set k1 and b
(on LoCoMo's development split, this index with k1 = 0.9, b = 0.4 and recall/words.py gave 3.7
points of R@5 more, and 2.3 of R@10), and each of the five or six searches a recall makes (the
prompt's vector, three to five queries' words, the sessions') cost 10 to 15 ms with the project
prefilter at 100k memories.
Here the same searches are numpy over arrays (benchmarks/recall_latency.py has the numbers), and
BM25 of a whole session is summed from its turns' words, so sessions need no table of their own.
"""

import functools
import math
from collections import Counter
from datetime import UTC, datetime
from itertools import pairwise
from typing import Generic, NamedTuple, TypeVar

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from projections.recall.block import asks
from projections.recall.timeframes import tells_time
from projections.recall.words import terms
from projections.vectors import KEY_SEPARATOR, Vector, Vectors, held_keys, vector_matrix
from schemas.recall import Window

CONVERSATION = ("prompt", "message")  # the kinds of memory that are turns of a session
K1 = 0.9  # BM25's term frequency saturation
B = 0.4  # ... and length normalization (both Anserini's defaults for short passages)
_NO_TIME = np.iinfo(np.int64).max  # a memory without a time is outside every time filter
_COLUMNS = ["memory_id", "chunk", "kind", "project", "session_id", "ts", "text", "content_hash", "vector"]
_PER_QUERY = 1_000  # memory ids per LanceDB query for new rows
# New postings entries are grouped by word on their own until there are this many, or an eighth of
# the others: then all are grouped again (about 150 ms at 100k memories), off the request path.
_SETTLE_ENTRIES = 50_000

Item = TypeVar("Item", bound=np.generic)
Matrix = npt.NDArray[np.float32]
RowIds = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]
Floats = npt.NDArray[np.float64]


GLOBAL = -1  # the project code of a memory that holds in every project


class Bm25(NamedTuple):
    """BM25's constants: term frequency saturation and length normalization."""

    k1: float = K1
    b: float = B


BM25 = Bm25()


class _Column(Generic[Item]):
    """An array rows are appended to; a view taken before an append stays as it was."""

    def __init__(self, dtype: type[Item], width: int = 0) -> None:
        self._data: npt.NDArray[Item] = np.empty((0, width) if width else 0, dtype)
        self.size = 0

    def extend(self, values: npt.ArrayLike) -> None:
        values = np.asarray(values, self._data.dtype)
        end = self.size + len(values)
        if end > len(self._data):
            grown = np.empty((max(end, 2 * len(self._data), 1_024), *self._data.shape[1:]), self._data.dtype)
            grown[: self.size] = self._data[: self.size]
            self._data = grown
        self._data[self.size : end] = values
        self.size = end

    def view(self) -> npt.NDArray[Item]:
        return self._data[: self.size]

    def clear(self, rows: list[int]) -> None:
        """Set these rows to 0 (False) in a copy: views taken before keep their values."""
        self._data = self._data.copy()
        self._data[rows] = 0


class _Postings:
    """Which rows hold a word, and how often: the entries of a run of rows, grouped by word."""

    def __init__(self, rows: npt.NDArray[np.int32], words: npt.NDArray[np.int32], counts: Floats) -> None:
        order = np.argsort(words, kind="stable")
        self.starts = np.zeros(int(words.max(initial=-1)) + 2, np.int64)
        np.cumsum(np.bincount(words), out=self.starts[1:])
        self.rows = rows[order]
        self.counts = counts[order]

    def of(self, word: int) -> tuple[npt.NDArray[np.int32], Floats]:
        if word + 1 >= len(self.starts):
            return self.rows[:0], self.counts[:0]
        start, end = self.starts[word], self.starts[word + 1]
        return self.rows[start:end], self.counts[start:end]


class Scope:
    """The rows a recall searches (alive, in the project, in the time asked), and their BM25
    statistics, computed once for all its searches."""

    def __init__(self, rows: "Rows", mask: Mask, bm25: Bm25 = BM25) -> None:
        self.rows = rows
        self.mask = mask
        self.count = int(mask.sum())
        self._k1 = k1 = bm25.k1
        b = bm25.b
        lengths = rows.lengths
        average = float(lengths[mask].mean()) if self.count else 1.0
        self._norm = k1 * (1 - b + b * lengths / max(average, 1e-9))
        self._turns = mask & rows.turn
        sessions = rows.session[self._turns]
        self._session_length = np.asarray(
            np.bincount(sessions, lengths[self._turns], minlength=len(rows.sessions)), np.float64
        )
        in_scope = self._session_length > 0
        self._sessions = int(in_scope.sum())
        average = float(self._session_length[in_scope].mean()) if self._sessions else 1.0
        self._session_norm = k1 * (1 - b + b * self._session_length / max(average, 1e-9))
        self._bm25: dict[tuple[tuple[int, int], ...], Floats] = {}

    def holding(self, memory_ids: list[str]) -> list[str]:
        """Those of `memory_ids` whose rows are in this scope."""
        return [m for m, row in self.rows.rows_of(memory_ids).items() if self.mask[row]]

    def bm25(self, text: str) -> Floats:
        """Each row's BM25 score for `text` (0 outside the scope)."""
        words = self._words(text)
        key = tuple(sorted(words))  # queries that differ in stop words only are scored once
        if key not in self._bm25:
            self._bm25[key] = self._score(words)
        return self._bm25[key]

    def _score(self, words: list[tuple[int, int]]) -> Floats:
        scores = np.zeros(len(self.mask))
        for word, times in words:
            rows, counts = self.rows.postings(word)
            kept = self.mask[rows]
            rows, counts = rows[kept], counts[kept]
            if len(rows):
                idf = _idf(self.count, len(rows))
                scores[rows] += times * idf * counts * (self._k1 + 1) / (counts + self._norm[rows])
        return scores

    def session_bm25(self, text: str) -> Floats:
        """Each session's BM25 score for `text`, its turns read as one document."""
        scores = np.zeros(len(self.rows.sessions))
        for word, times in self._words(text):
            rows, counts = self.rows.postings(word)
            kept = self._turns[rows]
            in_sessions = np.bincount(self.rows.session[rows[kept]], counts[kept], minlength=len(scores))
            found = np.flatnonzero(in_sessions)
            if len(found):
                idf = _idf(self._sessions, len(found))
                tf = in_sessions[found]
                scores[found] += times * idf * tf * (self._k1 + 1) / (tf + self._session_norm[found])
        return scores

    def nearest(self, cosines: Floats, limit: int) -> RowIds:
        """The `limit` rows of the scope with the highest `cosines`, best first."""
        return best(cosines, limit, self.mask)

    def matching(self, scores: Floats, limit: int) -> RowIds:
        """The `limit` rows of the scope with the highest BM25 `scores` above 0, best first."""
        return best(scores, limit, self.mask & (scores > 0))

    def _words(self, text: str) -> list[tuple[int, int]]:
        vocabulary = self.rows.vocabulary
        return [(vocabulary[w], n) for w, n in Counter(terms(text)).items() if w in vocabulary]


def best(scores: Floats, limit: int, among: Mask) -> RowIds:
    """The rows of `among` with the `limit` highest scores, best first."""
    candidates = np.flatnonzero(among)
    if len(candidates) > limit:
        candidates = candidates[np.argpartition(-scores[candidates], limit - 1)[:limit]]
    return candidates[np.argsort(-scores[candidates], kind="stable")]


def _idf(documents: int, holding: int) -> float:
    return math.log(1 + (documents - holding + 0.5) / (holding + 0.5))


class Rows:
    """One view of the index: the rows as they were at a sync (what a recall reads)."""

    def __init__(self, index: "MemoryIndex") -> None:
        self.count = index.ids.size
        self.ids: npt.NDArray[np.object_] = index.ids.view()
        self.row_of = dict(index.row_of)
        self.vectors: Matrix = index.vectors.view()
        self.lengths: Floats = index.lengths.view()
        self.project: npt.NDArray[np.int32] = index.project.view()
        self.projects = dict(index.projects)
        self.session: npt.NDArray[np.int32] = index.session.view()
        self.sessions = list(index.sessions)
        self.turn: Mask = index.turn.view()
        self.ts: npt.NDArray[np.int64] = index.ts.view()
        self.dated: Mask = index.dated.view()  # its text tells a time ("last Friday", "in May")
        self.asks: Mask = index.asks.view()  # its text asks something (a question mark)
        # a prompt that asks rather than tells (block.asks): no answer, and, for a recall that
        # wants answers only, not even a memory whose words count (asking again changes nothing)
        self.question: Mask = index.question.view()
        self.alive: Mask = index.alive.view()
        self.vocabulary = index.vocabulary  # only grows; words new since are found in no postings
        self._postings = index.postings
        self.before, self.after = _neighbours(self)

    def scope(
        self,
        project: str | None,
        as_of: datetime | None = None,
        span: Window | None = None,
        bm25: Bm25 = BM25,
        questions: bool = True,
    ) -> Scope:
        """The live rows of `project` and the global ones (None: all), of `as_of` or before,
        inside `span`, their words scored by BM25 with `bm25`'s constants; without the prompts
        that ask, unless `questions`."""
        mask = self.alive.copy()
        if not questions:
            mask &= ~self.question
        if project is not None:
            code = self.projects.get(project)
            mask &= (self.project == GLOBAL) | (self.project == code if code is not None else False)
        if as_of is not None:
            mask &= self.ts <= _micros(as_of)
        if span is not None:
            mask &= (self.ts >= _micros(span.start)) & (self.ts < _micros(span.end))
        return Scope(self, mask, bm25)

    def postings(self, word: int) -> tuple[npt.NDArray[np.int32], Floats]:
        found = [part.of(word) for part in self._postings]
        return np.concatenate([rows for rows, _ in found]), np.concatenate([counts for _, counts in found])

    def rarity(self, word: str) -> float:
        """How rare a word (as `terms` reads it) is among the memories that may answer (alive,
        no prompt that asks: asking a question does not make its words common), BM25's idf."""
        answering, documents = self._answering
        code = self.vocabulary.get(word)
        holding = int(answering[self.postings(code)[0]].sum()) if code is not None else 0
        return _idf(documents, holding)

    @functools.cached_property
    def _answering(self) -> tuple[Mask, int]:
        answering = self.alive & ~self.question
        return answering, int(answering.sum())

    def readings(self, rows: RowIds) -> tuple[Matrix, Matrix, Matrix]:
        """Each row's vector alone, read with the turn before it, and with the turns either side
        (normalized sums of their vectors: on LoCoMo as good as embedding the joined texts, 72.0
        R@5 against 72.2, at no model time)."""
        own = self.vectors[rows]
        with_before = own + _vectors_at(self.vectors, self.before[rows])
        around = with_before + _vectors_at(self.vectors, self.after[rows])
        return own, _normalized(with_before), _normalized(around)

    def rows_of(self, memory_ids: list[str]) -> dict[str, int]:
        return {m: row for m in memory_ids if (row := self.row_of.get(m)) is not None}


class MemoryIndex:
    """The rows, kept in step with LanceDB's table by `sync` (one syncing thread at a time;
    any number of readers of `rows`)."""

    def __init__(self, vectors: Vectors) -> None:
        self.source = vectors
        self._reset()
        self.rows = Rows(self)

    def _reset(self) -> None:
        dim = self.source.dim
        self.ids = _Column(np.object_)
        self.vectors = _Column(np.float32, dim)
        self.lengths = _Column(np.float64)
        self.project = _Column(np.int32)
        self.session = _Column(np.int32)
        self.turn = _Column(np.bool_)
        self.ts = _Column(np.int64)
        self.dated = _Column(np.bool_)
        self.asks = _Column(np.bool_)
        self.question = _Column(np.bool_)
        self.alive = _Column(np.bool_)
        self.held: dict[str, int] = {}  # memory_id, KEY_SEPARATOR, content_hash -> its live row
        self.row_of: dict[str, int] = {}  # memory_id -> its newest live row
        self._live: dict[str, list[int]] = {}  # memory_id -> its live rows (two while reworded)
        self.projects: dict[str, int] = {}
        self.sessions: list[str] = []
        self._session_code: dict[str, int] = {}
        self.vocabulary: dict[str, int] = {}
        # the postings' entries, a (row, word, count) for each word of each row
        self._entry_rows = _Column(np.int32)
        self._entry_words = _Column(np.int32)
        self._entry_counts = _Column(np.float64)
        self._settled = 0  # entries in the first postings; the others are in the second
        self.postings: list[_Postings] = []  # the settled entries', then the recent ones'
        self._settle()
        self._published: int | None = None  # the table version the manifest read last describes

    def sync(self) -> bool:
        """Read what the vectors gained and lost since the last sync, as their manifest says
        (projections/vectors.py `published`); whether anything changed."""
        published = self.source.published_version()
        if published is not None and published == self._published:
            return False
        held = self.source.published()
        keys = held_keys(held)
        known = pa.array(list(self.held), pa.string())
        gone = known.filter(pc.invert(pc.is_in(known, value_set=keys))).to_pylist()
        dead = self.ids.size - len(self.held) + len(gone)
        if dead * 4 > self.ids.size:  # read all again, while recalls read the last view
            self._reset()
            gone = []
        if gone:
            self.alive.clear([self._die(key) for key in gone])
        new = held.filter(pc.invert(pc.is_in(keys, value_set=pa.array(list(self.held), pa.string()))))
        self._add(self._read(new))
        self._published = published
        self.rows = Rows(self)
        return bool(gone or new.num_rows)

    def passages(self, memory_ids: list[str]) -> dict[str, list[tuple[str, Vector]]]:
        """Each memory's chunks, in order, as their text and vector (its text as it is now: a
        reworded memory's old chunks are left out); read from LanceDB, a few ms a call."""
        rows = self.source.rows_of(memory_ids, ["memory_id", "chunk", "content_hash", "text", "vector"])
        found: dict[str, list[tuple[int, str, Vector]]] = {}
        for memory_id, chunk, content_hash, text, vector in zip(
            rows["memory_id"].to_pylist(),
            rows["chunk"].to_pylist(),
            rows["content_hash"].to_pylist(),
            rows["text"].to_pylist(),
            vector_matrix(rows),
            strict=True,
        ):
            if memory_id + KEY_SEPARATOR + content_hash in self.held:
                found.setdefault(memory_id, []).append((chunk, text, vector))
        return {
            m: [(text, vector) for _, text, vector in sorted(chunks, key=lambda c: c[0])]
            for m, chunks in found.items()
        }

    def _die(self, key: str) -> int:
        """Forget the row of this text of a memory; its row."""
        row = self.held.pop(key)
        memory_id = key.partition(KEY_SEPARATOR)[0]
        live = self._live[memory_id]
        live.remove(row)
        if live:
            self.row_of[memory_id] = live[-1]
        else:
            del self._live[memory_id], self.row_of[memory_id]
        return row

    def _read(self, new: pa.Table) -> pa.Table:
        """The chunk rows of these (memory_id, content_hash)."""
        if not new.num_rows:
            return new
        if not self.held:  # the first read: everything (what a round writes meanwhile is left out)
            table = self.source.table.search().select(_COLUMNS).limit(None).to_arrow()
        else:
            ids = new["memory_id"].unique().to_pylist()
            parts = [
                self.source.rows_of(ids[start : start + _PER_QUERY], _COLUMNS)
                for start in range(0, len(ids), _PER_QUERY)
            ]
            table = pa.concat_tables(parts)
        return table.filter(pc.is_in(held_keys(table), value_set=held_keys(new)))

    def _add(self, chunks: pa.Table) -> None:
        if not chunks.num_rows:
            return
        chunks = chunks.sort_by(
            [("memory_id", "ascending"), ("content_hash", "ascending"), ("chunk", "ascending")]
        )
        firsts = np.flatnonzero(np.asarray(pc.equal(chunks["chunk"], 0)))
        sums = np.add.reduceat(vector_matrix(chunks), firsts, axis=0)
        texts = chunks["text"].to_pylist()
        bounds = [*firsts.tolist(), chunks.num_rows]
        first = chunks.take(pa.array(firsts))
        start = self.ids.size
        self.ids.extend(np.asarray(first["memory_id"].to_pylist(), dtype=object))
        self.vectors.extend(_normalized(sums))
        self.project.extend([self._code(self.projects, p) for p in first["project"].to_pylist()])
        sessions = first["session_id"].to_pylist()
        self.session.extend([self._session(s) for s in sessions])
        kinds = first["kind"].to_pylist()
        self.turn.extend([k in CONVERSATION and s is not None for k, s in zip(kinds, sessions, strict=True)])
        times = pc.cast(first["ts"], pa.int64()).fill_null(_NO_TIME)
        self.ts.extend(np.asarray(times))
        self.alive.extend(np.ones(first.num_rows, np.bool_))
        joined = [" ".join(texts[a:b]) for a, b in pairwise(bounds)]
        self.lengths.extend([self._index_words(start + i, text) for i, text in enumerate(joined)])
        self.dated.extend([tells_time(text) for text in joined])
        self.asks.extend(["?" in text for text in joined])
        self.question.extend([k == "prompt" and asks(text) for k, text in zip(kinds, joined, strict=True)])
        self._settle()
        # a reworded memory's old text stays until the embedder removes it: the newer row answers
        for offset, (memory_id, content_hash) in enumerate(
            zip(first["memory_id"].to_pylist(), first["content_hash"].to_pylist(), strict=True)
        ):
            self.held[memory_id + KEY_SEPARATOR + content_hash] = start + offset
            self._live.setdefault(memory_id, []).append(start + offset)
            self.row_of[memory_id] = start + offset

    def _index_words(self, row: int, text: str) -> int:
        counted = Counter(terms(text))
        self._entry_rows.extend(np.full(len(counted), row, np.int32))
        self._entry_words.extend([self._code(self.vocabulary, w) for w in counted])
        self._entry_counts.extend(list(counted.values()))
        return sum(counted.values())

    def _settle(self) -> None:
        """Group the new entries by word: alone while few, with all the others once many."""
        rows, words, counts = self._entry_rows.view(), self._entry_words.view(), self._entry_counts.view()
        settled = self.postings[:1]
        if not settled or len(rows) - self._settled > max(_SETTLE_ENTRIES, self._settled // 8):
            self._settled = len(rows)
            settled = [_Postings(rows, words, counts)]
        recent = slice(self._settled, len(rows))
        self.postings = [*settled, _Postings(rows[recent], words[recent], counts[recent])]

    def _session(self, session_id: str | None) -> int:
        if session_id is None:
            return -1
        if session_id not in self._session_code:
            self._session_code[session_id] = len(self.sessions)
            self.sessions.append(session_id)
        return self._session_code[session_id]

    @staticmethod
    def _code(codes: dict[str, int], name: str | None) -> int:
        if name is None:
            return GLOBAL
        return codes.setdefault(name, len(codes))


def _neighbours(rows: Rows) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The row of the turn before and after each turn in its session (-1: none)."""
    before = np.full(rows.count, -1, np.int64)
    after = np.full(rows.count, -1, np.int64)
    turns = np.flatnonzero(rows.turn & rows.alive)
    order = turns[np.lexsort((turns, rows.ts[turns], rows.session[turns]))]
    joined = rows.session[order[1:]] == rows.session[order[:-1]]
    before[order[1:][joined]] = order[:-1][joined]
    after[order[:-1][joined]] = order[1:][joined]
    return before, after


def _vectors_at(vectors: Matrix, rows: npt.NDArray[np.int64]) -> Matrix:
    """The vectors of these rows, zero where the row is -1."""
    found = vectors[np.maximum(rows, 0)]
    found[rows < 0] = 0
    return found


def _normalized(vectors: Matrix) -> Matrix:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return np.asarray(vectors / np.maximum(norms, 1e-12), dtype=np.float32)


def _micros(moment: datetime) -> int:
    return int(moment.astimezone(UTC).timestamp() * 1_000_000)
