import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingest import truncate
from ingest.envelope import encode_event
from ingest.truncate import EVENT_LIMIT, MAX_DEPTH, STRING_LIMIT, loads, loads_head, truncate_strings
from schemas import events, kinds, observed


def encode(payload: dict[str, Any]) -> bytes:
    now = "2026-01-01T00:00:00Z"
    return encode_event(
        kinds.TOOL_USED, payload, event_id="0" * 26, ts=now, recorded_at=now, project="p", source="test"
    )


def test_long_strings_keep_head_and_tail_and_say_what_was_cut() -> None:
    text = "H" * 100_000 + "T" * 100
    cut = truncate_strings({"a": [text]})["a"][0]
    assert len(cut) < STRING_LIMIT + 100
    assert cut.startswith("HHHH") and cut.endswith("T" * 100)
    assert f"truncated {len(text) - STRING_LIMIT} characters" in cut


def test_short_strings_are_untouched() -> None:
    value = {"a": "x" * STRING_LIMIT, "b": [1, None, True, "y"]}
    assert truncate_strings(value) == value


def test_a_huge_tool_response_is_cut_to_fit_never_dropped() -> None:
    payload = {"tool_name": "Read", "tool_response": {"content": "x" * 50_000_000}}
    data = encode(payload)
    assert len(data) <= EVENT_LIMIT
    event = events.decode_event(data)
    typed = events.payload_of(event)
    assert isinstance(typed, observed.ToolUsed)
    assert typed.tool_name == "Read"
    assert "[reverie: truncated" in typed.tool_response["content"]


def test_many_medium_strings_shrink_until_the_event_fits() -> None:
    payload = {"tool_name": "Grep", "tool_response": [f"{i}:" + "y" * 30_000 for i in range(200)]}
    data = encode(payload)
    assert len(data) <= EVENT_LIMIT
    assert len(json.loads(data)["payload"]["tool_response"]) == 200


def test_long_lists_keep_their_head_and_say_how_many_were_cut() -> None:
    paths = [f"/repo/src/module_{i}/file_{i}.py" for i in range(40_000)]
    payload = {
        "tool_name": "Glob",
        "tool_input": {"pattern": "**/*.py"},
        "tool_response": {"filenames": paths},
    }
    data = encode(payload)
    assert len(data) <= EVENT_LIMIT
    kept = json.loads(data)["payload"]
    assert kept["tool_input"] == {"pattern": "**/*.py"}
    filenames = kept["tool_response"]["filenames"]
    assert filenames[:10] == paths[:10]
    assert filenames[-1].endswith(f"{len(paths) - len(filenames) + 1} more items]")


def test_huge_objects_keep_their_first_keys() -> None:
    payload = {"tool_name": "X", "tool_response": {f"key{i}": "v" * 20 for i in range(100_000)}}
    data = encode(payload)
    assert len(data) <= EVENT_LIMIT
    response = json.loads(data)["payload"]["tool_response"]
    assert response["key0"] == "v" * 20
    assert response["reverie_truncated"].endswith("more keys")


def depth_of(value: Any) -> tuple[int, Any]:
    """How many lists and objects are nested down the first values, and the value at the bottom."""
    levels = 0
    while isinstance(value, list | dict) and value:
        value, levels = next(iter(value.values())) if isinstance(value, dict) else value[0], levels + 1
    return levels, value


def test_nesting_deeper_than_the_limit_becomes_a_marker_without_recursion() -> None:
    deep: list[Any] = ["leaf"]
    for _ in range(100_000):
        deep = [deep]
    data = encode({"tool_name": "X", "tool_response": deep, "tool_use_id": "t1"})
    typed = events.payload_of(events.decode_event(data))  # the dispatcher's decoder takes it
    assert isinstance(typed, observed.ToolUsed) and typed.tool_use_id == "t1"
    levels, bottom = depth_of(typed.tool_response)
    assert levels == MAX_DEPTH - 1  # the payload is the first level
    assert bottom == f"…[reverie: nesting deeper than {MAX_DEPTH} cut: a list of 1 items]"


def test_json_too_deep_for_python_is_cut_as_it_is_parsed() -> None:
    raw = b'{"deep": ' + b"[" * 100_000 + b"]" * 100_000 + b', "after": "[{\\"]"}'
    value = loads(raw)
    assert value["after"] == '[{"]'
    levels, bottom = depth_of(value["deep"])
    assert levels == MAX_DEPTH - 1
    assert bottom.startswith(f"…[reverie: nesting deeper than {MAX_DEPTH} cut")
    with pytest.raises(ValueError):
        loads(b'{"deep": ' + b"[" * 100_000 + b"]" * 99_999 + b"}")


def test_many_small_objects_are_kept_whole_up_to_a_marker() -> None:
    response = json.loads(encode({"tool_name": "X", "tool_response": [{"a": i} for i in range(300_000)]}))
    kept = response["payload"]["tool_response"]
    assert kept[:-1] == [{"a": i} for i in range(len(kept) - 1)]
    assert kept[-1] == f"…[reverie: {300_000 - len(kept) + 1} more items]"


def test_more_values_than_an_event_holds_are_read_only_as_far_as_a_head() -> None:
    raw = b'{"session_id": "s", "list": [' + b",".join([b'{"a": 1}'] * 1_000_000) + b'], "after": 1}'
    value = loads(raw)
    assert value["session_id"] == "s"
    assert 1000 < len(value["list"]) < 1_000_000
    assert value["list"][:-1] == [{"a": 1}] * (len(value["list"]) - 1)
    assert "more values than an event can hold" in value["list"][-1]
    assert "more values than an event can hold" in value["reverie_truncated"]


def test_a_head_keeps_every_value_that_ends_before_the_cut() -> None:
    raw = json.dumps({"a": 1, "b": {"c": [1, 2], "d": "xyz\u00e9" * 100, "e": 3}, "f": 4}).encode()
    head = loads_head(raw[: raw.index(b"xyz") + 50], "cut here")
    assert head["a"] == 1 and head["b"]["c"] == [1, 2]
    assert head["b"]["d"].startswith("xyz\u00e9xyz") and head["b"]["d"].endswith("…[reverie: cut here]")
    assert head["b"]["reverie_truncated"] == head["reverie_truncated"] == "…[reverie: cut here]"
    assert "e" not in head["b"] and "f" not in head
    assert loads_head(b"\xff not json", "cut here") == "…[reverie: cut here]"


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False, allow_infinity=False) | st.integers() | st.text(),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=5), children, max_size=5)
    ),
    max_leaves=30,
)


@settings(max_examples=500)
@given(JSON_VALUES, st.sampled_from([None, 2]))
def test_read_value_by_value_json_reads_as_json_loads_reads_it(value: Any, indent: int | None) -> None:
    raw = json.dumps(value, indent=indent).encode()
    assert truncate._head(raw, "x", whole=True) == json.loads(raw)
    for end in range(0, len(raw), 1 + len(raw) // 16):  # a cut anywhere: what is kept is JSON
        json.dumps(loads_head(raw[:end], "x"), allow_nan=False)


@settings(max_examples=500)
@given(st.binary(max_size=60) | st.text(max_size=60).map(str.encode))
def test_read_value_by_value_what_json_loads_refuses_is_refused(raw: bytes) -> None:
    try:
        json.loads(raw)
    except ValueError:
        with pytest.raises(ValueError):
            truncate._head(raw, "x", whole=True)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=30,
)


@given(_JSON)
def test_the_hooks_json_reads_and_writes_as_json_does(value: Any) -> None:
    from ingest import cjson

    written = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    assert cjson.dumps(value) == written
    for raw in (written.encode(), f" \n{written}\t".encode(), written.encode("utf-16"), written):
        assert cjson.loads(raw) == json.loads(raw)


@pytest.mark.parametrize("raw", [b"", b"  ", b"{", b'{"a":1} x', b"[1,]", b"nul", b"\xff\xfe{\x00"])
def test_the_hooks_json_refuses_what_json_refuses(raw: bytes) -> None:
    from ingest import cjson

    with pytest.raises(ValueError):
        json.loads(raw)
    with pytest.raises(ValueError, match="line 1 column"):
        cjson.loads(raw)


def test_a_failed_encode_leaves_the_next_one_whole() -> None:
    from ingest import cjson

    value: dict[str, Any] = {"x": [1, {"y": float("nan")}]}
    with pytest.raises(ValueError, match="Out of range"):
        cjson.dumps(value)
    value["x"][1]["y"] = 1
    assert cjson.dumps(value) == '{"x":[1,{"y":1}]}'
