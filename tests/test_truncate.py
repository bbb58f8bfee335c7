import json
from typing import Any

from ingest.envelope import encode_event
from ingest.truncate import EVENT_LIMIT, STRING_LIMIT, truncate_strings
from schemas import events, kinds


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
    assert isinstance(typed, events.ToolUsed)
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
