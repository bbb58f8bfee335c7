"""Compiled patterns kept beside the bytecode (ingest/patterns.py): a process that finds them
never imports `re`, and gets the very patterns `re` compiles."""

import ast
import json
import marshal
import os
import pathlib
import subprocess
import sys

from ingest import patterns
from ingest.envelope import compile_patterns
from ingest.redact import pattern_sources
from ingest.spool import spooled
from ingest.truncate import pattern_sources as cutting_sources
from schemas.events import decode_event
from schemas.settings import Settings

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCES = [*pattern_sources(), *cutting_sources()]

# Run as the hook runs (`-S -I`, and no `json`: it imports `re`), on the cache at argv[1]; prints
# whether `re` had to be imported, then whether each pattern equals `re.compile`'s (Pattern
# equality compares the code).
PROCESS = f"""
import marshal, sys
sys.path.insert(0, {str(ROOT)!r})
from ingest import patterns
patterns._CACHE = sys.argv[1]
sources = marshal.loads(sys.stdin.buffer.read())
found = [patterns.compiled(source) for source in sources]
imported = "re" in sys.modules
import re
same = [p == re.compile(s) and p.groupindex == re.compile(s).groupindex for p, s in zip(found, sources)]
print(repr({{"imported_re": imported, "same": same}}))
"""


def compile_in_process(cache: pathlib.Path, sources: list[str]) -> dict[str, object]:
    result = subprocess.run(
        [sys.executable, "-S", "-I", "-c", PROCESS, str(cache)],
        input=marshal.dumps(sources),
        capture_output=True,
        check=True,
    )
    answer: dict[str, object] = ast.literal_eval(result.stdout.decode())
    return answer


def test_a_process_finding_the_patterns_stored_never_imports_re_and_gets_what_re_compiles(
    tmp_path: pathlib.Path,
) -> None:
    cache = tmp_path / "patterns.marshal"
    assert patterns.store(SOURCES, str(cache)) == str(cache)
    answer = compile_in_process(cache, SOURCES)
    assert answer == {"imported_re": False, "same": [True] * len(SOURCES)}


def test_a_process_stores_at_exit_what_it_had_to_compile(tmp_path: pathlib.Path) -> None:
    cache = tmp_path / "patterns.marshal"
    first = compile_in_process(cache, SOURCES[:3])
    assert first["imported_re"] is True
    assert compile_in_process(cache, SOURCES[:3]) == {"imported_re": False, "same": [True] * 3}
    assert compile_in_process(cache, SOURCES[:4])["imported_re"] is True  # one it never stored


def test_a_damaged_cache_is_compiled_past_and_written_anew(tmp_path: pathlib.Path) -> None:
    cache = tmp_path / "patterns.marshal"
    cache.write_bytes(b"\x00not marshal at all")
    assert compile_in_process(cache, SOURCES[:2]) == {"imported_re": True, "same": [True, True]}
    assert compile_in_process(cache, SOURCES[:2]) == {"imported_re": False, "same": [True, True]}


def test_the_hook_redacts_a_payload_full_of_secrets_without_importing_re(home: str) -> None:
    assert compile_patterns() is not None  # as `reverie install` does
    token = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
    payload = {
        "session_id": "s1",
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": f"export GITHUB_TOKEN={token} && curl -u bob:hunter22 https://x.io"},
        "tool_response": {"stdout": "api_key: s3cr3tvalue\nkey eyJhbGciOi s.x", "password": "pw-123"},
    }
    env = {"REVERIE_HOME": home, "REDIS_URL": f"unix://{home}/nobody.sock", "PATH": os.environ["PATH"]}
    result = subprocess.run(
        [sys.executable, "-S", "-I", "-X", "importtime", str(ROOT / "ingest" / "launcher.py"), "PostToolUse"],
        input=json.dumps(payload).encode(),
        env=env,
        capture_output=True,
        check=True,
    )
    imported = {line.rsplit("|", 1)[-1].strip() for line in result.stderr.decode().splitlines()}
    assert "ingest.patterns" in imported
    assert not imported & {"re", "re._parser", "re._compiler", "enum"}
    [path] = spooled(Settings(home).spool_dir)
    recorded = bytes(decode_event(open(path, "rb").read()).payload).decode()
    for secret in (token, "hunter22", "s3cr3tvalue", "pw-123"):
        assert secret not in recorded
    assert recorded.count("[REDACTED:") == 4
