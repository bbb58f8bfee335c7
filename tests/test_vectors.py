"""The vectors follow the memory texts: chunked, embedded once per text and model, searchable."""

import os
import shutil
import subprocess
from collections.abc import Iterator
from typing import Any

import duckdb
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ingest.transcripts import ImportedEvent, find_transcripts, read_transcript
from projections import sql, vectors
from projections.chunking import MAX_CHARS, chunk
from projections.embedder import SLICE_CHUNKS, Embedder
from projections.embedding_model import EmbeddingCache, Encoder, content_hash
from projections.projector import replay
from projections.store import current_store
from projections.vectors import Vectors
from reverie.testing import Folding, imported_event
from schemas import kinds, memory
from schemas.settings import Settings
from tests.support.captures import TRANSCRIPTS
from tests.support.events import derived, memory_story, observed
from tests.support.models import remembering_encoder
from tests.support.processes import BIN
from workers.embedder import lock_vectors, open_embedder, sync_once


def test_a_short_text_is_one_chunk() -> None:
    assert chunk("  fix the flaky test\n") == ["fix the flaky test"]
    assert chunk(" \n\t ") == []


def test_a_long_text_is_cut_at_paragraphs_first() -> None:
    paragraphs = [f"Paragraph {i}. " + "word " * 60 for i in range(6)]
    pieces = chunk("\n\n".join(paragraphs))
    assert len(pieces) > 1
    assert all(p.startswith("Paragraph") for p in pieces)


def test_a_text_without_boundaries_is_cut_anyway() -> None:
    assert [len(p) for p in chunk("x" * (2 * MAX_CHARS + 10))] == [MAX_CHARS, MAX_CHARS, 10]


@given(st.text(alphabet=st.sampled_from("ab .\n"), max_size=5_000))
def test_chunks_keep_every_word_in_order_and_stay_under_the_limit(text: str) -> None:
    pieces = chunk(text, max_chars=120)
    assert all(0 < len(p) <= 120 for p in pieces)
    assert "".join("".join(pieces).split()) == "".join(text.split())


@pytest.fixture(scope="module")
def encoder() -> Encoder:
    return remembering_encoder()


@pytest.fixture
def folded(settings: Settings) -> Iterator[Folding]:
    """The fixture transcripts and a story of every derived kind, folded and published."""
    imported = [
        imported_event(i)
        for f in find_transcripts(str(TRANSCRIPTS))
        for i in read_transcript(f)
        if isinstance(i, ImportedEvent)
    ]
    remembered = observed(kinds.MEMORY_REMEMBERED, 30, text="the deploy key rotates monthly")
    folding = Folding(settings)
    folding.fold(imported, [*memory_story(), remembered])
    yield folding
    folding.projector.close()


@pytest.fixture
def embedder(settings: Settings, encoder: Encoder) -> Iterator[Embedder]:
    with lock_vectors(settings):
        opened = open_embedder(settings, encoder)
        yield opened
        opened.close()


def rows(db: duckdb.DuckDBPyConnection, query: str) -> list[tuple[Any, ...]]:
    return db.execute(query).fetchall()


def memories_in_duckdb(settings: Settings) -> set[tuple[str, str]]:
    with sql.connect(settings) as db:
        return set(rows(db, "SELECT memory_id, content_hash FROM memory_documents"))


def memories_in_lancedb(store: Vectors) -> set[tuple[str, str]]:
    held = store.held()
    return set(
        zip(held.column("memory_id").to_pylist(), held.column("content_hash").to_pylist(), strict=True)
    )


def test_every_memory_has_its_vectors_and_every_vector_its_memory(
    folded: Folding, embedder: Embedder, settings: Settings
) -> None:
    report = sync_once(settings, embedder)
    expected = memories_in_duckdb(settings)
    with sql.connect(settings) as db:
        kinds_in = {k for (k,) in rows(db, "SELECT DISTINCT kind FROM memory_texts")}
    assert kinds_in == {
        "prompt",
        "message",
        "summary",  # a compaction agent's last words
        "task",  # a prompt to a subagent
        "remembered",
        "fact",
        "episode",
        "observation",
        "opinion",
        "preference",
        "passage",  # what a tool showed
        "said",  # what the agent wrote mid-turn
    }
    assert report.memories_added == len(expected) and report.finished
    assert memories_in_lancedb(embedder.vectors) == expected
    table = embedder.vectors.table.to_arrow()
    chunks: dict[str, list[int]] = {}
    for memory_id, number in zip(table["memory_id"].to_pylist(), table["chunk"].to_pylist(), strict=True):
        chunks.setdefault(memory_id, []).append(number)
    assert all(sorted(numbers) == list(range(len(numbers))) for numbers in chunks.values())
    with sql.connect(settings) as db:
        texts = dict(rows(db, "SELECT memory_id, text FROM memory_texts"))
    assert {m: len(numbers) for m, numbers in chunks.items()} == {m: len(chunk(t)) for m, t in texts.items()}
    assert max(len(numbers) for numbers in chunks.values()) > 1  # long assistant messages were cut
    matrix = np.stack(table["vector"].to_numpy(zero_copy_only=False))
    assert matrix.shape == (table.num_rows, 384)
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-4)
    with sql.connect(settings) as db:
        assert rows(db, "SELECT embedding_coverage FROM memory_health") == [(1.0,)]
    assert sync_once(settings, embedder).memories_added == 0  # nothing new: nothing done


def test_a_followers_connection_reads_the_files_only_once_asked(
    folded: Folding, embedder: Embedder, settings: Settings
) -> None:
    sync_once(settings, embedder)
    with sql.connect(settings, files=False) as db:
        assert rows(db, "SELECT count(*) FROM embedded") == rows(db, "SELECT count(*) FROM events") == [(0,)]
        assert rows(db, "SELECT embedding_coverage FROM memory_health") == [(0.0,)]
        for _ in range(2):  # as every status asks, again and again
            sql.read_files(db, settings)
            assert rows(db, "SELECT embedding_coverage FROM memory_health") == [(1.0,)]
            assert rows(db, "SELECT count(*) > 0 FROM events") == [(True,)]


def test_a_memory_whose_text_changed_is_embedded_again(
    folded: Folding, embedder: Embedder, settings: Settings
) -> None:
    sync_once(settings, embedder)
    folded.fold(
        [
            derived(
                kinds.FACT_RECONSOLIDATED,
                40,
                memory.FactReconsolidated(fact_id="f2", description="uses DuckDB 2.1"),
            )
        ]
    )
    with sql.connect(settings) as db:
        assert rows(db, "SELECT embedding_coverage < 1 FROM memory_health") == [(True,)]
    report = sync_once(settings, embedder)
    assert (report.memories_added, report.memories_removed, report.chunks_encoded) == (1, 1, 1)
    assert memories_in_lancedb(embedder.vectors) == memories_in_duckdb(settings)
    texts = (
        embedder.vectors.table.search().where("memory_id = 'f2'").limit(None).to_arrow()["text"].to_pylist()
    )
    assert texts == ["uses DuckDB 2.1"]


def test_a_replay_costs_the_vectors_nothing(folded: Folding, embedder: Embedder, settings: Settings) -> None:
    sync_once(settings, embedder)
    folded.projector.close()
    replay(settings.event_log_dir, settings.projections_dir)
    report = sync_once(settings, embedder)
    assert (report.memories_added, report.memories_removed) == (0, 0)
    assert memories_in_lancedb(embedder.vectors) == memories_in_duckdb(settings)


def memory_texts(*memories: tuple[str, str, str]) -> duckdb.DuckDBPyConnection:
    """A connection whose memory_documents holds these (memory_id, kind, text)."""
    db = duckdb.connect(":memory:")
    db.execute(
        "CREATE TABLE memories (memory_id VARCHAR, kind VARCHAR, project VARCHAR, session_id VARCHAR, "
        "ts TIMESTAMPTZ, text VARCHAR)"
    )
    db.execute("CREATE VIEW memory_documents AS SELECT *, sha256(text) AS content_hash FROM memories")
    db.executemany("INSERT INTO memories VALUES (?, ?, NULL, NULL, NULL, ?)", [list(m) for m in memories])
    return db


def test_a_memory_gone_from_the_projections_leaves_the_vectors(embedder: Embedder) -> None:
    db = memory_texts(("m1", "prompt", "keep me"), ("m2", "prompt", "drop me"))
    embedder.sync(db)
    db.execute("DELETE FROM memories WHERE memory_id = 'm2'")
    assert embedder.sync(db).memories_removed == 1
    assert {m for m, _ in memories_in_lancedb(embedder.vectors)} == {"m1"}


def test_rebuilt_vectors_come_from_the_cache(folded: Folding, embedder: Embedder, settings: Settings) -> None:
    first = sync_once(settings, embedder)
    assert first.chunks_encoded > 0
    before = embedder.vectors.table.to_arrow().sort_by([("memory_id", "ascending"), ("chunk", "ascending")])
    shutil.rmtree(embedder.vectors.path)
    embedder.vectors = Vectors(embedder.vectors.path, embedder.encoder.dim)
    again = sync_once(settings, embedder)
    assert (again.chunks_added, again.chunks_encoded) == (first.chunks_added, 0)
    after = embedder.vectors.table.to_arrow().sort_by([("memory_id", "ascending"), ("chunk", "ascending")])
    assert after.select(before.column_names).equals(before)


def test_the_cache_is_kept_per_model(encoder: Encoder, tmp_path: Any) -> None:
    cache = EmbeddingCache(str(tmp_path / "cache.duckdb"))
    vector = encoder.encode(["hello"])
    cache.put("model-a", ["h"], vector)
    assert set(cache.get("model-a", ["h", "other"])) == {"h"}
    assert cache.get("model-b", ["h"]) == {}
    assert np.array_equal(cache.get("model-a", ["h"])["h"], vector[0])


def test_another_model_gets_vectors_of_its_own(settings: Settings) -> None:
    other = Settings(settings.home, embedding_model="sentence-transformers/all-mpnet-base-v2")
    assert settings.vectors_dir != other.vectors_dir
    assert (
        os.path.dirname(settings.vectors_dir) == os.path.dirname(other.vectors_dir) == settings.vectors_root
    )


def cached_memories(embedder: Embedder, n: int) -> tuple[list[str], np.ndarray[Any, Any]]:
    """`n` memory ids whose texts ("text <id>") have random unit vectors in the cache already."""
    rng = np.random.default_rng(7)
    matrix = rng.normal(size=(n, embedder.encoder.dim)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    ids = [f"m{i:04d}" for i in range(n)]
    embedder.cache.put(embedder.encoder.name, [content_hash(f"text {m}") for m in ids], matrix)
    return ids, matrix


def test_a_large_table_gets_an_ann_index_and_still_finds_its_rows(
    embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vectors, "ANN_MIN_ROWS", 500)
    ids, matrix = cached_memories(embedder, 600)
    assert embedder.sync(memory_texts(*((m, "prompt", f"text {m}") for m in ids))).chunks_encoded == 0
    indexed = {tuple(i.columns) for i in embedder.vectors.table.list_indices()}
    assert {("vector",), ("text",), ("memory_id",)} <= indexed
    [row] = embedder.vectors.rows_of(["m0123"], ["memory_id", "vector"]).to_pylist()
    assert row["memory_id"] == "m0123" and np.allclose(row["vector"], matrix[123])


def test_embed_from_the_command_line(folded: Folding, env: dict[str, str], settings: Settings) -> None:
    done = subprocess.run([str(BIN), "embed"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "memories embedded" in done.stdout
    with sql.connect(settings) as db:
        assert rows(db, "SELECT embedding_coverage FROM memory_health") == [(1.0,)]


def test_a_second_embedder_is_refused_with_a_reason(
    embedder: Embedder, env: dict[str, str], settings: Settings
) -> None:
    assert os.path.isdir(embedder.vectors.path)
    done = subprocess.run([str(BIN), "embed"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert "another process is embedding" in done.stderr


def test_memories_of_two_kinds_with_one_id_keep_their_own_vectors(embedder: Embedder) -> None:
    embedder.sync(memory_texts(("x", "fact", "alpha"), ("x", "opinion", "beta")))
    report = embedder.sync(memory_texts(("x", "fact", "alpha"), ("x", "opinion", "gamma")))
    assert (report.memories_added, report.memories_removed) == (1, 1)
    held = embedder.vectors.table.search().select(["kind", "text"]).limit(None).to_arrow().to_pylist()
    assert sorted(held, key=str) == [{"kind": "fact", "text": "alpha"}, {"kind": "opinion", "text": "gamma"}]


def test_a_round_stopped_midway_is_finished_by_the_next(embedder: Embedder) -> None:
    ids, _ = cached_memories(embedder, SLICE_CHUNKS + 10)
    db = memory_texts(*((m, "prompt", f"text {m}") for m in ids))
    calls = iter([False, True])
    first = embedder.sync(db, stop=lambda: next(calls))
    assert not first.finished and first.memories_added == SLICE_CHUNKS
    second = embedder.sync(db)
    assert second.finished and second.memories_added == 10
    assert embedder.vectors.count() == len(ids)


def test_without_a_snapshot_the_vectors_are_left_alone(
    folded: Folding, embedder: Embedder, settings: Settings
) -> None:
    sync_once(settings, embedder)
    held = embedder.vectors.count()
    store = current_store(settings.projections_dir)
    assert store is not None
    folded.projector.close()
    os.unlink(store.snapshot)  # as a replay's swap removes the generation a reader resolved
    with pytest.raises(sql.NoSnapshot):
        sync_once(settings, embedder)
    assert embedder.vectors.count() == held


def test_a_damaged_manifest_reads_as_nothing_embedded_and_is_published_again(
    folded: Folding, embedder: Embedder, settings: Settings
) -> None:
    sync_once(settings, embedder)
    with open(os.path.join(embedder.vectors.path, vectors.MANIFEST), "w") as f:
        f.write("torn")
    with sql.connect(settings) as db:
        assert rows(db, "SELECT embedding_coverage FROM memory_health") == [(0.0,)]
    sync_once(settings, embedder)
    with sql.connect(settings) as db:
        assert rows(db, "SELECT embedding_coverage FROM memory_health") == [(1.0,)]


def test_embed_once_before_any_snapshot_says_what_to_do(env: dict[str, str]) -> None:
    done = subprocess.run([str(BIN), "embed"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert "nothing to embed yet" in done.stderr and "Traceback" not in done.stderr


def test_memories_unchanged_since_the_vectors_were_in_step_are_not_read_again(embedder: Embedder) -> None:
    """The snapshot's mark of the event that last changed what memories say (projections/store.py):
    the same as at the last sync, the texts are not read; another, or none, they are."""
    db = memory_texts(("m1", "prompt", "keep me"), ("m2", "prompt", "drop me"))
    embedder.sync(db, changed_by="e1")
    db.execute("DELETE FROM memories WHERE memory_id = 'm2'")  # as no snapshot marked e1 would
    assert embedder.sync(db, changed_by="e1").memories_removed == 0
    assert embedder.sync(db, changed_by="e2").memories_removed == 1
    db.execute("DELETE FROM memories WHERE memory_id = 'm1'")
    assert embedder.sync(db).memories_removed == 1  # not known: read
