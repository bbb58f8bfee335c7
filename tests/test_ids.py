from hypothesis import given
from hypothesis import strategies as st

from schemas.ids import ID_LENGTH, derived_event_id, id_time_ms, new_event_id


def test_ids_are_unique_and_sort_by_time() -> None:
    ids = [new_event_id(ts_ms=1_700_000_000_000 + i) for i in range(1000)]
    assert len(set(ids)) == 1000
    assert ids == sorted(ids)
    assert all(len(i) == ID_LENGTH for i in ids)


def test_ids_made_in_the_same_millisecond_differ() -> None:
    assert len({new_event_id(ts_ms=5) for _ in range(10_000)}) == 10_000


@given(st.integers(min_value=0, max_value=2**48 - 1))
def test_an_id_carries_its_time(ts_ms: int) -> None:
    assert id_time_ms(new_event_id(ts_ms)) == ts_ms


def test_derived_ids_are_reproducible_and_seed_dependent() -> None:
    assert derived_event_id(1000, "a", "b") == derived_event_id(1000, "a", "b")
    assert derived_event_id(1000, "a", "b") != derived_event_id(1000, "a", "c")
    assert derived_event_id(1000, "ab") != derived_event_id(1000, "a", "b")
    assert id_time_ms(derived_event_id(1234, "x")) == 1234
