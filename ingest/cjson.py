"""JSON for the hook, straight through `_json`, the C accelerator under the standard `json`.

`import json` compiles five regular expressions, so it imports `re`, which imports `enum`:
about 5 ms of a hook that must stay within twice the bare interpreter's 10 ms (measured with
benchmarks/hook_latency.py). Everything else reads JSON with `json`. Same values, same errors
(ValueError), same bytes as `json.loads` and `json.dumps(value, ensure_ascii=False,
separators=(",", ":"), allow_nan=False)`; `json` is imported only to name an error, and to
detect an encoding other than UTF-8.
"""

from __future__ import annotations

import _json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_SPACE = " \t\n\r"
_CONSTANTS = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


class _Context:
    """What `_json.make_scanner` reads of a `json.JSONDecoder`: its defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = _CONSTANTS.__getitem__


def _unserializable(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


_scan = _json.make_scanner(_Context())  # type: ignore[arg-type]  # what it reads of one, as json passes


def text(raw: bytes) -> str:
    """`raw` decoded as `json.loads` decodes bytes: UTF-8 unless a BOM or NUL bytes say otherwise."""
    if raw[:1] in (b"\x00", b"\xef", b"\xfe", b"\xff") or raw[1:2] == b"\x00":
        import json

        return raw.decode(json.detect_encoding(raw), "surrogatepass")
    return raw.decode("utf-8", "surrogatepass")


def loads(raw: bytes | str) -> Any:
    """`json.loads(raw)`."""
    s = text(raw) if isinstance(raw, bytes) else raw
    value, end = raw_decode(s, len(s) - len(s.lstrip(_SPACE)))
    if s[end:].strip(_SPACE):
        raise _error("Extra data", s, end)
    return value


def raw_decode(s: str, at: int) -> tuple[Any, int]:
    """`json.JSONDecoder().raw_decode(s, at)`: the value at `at` and where it ends."""
    try:
        return _scan(s, at)
    except StopIteration as e:
        raise _error("Expecting value", s, e.value) from None
    except SystemError:
        # Python 3.11's `_json` raises its errors as json.decoder's JSONDecodeError, which it
        # takes only from a `json` already imported, else fails empty-handed (cut-off input:
        # an unterminated string, a missing comma). With `json` imported, it says what it met.
        import json.decoder  # noqa: F401

        return _scan(s, at)


def dumps(value: Any) -> str:
    """`json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)`."""
    if isinstance(value, str):
        return _json.encode_basestring(value)
    # a fresh encoder each time, as json makes one: a failed encode leaves its containers marked
    encode = _json.make_encoder(
        {}, _unserializable, _json.encode_basestring, None, ":", ",", False, False, False
    )
    return "".join(encode(value, 0))


def _error(message: str, s: str, at: int) -> ValueError:
    from json import JSONDecodeError

    return JSONDecodeError(message, s, at)
