"""A damaged file never halts the pipeline: what cannot be read is set aside and named, what
still reads is kept, a damaged store is rebuilt from the log, and nothing answers from a file
it could not read as if it were empty."""

import errno
import json
import multiprocessing
import multiprocessing.synchronize
import os
import random
import signal
import subprocess
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime

import duckdb
import fakeredis
import msgspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ingest.emit import append
from projections.event_log import QUARANTINE, EventLog
from projections.projector import Projector, replay
from projections.store import Store, current_store
from reverie.testing import make_event
from schemas import kinds
from schemas.events import Event, decode_event
from schemas.ids import new_event_id
from schemas.settings import STREAM, Settings
from schemas.status import Quarantined
from tests.support.events import event
from tests.support.processes import BIN, Stack, run_hook, wait_for
from workers.dispatcher import Dispatcher
from workers.thinking.runner import Segment, run

NOW = datetime.now(UTC)
GARBAGE = bytes((i * 37 + 11) % 256 for i in range(200))
WORDS = [f"w{i}" for i in range(5000)]
DUCKDB_HEADERS = 3 * 4096  # then blocks of 256 KiB (DuckDB's default block size)
DUCKDB_BLOCK = 262_144


def prompts(n: int, words: int = 8, seed: int = 0) -> list[Event]:
    """`n` prompt events; `words` random words each (barely compressible: several data pages)."""
    rng = random.Random(seed)
    return [decode_event(event(" ".join(rng.choices(WORDS, k=words)))[1]) for _ in range(n)]


def overwrite(path: str, offset: int, data: bytes = GARBAGE) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(data)


def column_chunk(path: str, column: str) -> tuple[int, int]:
    """Where `column`'s data starts in the first row group, and its size on disk."""
    meta = pq.read_metadata(path).row_group(0)
    chunk = next(meta.column(i) for i in range(meta.num_columns) if meta.column(i).path_in_schema == column)
    start = chunk.dictionary_page_offset or chunk.data_page_offset
    return start, chunk.total_compressed_size


def damage_column(path: str, column: str, at: float = 0.5) -> None:
    start, size = column_chunk(path, column)
    overwrite(path, start + int(size * at))


def damage_footer(path: str) -> None:
    overwrite(path, os.path.getsize(path) - 8 - len(GARBAGE))


def ids_in(path: str) -> list[str]:
    return list(pq.read_table(path, columns=["id"]).column("id").to_pylist())


def all_ids(log: EventLog) -> list[str]:
    return [i for p in log.segments() for i in ids_in(p)]


def notes(log: EventLog) -> dict[str, Quarantined]:
    """The notes in the quarantine folder, by segment name."""
    folder = os.path.join(log.directory, QUARANTINE)
    found = {}
    for name in os.listdir(folder):
        if name.endswith(".json"):
            with open(os.path.join(folder, name), "rb") as f:
                note = msgspec.json.decode(f.read(), type=Quarantined)
            found[note.segment] = note
    return found


def test_a_damaged_segment_is_set_aside_and_what_still_reads_stays_in_the_log(settings: Settings) -> None:
    log = EventLog(settings.event_log_dir)
    first = log.append(prompts(50, seed=1))
    damaged = log.append(prompts(3000, words=120, seed=2))
    written = ids_in(damaged)
    damage_column(damaged, "payload", at=0.7)
    with open(damaged, "rb") as f:
        damaged_bytes = f.read()

    assert [note.segment for note in log.check()] == [os.path.basename(damaged)]

    archived = log.archived_ids()
    note = notes(log)[os.path.basename(damaged)]
    kept = ids_in(damaged)  # the rows that read whole, back under the segment's name
    assert 0 < note.salvaged == len(kept) < len(written)
    assert note.lost == len(written) - len(kept)
    assert sorted(note.lost_ids) == sorted(set(written) - set(kept))
    assert note.reason
    with open(note.moved_to, "rb") as f:
        assert f.read() == damaged_bytes  # the damaged file, as it was, in quarantine
    assert archived == set(ids_in(first)) | set(kept)
    assert sorted(all_ids(log)) == sorted(archived)  # the log never holds an id twice
    assert log.segments() == [first, damaged] and pq.read_table(damaged).num_rows == len(kept)
    assert log.check() == [] and len(notes(log)) == 1  # it reads whole now: nothing more to do


_start: "multiprocessing.synchronize.Barrier | None" = None


def _ready(barrier: "multiprocessing.synchronize.Barrier") -> None:
    global _start
    _start = barrier


def _read_ids(directory: str, path: str) -> list[str]:
    """In another process: the ids a reader gets from `path`, once all readers are ready."""
    assert _start is not None
    _start.wait()
    table = EventLog(directory).read(path)
    return sorted(table.column("id").to_pylist()) if table is not None else []


def test_readers_meeting_a_damaged_segment_at_once_set_it_aside_once(settings: Settings) -> None:
    log = EventLog(settings.event_log_dir)
    damaged = log.append(prompts(3000, words=120, seed=2))
    damage_column(damaged, "payload", at=0.7)
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(4, spawn, initializer=_ready, initargs=(spawn.Barrier(4),)) as pool:
        seen = list(pool.map(_read_ids, [settings.event_log_dir] * 4, [damaged] * 4))
    kept = sorted(ids_in(damaged))
    assert 0 < len(kept) < 3000 and seen == [kept] * 4
    folder = os.path.join(settings.event_log_dir, QUARANTINE)
    name = os.path.basename(damaged)
    assert sorted(os.listdir(folder)) == [name, name + ".json"]
    assert sorted(os.listdir(settings.event_log_dir)) == [QUARANTINE, name]  # no temp file left


def test_a_file_with_no_footer_or_not_a_segment_is_moved_aside_whole(settings: Settings) -> None:
    log = EventLog(settings.event_log_dir)
    good = log.append(prompts(20))
    no_footer = log.append(prompts(20, seed=3))
    damage_footer(no_footer)
    foreign = os.path.join(settings.event_log_dir, "seg-notes.parquet")
    with open(foreign, "w") as f:
        f.write("not parquet at all\n")
    other = os.path.join(settings.event_log_dir, "seg-other.parquet")
    pq.write_table(pa.table({"id": ["x"], "price": [3]}), other)

    assert log.count() == 20
    assert log.segments() == [good]
    found = notes(log)
    assert set(found) == {os.path.basename(p) for p in (no_footer, foreign, other)}
    assert all(note.salvaged == 0 and note.reason for note in found.values())
    assert [q.segment for q in log.quarantined()] == sorted(found)


def test_a_segment_a_compaction_removed_is_not_damage(settings: Settings) -> None:
    log = EventLog(settings.event_log_dir)
    gone = log.append(prompts(3))
    os.unlink(gone)
    assert log.read(gone) is None
    assert log.rows([gone]) == {gone: 0}
    assert not os.path.exists(os.path.join(settings.event_log_dir, QUARANTINE))


def test_a_failing_disk_is_not_taken_for_damage(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    log = EventLog(settings.event_log_dir)
    sound = log.append(prompts(3))

    def failing(path: str, **options: object) -> None:
        raise OSError(errno.EIO, f"Failed to read {path}: Input/output error")

    monkeypatch.setattr(pq, "ParquetFile", failing)
    with pytest.raises(OSError, match="Input/output"):
        log.read(sound)
    with pytest.raises(OSError, match="Input/output"):
        log.count()
    monkeypatch.undo()
    assert log.segments() == [sound] and ids_in(sound)
    assert not os.path.exists(os.path.join(settings.event_log_dir, QUARANTINE))


def test_the_dispatcher_starts_over_a_damaged_log_and_archives_on(settings: Settings) -> None:
    log = EventLog(settings.event_log_dir)
    for seed in range(3):
        log.append(prompts(10, seed=seed))
    newest = log.append(prompts(10, seed=9))
    damage_column(newest, "id", at=0)
    client = fakeredis.FakeRedis()
    dispatcher = Dispatcher(settings, client, consumer="test", block_ms=10)
    dispatcher.start()
    assert len(dispatcher.archived) == 30
    fresh = [event(f"after {i}") for i in range(5)]
    append(client, [data for _, data in fresh])
    assert dispatcher.archive(dispatcher.read(">")) == 5
    assert log.compact(at_least=2, min_age_s=0) is not None
    assert sorted(all_ids(log)) == sorted(dispatcher.archived)
    assert client.xlen(STREAM) == 0
    dispatcher.close()


def test_a_compaction_sets_a_damaged_segment_aside_and_merges_the_rest(settings: Settings) -> None:
    log = EventLog(settings.event_log_dir)
    sound = [log.append(prompts(5, seed=s)) for s in range(3)]
    sound_ids = sorted(i for p in sound for i in ids_in(p))
    damaged = log.append(prompts(5, seed=7))
    damage_footer(damaged)
    merged = log.compact(at_least=2, min_age_s=0)
    assert merged is not None and log.segments() == [merged]
    assert sorted(ids_in(merged)) == sound_ids
    assert list(notes(log)) == [os.path.basename(damaged)]


def test_the_projector_folds_what_a_damaged_segment_still_holds(settings: Settings) -> None:
    log = EventLog(settings.event_log_dir)
    projector = Projector(settings.event_log_dir, settings.projections_dir)
    try:
        projector.open()
        log.append(prompts(50, seed=1))
        assert projector.catch_up() == 50
        damaged = log.append(prompts(3000, words=120, seed=2))
        damage_column(damaged, "payload", at=0.7)
        folded = projector.catch_up()
        note = notes(log)[os.path.basename(damaged)]
        assert folded == note.salvaged > 0
        assert projector.db is not None
        assert projector.db.execute("SELECT count(*) FROM prompts").fetchall() == [(50 + folded,)]
    finally:
        projector.close()


def sql(env: dict[str, str], text: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN), "sql", text, "--csv"], env=env, capture_output=True, text=True, timeout=60
    )


def test_sql_and_status_go_on_over_damaged_segments(settings: Settings, env: dict[str, str]) -> None:
    log = EventLog(settings.event_log_dir)
    log.append(prompts(20))
    newest = log.append(prompts(3000, words=120, seed=2))
    damage_column(newest, "payload", at=0.7)
    foreign = os.path.join(settings.event_log_dir, "seg-zzz.parquet")
    with open(foreign, "w") as f:
        f.write("dropped here by mistake")

    result = sql(env, "select count(*) from events")
    assert result.returncode == 0, result.stderr
    count = int(result.stdout.splitlines()[1])
    assert count == 20 + notes(log)[os.path.basename(newest)].salvaged
    assert "quarantine" in result.stderr and os.path.basename(newest) in result.stderr
    assert "Traceback" not in result.stderr

    as_json = subprocess.run(
        [str(BIN), "status", "--json"], env=env, capture_output=True, text=True, timeout=60
    )
    assert "Traceback" not in as_json.stderr
    state = json.loads(as_json.stdout)
    assert state["archived"] == count
    assert sorted(q["segment"] for q in state["quarantined"]) == sorted(
        ["seg-zzz.parquet", os.path.basename(newest)]
    )
    human = subprocess.run([str(BIN), "status"], env=env, capture_output=True, text=True, timeout=60)
    assert "seg-zzz.parquet" in human.stdout and "quarantine" in human.stdout


def test_replay_names_what_it_set_aside_and_folds_what_was_kept(
    settings: Settings, env: dict[str, str]
) -> None:
    log = EventLog(settings.event_log_dir)
    log.append(prompts(20))
    damaged = log.append(prompts(3000, words=120, seed=2))
    damage_column(damaged, "payload", at=0.7)

    result = subprocess.run([str(BIN), "replay"], env=env, capture_output=True, text=True, timeout=120)

    assert result.returncode == 0, result.stderr
    kept = notes(log)[os.path.basename(damaged)].salvaged
    assert f"replayed {20 + kept} events" in result.stdout
    assert os.path.basename(damaged) in result.stderr and f"{kept} of its 3000 events kept" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.fixture
def projected(settings: Settings) -> Store:
    EventLog(settings.event_log_dir).append(prompts(30))
    replay(settings.event_log_dir, settings.projections_dir)
    store = current_store(settings.projections_dir)
    assert store is not None
    return store


def block_of(database: str, table: str) -> int:
    """Where in a DuckDB file the first block of `table`'s data starts."""
    with duckdb.connect(database, read_only=True) as db:
        [(block,)] = db.execute(
            f"SELECT min(block_id) FROM pragma_storage_info('{table}') WHERE block_id >= 0"
        ).fetchall()
    return DUCKDB_HEADERS + int(block) * DUCKDB_BLOCK


@pytest.mark.parametrize("where", ["header", "table"])
def test_sql_never_answers_from_a_damaged_snapshot_as_if_it_were_empty(
    env: dict[str, str], projected: Store, where: str
) -> None:
    offset = 0 if where == "header" else block_of(projected.snapshot, "prompts") + 1000
    overwrite(projected.snapshot, offset)
    result = sql(env, "select count(*), max(prompt) from prompts")
    assert result.returncode == 1, result.stdout
    assert projected.snapshot in result.stderr and "reverie replay" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_the_projector_republishes_a_snapshot_changed_behind_its_back(
    settings: Settings, projected: Store
) -> None:
    projector = Projector(settings.event_log_dir, settings.projections_dir)
    try:
        projector.open()
        overwrite(projected.snapshot, 0)
        assert projector.catch_up() == 0
        assert projector.mend_snapshot() is True
        assert projector.mend_snapshot() is False
    finally:
        projector.close()
    with duckdb.connect(projected.snapshot, read_only=True) as db:
        assert db.execute("SELECT count(*) FROM prompts").fetchall() == [(30,)]


def logged(settings: Settings, event_name: str) -> list[dict[str, object]]:
    with open(os.path.join(settings.home, "project.log"), "rb") as f:
        lines = [msgspec.json.decode(line) for line in f.read().splitlines() if line.startswith(b"{")]
    return [line for line in lines if line.get("event") == event_name]


def prompts_in_snapshot(settings: Settings) -> int | None:
    store = current_store(settings.projections_dir)
    try:
        with duckdb.connect(store.snapshot if store else "", read_only=True) as db:
            return int(db.execute("SELECT count(*) FROM prompts").fetchall()[0][0])
    except duckdb.Error:
        return None


@pytest.mark.parametrize("where", ["header", "folded"])
def test_the_projector_rebuilds_a_store_it_cannot_read(
    settings: Settings, env: dict[str, str], projected: Store, where: str
) -> None:
    offset = 100 if where == "header" else block_of(projected.database, "folded") + 1000
    overwrite(projected.database, offset)
    EventLog(settings.event_log_dir).append(prompts(5, seed=4))
    log_path = os.path.join(settings.home, "project.log")
    with open(log_path, "ab") as out:
        process = subprocess.Popen([str(BIN), "project"], env=env, stdout=out, stderr=out)
    try:
        wait_for(lambda: prompts_in_snapshot(settings) == 35, timeout=60, what="the rebuilt store's snapshot")
        rebuilt = wait_for(lambda: logged(settings, "projections.rebuilt"), what="the rebuild in the log")
        assert process.poll() is None, "the projector exited"
        assert projected.database in str(rebuilt[-1]["reason"])
        assert current_store(settings.projections_dir) != projected
        # a damaged store is derived data: it goes
        wait_for(lambda: not os.path.exists(projected.path), what="the damaged store removed")
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(60) == 0


def prompt(marker: str) -> bytes:
    return json.dumps(
        {"session_id": "s-dmg", "hook_event_name": "UserPromptSubmit", "prompt": marker, "cwd": "/tmp"}
    ).encode()


@pytest.mark.integration
def test_a_damaged_segment_never_stops_the_stack(stack: Stack, env: dict[str, str]) -> None:
    from workers.status import stack_status

    settings = stack.settings
    for i in range(5):
        assert run_hook(prompt(f"before {i}"), env).returncode == 0
    wait_for(lambda: stack.archived() >= 5, what="5 archived events")
    log = EventLog(settings.event_log_dir)
    newest = log.segments()[-1]
    damage_column(newest, "id", at=0)
    [before] = stack_status(settings).dispatchers
    os.kill(before.pid, signal.SIGKILL)  # a restart reads every segment's ids
    wait_for(
        lambda: [d for d in stack_status(settings).dispatchers if d.pid != before.pid],
        timeout=30,
        what="a new dispatcher",
    )
    for i in range(5):
        assert run_hook(prompt(f"after {i}"), env).returncode == 0
    name = os.path.basename(newest)

    def caught_up() -> bool:
        state = stack_status(settings)
        result = sql(env, "select count(*) from prompts where prompt like 'after %'")
        return (
            state.stream_length == 0
            and [q.segment for q in state.quarantined] == [name]
            and result.returncode == 0
            and result.stdout.splitlines()[1] == "5"
        )

    wait_for(caught_up, timeout=60, what="the new events archived and projected, the damaged segment named")
    assert sorted(all_ids(log)) == sorted(set(all_ids(log)))


def test_an_extraction_job_reads_what_a_segment_damaged_since_it_was_written_still_holds(
    settings: Settings,
) -> None:
    log = EventLog(settings.event_log_dir)
    rng = random.Random(4)
    reads = [
        make_event(
            kinds.TOOL_USED,
            {"tool_name": "Read", "tool_input": {"file_path": f"/p/f{n % 40}.py"}, "tool_response": " ".join(
                rng.choices(WORDS, k=120)
            )},
            id=new_event_id(), ts=NOW, recorded_at=NOW, project="/p", source="test",
        )
        for n in range(3000)
    ]  # fmt: skip
    damaged = log.append(reads)
    damage_column(damaged, "payload", at=0.7)

    emitted = run("extract", Segment(damaged, [e.id for e in reads]), fakeredis.FakeRedis(), settings)

    kept = set(ids_in(damaged))
    assert 0 < len(kept) == notes(log)[os.path.basename(damaged)].salvaged < len(reads)
    assert emitted == {kinds.ENTITY_OBSERVED: len(kept)}  # a file observed by each read still there
