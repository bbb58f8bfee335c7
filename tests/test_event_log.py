import os

import msgspec
import pyarrow as pa
import pyarrow.parquet as pq

from projections.event_log import COMPACTION_INTENT, Compaction, EventLog
from schemas.disk.files import write_durably
from schemas.events import decode_event
from schemas.settings import Settings
from tests.support.events import event


def fill(log: EventLog, segments: int, per_segment: int = 3) -> set[str]:
    ids: set[str] = set()
    for s in range(segments):
        batch = [event(f"s{s}-e{i}") for i in range(per_segment)]
        log.append([decode_event(data) for _, data in batch])
        ids.update(event_id for event_id, _ in batch)
    return ids


def test_small_segments_are_merged_into_one_sorted_segment(settings: Settings) -> None:
    log = EventLog(settings.event_log_dir)
    ids = fill(log, 20)
    merged = log.compact(at_least=16, min_age_s=0)
    assert merged is not None
    assert log.segments() == [merged]
    table_ids = pq.read_table(merged)["id"].to_pylist()
    assert table_ids == sorted(ids)
    assert os.listdir(settings.event_log_dir) == [os.path.basename(merged)]


def test_nothing_is_merged_below_the_threshold_or_too_young(settings: Settings) -> None:
    log = EventLog(settings.event_log_dir)
    fill(log, 5)
    assert log.compact(at_least=16, min_age_s=0) is None
    fill(log, 15)
    assert log.compact(at_least=16, min_age_s=3600) is None
    assert len(log.segments()) == 20


def test_a_compaction_cut_short_after_the_merge_is_finished(settings: Settings) -> None:
    log = EventLog(settings.event_log_dir)
    ids = fill(log, 4)
    sources = log.segments()
    # as if the process died after writing the merged segment, before removing its sources
    merged = log._write(
        pa.concat_tables([pq.read_table(p) for p in sources]).sort_by("id"), "seg-ZZZZ.parquet"
    )
    plan = Compaction(target="seg-ZZZZ.parquet", sources=[os.path.basename(p) for p in sources])
    write_durably(settings.event_log_dir, COMPACTION_INTENT, msgspec.json.encode(plan))
    assert log.recover() == 1
    assert log.segments() == [merged]
    assert sorted(log.archived_ids()) == sorted(ids)


def test_a_compaction_cut_short_before_the_merge_is_forgotten(settings: Settings) -> None:
    log = EventLog(settings.event_log_dir)
    ids = fill(log, 4)
    sources = log.segments()
    plan = Compaction(target="seg-ZZZZ.parquet", sources=[os.path.basename(p) for p in sources])
    write_durably(settings.event_log_dir, COMPACTION_INTENT, msgspec.json.encode(plan))
    with open(os.path.join(settings.event_log_dir, ".seg-ZZZZ.parquet.tmp"), "wb") as f:
        f.write(b"PAR1 half a file")
    assert log.recover() == 2
    assert log.segments() == sources
    assert log.archived_ids() == ids
