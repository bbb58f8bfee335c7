"""No secret in what memory keeps or gives: secrets written in prose, sent through the real hook
to a running stack, are nowhere it stores them (the event log, the tables, the vectors, the
profiles, the server's append-only file, the dead letters) and never come back in a prompt;
ordinary prose near the same words is kept as it was said."""

import json
import os
from pathlib import Path

import duckdb

from schemas.settings import Settings
from tests.support.processes import Stack, run_hook, wait_for

AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
AWS_SECRET_ALONE = "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY"  # told with no key id near it
KEY_BASE, WEBHOOK = "9f2c4e6a8b0d1f3e5a7c9b1d3f5e7a9c", "whsec_Qm9Lp2Zx7Kv4Bn8Rt1Yw6Hs3Jd5Fg0Ac"
SECRETS = [
    AWS_SECRET, "AKIAIOSFODNN7EXAMPLE", "hunter2-Xy9!", "3f9a8b7c6d5e4f3a2b1c0d9e", "Tr0ub4dor&3",
    AWS_SECRET_ALONE, "correct horse battery staple", "Geheim-4711x", "Xy9-Qq", KEY_BASE, WEBHOOK,
]  # fmt: skip
PROSE = "keep the token budget under 2000, the password reset flow sends a mail, our secret sauce is caching"
PROMPTS = [
    f"use the AWS key AKIAIOSFODNN7EXAMPLE with secret {AWS_SECRET}",
    "the password is hunter2-Xy9! for the staging database",
    "my api key is 3f9a8b7c6d5e4f3a2b1c0d9e, keep it",
    "le mot de passe est Tr0ub4dor&3",
    f"the AWS secret key is {AWS_SECRET_ALONE}",
    "the wifi password is correct horse battery staple",
    "das Passwort ist Geheim-4711x",
    "Xy9-Qq is the admin password",
    f"deploy with SECRET_KEY_BASE={KEY_BASE} and the webhook secret {WEBHOOK}",
    PROSE,
]


def hook(env: dict[str, str], event: str, **payload: str) -> bytes:
    sent = {"session_id": "s1", "hook_event_name": event, "cwd": "/work/app", **payload}
    done = run_hook(json.dumps(sent).encode(), {**env, "CLAUDE_PROJECT_DIR": "/work/app"}, event)
    assert done.returncode == 0
    return done.stdout


def table_rows(stack: Stack) -> str:
    """Every row of every table and view of the snapshot and the log, as text."""
    db = stack.query
    names = [n for (n,) in db("select table_name from information_schema.tables order by 1")]
    said = []
    for name in names:
        try:
            said.append(str(db(f'select * from "{name}"')))
        except duckdb.Error:  # a view needing what this snapshot lacks (none does today)
            continue
    return "\n".join(said)


def stored_bytes(home: str) -> bytes:
    """Every file of the data directory, as bytes: the append-only file, dead letters, profiles,
    manifests, logs, and what the log, the tables and the vectors keep uncompressed."""
    return b"\n".join(p.read_bytes() for p in Path(home).rglob("*") if p.is_file() and not p.is_symlink())


def test_secrets_in_prose_are_kept_nowhere_and_never_given_back(
    stack: Stack, env: dict[str, str], settings: Settings
) -> None:
    printed = [hook(env, "UserPromptSubmit", prompt=prompt) for prompt in PROMPTS]
    printed.append(
        hook(env, "Stop", last_assistant_message=f"Done: the key is AKIAIOSFODNN7EXAMPLE {AWS_SECRET}")
    )
    cut_off = (
        b'{"session_id": "s1", "prompt": "the password is hunter2-Xy9! and the AWS secret '
        + AWS_SECRET.encode()
    )
    assert run_hook(cut_off, env, "UserPromptSubmit").returncode == 0

    def folded() -> bool:
        [(prompts, messages, embedded)] = stack.query(
            "select (select count(*) from prompts where session_id = 's1'), "
            "(select count(*) from messages where session_id = 's1'), "
            "(select count(*) from embedded where memory_id in (select event_id from prompts))"
        )
        return bool(prompts == len(PROMPTS) and messages == 1 and embedded >= len(PROMPTS))

    wait_for(folded, timeout=180, what="the prompts folded and embedded")
    printed.append(hook(env, "SessionStart", source="startup", session_id="s2"))  # writes the profile
    printed.append(hook(env, "UserPromptSubmit", prompt="what is the AWS secret key and the password?"))
    wait_for(lambda: os.listdir(settings.profiles_dir), what="the project's profile")

    [letter] = [json.loads(p.read_bytes()) for p in Path(settings.dead_letter_dir).glob("*.json")]
    assert letter["reason"].startswith("not JSON: Unterminated string")
    rows, files, given = table_rows(stack), stored_bytes(settings.home), b"".join(printed)
    for secret in SECRETS:
        assert secret not in rows, secret
        assert secret.encode() not in files, secret
        assert secret.encode() not in given, secret
    assert "[REDACTED:aws-secret-key]" in rows and "[REDACTED:prose-secret]" in rows
    assert stack.query(f"select count(*) from prompts where prompt = '{PROSE}'") == [(1,)]
