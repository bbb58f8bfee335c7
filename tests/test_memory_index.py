"""Recall's memory index (projections/recall/index.py) over a real LanceDB table: what it reads,
how it follows the table, and its searches checked against their formulas."""

import math
from collections import Counter
from datetime import UTC, datetime, timedelta

import numpy as np
import pyarrow as pa
import pytest

from projections.embedding_model import content_hash
from projections.recall import index as memory_index
from projections.recall.index import K1, B, MemoryIndex
from projections.recall.words import terms
from projections.vectors import Vectors
from schemas.recall import Window

T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)
DIM = 4


@pytest.fixture
def vectors(tmp_path_factory: pytest.TempPathFactory) -> Vectors:
    return Vectors(str(tmp_path_factory.mktemp("vectors")), DIM)


def add(
    vectors: Vectors,
    memory_id: str,
    *chunks: str,
    kind: str = "prompt",
    project: str | None = "p",
    session: str | None = "s1",
    minute: int = 0,
    vector: list[float] | None = None,
) -> None:
    """One memory, a row per chunk; each chunk's vector is `vector`, or a unit vector of its own."""
    text = " ".join(chunks)
    rows = [
        {
            "memory_id": memory_id,
            "chunk": number,
            "kind": kind,
            "project": project,
            "session_id": session,
            "ts": T0 + timedelta(minutes=minute),
            "text": piece,
            "content_hash": content_hash(text),
            "vector": vector or list(np.eye(DIM)[(len(memory_id) + number) % DIM]),
        }
        for number, piece in enumerate(chunks)
    ]
    vectors.add(pa.Table.from_pylist(rows))


def bm25(query: str, documents: list[str]) -> list[float]:
    """BM25 by its formula, document by document."""
    counted = [Counter(terms(d)) for d in documents]
    average = sum(sum(c.values()) for c in counted) / len(counted)
    scores = []
    for words in counted:
        score = 0.0
        for word, times in Counter(terms(query)).items():
            holding = sum(word in c for c in counted)
            if word in words:
                idf = math.log(1 + (len(counted) - holding + 0.5) / (holding + 0.5))
                tf = words[word]
                norm = K1 * (1 - B + B * sum(words.values()) / average)
                score += times * idf * tf * (K1 + 1) / (tf + norm)
        scores.append(score)
    return scores


def test_words_are_lower_case_stemmed_and_split_at_punctuation() -> None:
    assert terms("The deploys were Recalled in otel.yaml: ERR_PORT 9464") == [
        "deploy",
        "recal",
        "otel",
        "yaml",
        "err",
        "port",
        "9464",
    ]
    assert terms("did you really like it?") == []  # stop words, spoken ones too


TEXTS = [
    "the deploy key rotates monthly and the deploy script checks it",
    "Valkey runs the queue",
    "monthly reports go to the team",
    "rotate the keys",
]


def test_bm25_scores_every_memory_by_the_formula(vectors: Vectors) -> None:
    for number, text in enumerate(TEXTS):
        add(vectors, f"m{number}", text, minute=number)
    index = MemoryIndex(vectors)
    assert index.sync()
    rows = index.rows
    scores = rows.scope("p").bm25("deploy keys monthly")
    expected = bm25("deploy keys monthly", TEXTS)
    assert [scores[rows.row_of[f"m{n}"]] for n in range(len(TEXTS))] == pytest.approx(expected)
    assert list(rows.ids[rows.scope("p").matching(scores, 2)]) == ["m0", "m3"]


def test_bm25_reads_postings_settled_and_new_alike(vectors: Vectors, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory_index, "_SETTLE_ENTRIES", 0)  # the first sync's entries settle at once
    for number, text in enumerate(TEXTS[:3]):
        add(vectors, f"m{number}", text, minute=number)
    index = MemoryIndex(vectors)
    index.sync()
    add(vectors, "m3", "keys", minute=3)  # too few entries to settle: postings of their own
    index.sync()
    assert len(index.postings[0].rows) and len(index.postings[1].rows) == 1
    rows = index.rows
    scores = rows.scope("p").bm25("deploy keys monthly")
    expected = bm25("deploy keys monthly", [*TEXTS[:3], "keys"])
    assert [scores[rows.row_of[f"m{n}"]] for n in range(4)] == pytest.approx(expected)


def test_a_session_scores_as_its_turns_read_as_one_document(
    vectors: Vectors, tmp_path_factory: pytest.TempPathFactory
) -> None:
    turns = {"s1": TEXTS[:2], "s2": TEXTS[2:]}
    for session, texts in turns.items():
        for number, text in enumerate(texts):
            add(vectors, f"{session}-{number}", text, session=session, minute=number)
    add(vectors, "f1", "deploy deploy deploy", kind="fact", session=None)  # no turn: in no session
    whole = Vectors(str(tmp_path_factory.mktemp("whole")), DIM)
    for session, texts in turns.items():
        add(whole, session, " ".join(texts), session=session)
    by_turns, by_whole = MemoryIndex(vectors), MemoryIndex(whole)
    by_turns.sync()
    by_whole.sync()
    sessions = by_turns.rows.scope("p").session_bm25("deploy keys monthly")
    documents = by_whole.rows.scope("p").bm25("deploy keys monthly")
    for session in turns:
        code = by_turns.rows.sessions.index(session)
        assert sessions[code] == pytest.approx(documents[by_whole.rows.row_of[session]])


def test_scopes_keep_a_project_a_time_and_the_living(vectors: Vectors) -> None:
    add(vectors, "a", "deploy one", minute=0)
    add(vectors, "b", "deploy two", minute=10)
    add(vectors, "c", "deploy three", project="other", minute=20)
    add(vectors, "d", "deploy four", project=None, minute=30)  # global: in every project
    index = MemoryIndex(vectors)
    index.sync()
    rows = index.rows

    def kept(scope: memory_index.Scope) -> set[str]:
        return set(rows.ids[scope.mask])

    assert kept(rows.scope("p")) == {"a", "b", "d"}
    assert kept(rows.scope(None)) == {"a", "b", "c", "d"}
    assert kept(rows.scope(None, as_of=T0 + timedelta(minutes=10))) == {"a", "b"}
    span = Window(T0 + timedelta(minutes=5), T0 + timedelta(minutes=20))
    assert kept(rows.scope(None, span=span)) == {"b"}  # the end is outside
    assert kept(rows.scope("nowhere")) == {"d"}


def test_the_index_follows_the_table(vectors: Vectors) -> None:
    add(vectors, "keep", "the deploy key", minute=0)
    add(vectors, "drop", "a passing remark", minute=1)
    add(vectors, "long", "first half about valkey", "second half about duckdb", minute=2, session="s2")
    for number in range(6):  # more memories than the two that go: what stays is not read again
        add(vectors, f"other{number}", "more words", minute=3 + number)
    index = MemoryIndex(vectors)
    assert index.sync()
    assert not index.sync()  # nothing new: nothing done
    before = index.rows
    seen = dict(before.row_of)
    chunks = np.eye(DIM)[[len("long") % DIM, (len("long") + 1) % DIM]]
    assert before.vectors[before.row_of["long"]] == pytest.approx(
        chunks.mean(axis=0) / np.linalg.norm(chunks.mean(axis=0))
    )
    assert before.scope("p").bm25("duckdb")[before.row_of["long"]] > 0  # the words of every chunk

    add(vectors, "keep", "the deploy key rotates", minute=0)  # reworded: the new text first ...
    vectors.remove([("keep", content_hash("the deploy key")), ("drop", content_hash("a passing remark"))])
    assert index.sync()
    rows = index.rows
    assert set(rows.ids[rows.scope("p").mask]) == {"keep", "long", *(f"other{n}" for n in range(6))}
    assert "drop" not in rows.row_of
    assert rows.scope("p").bm25("rotates")[rows.row_of["keep"]] > 0
    assert before.count == 9 and rows.count == 10  # a view read before a sync stays as it was
    assert before.alive.all() and before.row_of == seen
    vectors.remove([(f"other{n}", content_hash("more words")) for n in range(6)])
    index.sync()  # most are gone: all is read again
    assert index.rows.count == 2 and set(index.rows.row_of) == {"keep", "long"}


def test_turns_are_read_with_their_neighbours_in_time_order(vectors: Vectors) -> None:
    add(vectors, "t2", "third", minute=2, vector=[0, 0, 1, 0])
    add(vectors, "t0", "first", minute=0, vector=[1, 0, 0, 0])
    add(vectors, "t1", "second", minute=1, vector=[0, 1, 0, 0])
    add(vectors, "x", "another session", minute=1, session="s9", vector=[0, 0, 0, 1])
    add(vectors, "f", "a fact", kind="fact", minute=1, vector=[0, 0, 0, 1])
    index = MemoryIndex(vectors)
    index.sync()
    rows = index.rows
    at = rows.row_of
    assert [rows.before[at[m]] for m in ("t0", "t1", "t2", "x", "f")] == [-1, at["t0"], at["t1"], -1, -1]
    assert [rows.after[at[m]] for m in ("t0", "t1", "t2", "x", "f")] == [at["t1"], at["t2"], -1, -1, -1]
    own, with_before, around = rows.readings(np.array([at["t0"], at["t2"], at["t1"]]))
    assert with_before[0] == pytest.approx([1, 0, 0, 0])  # the first turn has none before it
    assert with_before[1] == pytest.approx(np.array([0, 1, 1, 0]) / math.sqrt(2))
    assert around[2] == pytest.approx(np.array([1, 1, 1, 0]) / math.sqrt(3))
    assert own[2] == pytest.approx([0, 1, 0, 0])


def test_the_index_knows_which_memories_tell_a_time_and_which_ask(vectors: Vectors) -> None:
    add(vectors, "told", "we moved the cache to Redis", "last Friday, after the outage")
    add(vectors, "untold", "why did we move the cache to Redis?")
    index = MemoryIndex(vectors)
    index.sync()
    rows = index.rows
    assert [bool(rows.dated[rows.row_of[m]]) for m in ("told", "untold")] == [True, False]
    assert [bool(rows.asks[rows.row_of[m]]) for m in ("told", "untold")] == [False, True]


def test_asking_a_question_does_not_make_its_words_common(vectors: Vectors) -> None:
    """How rare a word is counts the memories that may answer: the same question asked ten times
    leaves its words as rare as they were (the block's windows and shares stay as they were)."""
    add(vectors, "told", "we moved the cache to Redis")
    add(vectors, "other", "the tests run with pytest")
    index = MemoryIndex(vectors)
    index.sync()
    before = {w: index.rows.rarity(w) for w in terms("why did we move the cache to redis")}
    for n in range(10):
        add(vectors, f"asked{n}", "why did we move the cache to Redis?", minute=n + 1)
    index.sync()
    after = {w: index.rows.rarity(w) for w in before}
    assert after == before and before["redi"] == pytest.approx(math.log(1 + 1.5 / 1.5))


def test_a_memory_read_with_two_texts_answers_while_either_lives(vectors: Vectors) -> None:
    add(vectors, "other", "something else", minute=0)
    add(vectors, "x", "the old wording", minute=1)
    add(vectors, "x", "the new wording", minute=1)  # reworded before the index first read it
    index = MemoryIndex(vectors)
    index.sync()
    for text in ("the old wording", "the new wording"):  # whichever goes, the other answers
        vectors.remove([("x", content_hash(text))])
        index.sync()
        rows = index.rows
        assert rows.alive[rows.row_of["x"]] and rows.scope("p").bm25("wording")[rows.row_of["x"]] > 0
        add(vectors, "x", text, minute=1)  # back, for the other to go
        index.sync()


def test_dead_rows_are_counted_until_a_quarter_makes_the_index_read_all_again(vectors: Vectors) -> None:
    for number in range(8):
        add(vectors, f"m{number}", f"text {number}", minute=number)
    index = MemoryIndex(vectors)
    index.sync()
    for version in range(3):  # each rewording leaves a dead row behind
        add(vectors, "m0", f"text 0, version {version + 1}")
        vectors.remove([("m0", content_hash(f"text 0, version {version}" if version else "text 0"))])
        index.sync()
    assert index.rows.count == 8  # 3 dead of 11: read again, only the living
    assert set(index.rows.ids[index.rows.alive]) == {f"m{n}" for n in range(8)}


def test_the_index_reads_what_the_manifest_names_not_what_the_table_holds(vectors: Vectors) -> None:
    add(vectors, "a", "the deploy key")
    index = MemoryIndex(vectors)
    assert index.sync() and set(index.rows.row_of) == {"a"}
    published = vectors.published_version()
    row = {
        "memory_id": "b",
        "chunk": 0,
        "kind": "prompt",
        "project": "p",
        "session_id": "s1",
        "ts": T0,
        "text": "being written",
        "content_hash": content_hash("being written"),
        "vector": [1.0, 0, 0, 0],
    }
    vectors.table.add(pa.Table.from_pylist([row], schema=vectors.schema))  # a round writing, unpublished
    assert not index.sync() and set(index.rows.row_of) == {"a"}
    Vectors(vectors.path, DIM).publish_manifest()  # a writer that reads what the table holds
    assert vectors.published_version() != published
    assert index.sync() and set(index.rows.row_of) == {"a", "b"}


def test_what_the_vectors_hold_is_kept_in_step_without_reading_the_table(vectors: Vectors) -> None:
    add(vectors, "a", "one", "two")
    add(vectors, "b", "three")
    vectors.remove([("a", content_hash("one two"))])
    add(vectors, "c", "four")
    kept = vectors.held().sort_by("memory_id").to_pylist()
    assert kept == Vectors(vectors.path, DIM).held().sort_by("memory_id").to_pylist()  # read afresh
    assert [row["memory_id"] for row in kept] == ["b", "c"]
    assert vectors.published().sort_by("memory_id").to_pylist() == kept
