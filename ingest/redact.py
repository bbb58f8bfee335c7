"""Secrets never leave the machine's hook: API keys, tokens, private keys, passwords.

`redact` walks a decoded JSON value and rewrites every string that holds a secret, and every
value stored under a key whose name says it is a secret. A redacted secret becomes
`[REDACTED:<what>]`, so a reader can tell a secret was there and of what kind.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# (kind, literals one of which a match must contain, pattern). A string is only searched for a
# kind when it holds one of its literals (a fast substring test): the hook redacts every
# payload on the agent's time, and most strings hold no secret at all.
_KINDS: list[tuple[str, tuple[str, ...], str]] = [
    (
        "private-key",
        ("PRIVATE KEY",),
        r"-----BEGIN[A-Z ]{0,20} PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END[A-Z ]{0,20} PRIVATE KEY(?: BLOCK)?-----|\Z)",
    ),
    ("age-key", ("AGE-SECRET-KEY-",), r"AGE-SECRET-KEY-1[0-9A-Z]{50,}"),
    # \b before each prefix: a token starts a word ("risk-assessment" holds no key), and a
    # long run of a prefix is scanned once, not once per repeat
    ("anthropic-key", ("sk-ant-",), r"\bsk-ant-[A-Za-z0-9_\-]{16,}"),
    ("openai-key", ("sk-",), r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"),
    ("github-token", ("gh", "github_pat_"), r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
    ("gitlab-token", ("glpat-",), r"\bglpat-[A-Za-z0-9_\-]{20,}"),
    ("slack-token", ("xox", "xapp-"), r"\b(?:xox[abposr]|xapp)-[A-Za-z0-9\-]{10,}"),
    ("slack-webhook", ("hooks.slack.com/",), r"hooks\.slack\.com/services/[A-Za-z0-9_/]+"),
    ("aws-access-key", ("AKIA", "ASIA"), r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("google-api-key", ("AIza",), r"\bAIza[0-9A-Za-z_\-]{35}"),
    ("stripe-key", ("k_live_", "k_test_"), r"\b[rs]k_(?:live|test)_[0-9A-Za-z]{16,}"),
    ("huggingface-token", ("hf_",), r"\bhf_[A-Za-z0-9]{30,}"),
    ("npm-token", ("npm_",), r"\bnpm_[A-Za-z0-9]{36}"),
    ("sendgrid-key", ("SG.",), r"\bSG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}"),
    ("jwt", ("eyJ",), r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    # the ones below keep what comes before the secret: the scheme and user, the variable name.
    # Header schemes are capitalised as in HTTP, and their tokens must look like tokens:
    # "Bearer authentication" or "Basic configuration" are words, not credentials.
    (
        "bearer-token",
        ("Bearer ", "bearer "),
        r"(?<=[Bb]earer )(?=[A-Za-z0-9._~+/=\-]*[0-9])[A-Za-z0-9._~+/=\-]{16,}",
    ),
    ("basic-auth", ("Basic ",), r"(?<=Basic )(?=[A-Za-z0-9+/]*(?:[0-9]|=))[A-Za-z0-9+/]{8,}={0,2}"),
    ("url-password", ("://",), r"(?<=://)(?P<keep>[^/\s:@'\"]*:)[^/\s@'\"]+(?=@)"),
    ("flag-secret", ("--",), r"(?i)(?P<keep>--(?:password|passwd|token|api-key|secret)[= ])[^\s\"']{4,}"),
    # ..._PASSWORD=value, apiKey: "value", "token": "value": the name must end with the keyword
    (
        "secret-assignment",
        ("pass", "secret", "token", "key", "credential"),
        r"(?i)(?P<keep>(?:PASSWORD|PASSWD|PASSPHRASE|SECRET|SECRET[_-]?KEY|TOKEN|API[_-]?KEY|ACCESS[_-]?KEY|"
        r"PRIVATE[_-]?KEY|CREDENTIALS?)[\"']?\s*[:=]\s*)(?:\"[^\"\n]{4,}\"|'[^'\n]{4,}'|[^\s\"',;}&]{4,})",
    ),
]
_CASE_FREE = "secret-assignment"
_compiled: dict[str, re.Pattern[str]] = {}  # compiled on first need: most hooks need few kinds

_SECRET_KEY = re.compile(
    r"(?i)(password|passwd|secret|token|api_?key|access_?key|private_?key|credentials?|authorization)$"
)


def redact_text(text: str) -> str:
    lowered = None
    for name, literals, source in _KINDS:
        haystack = text
        if name == _CASE_FREE:
            haystack = lowered = lowered or text.lower()
        if any(literal in haystack for literal in literals):
            pattern = _compiled.get(name) or _compiled.setdefault(name, re.compile(source))
            marker = f"[REDACTED:{name}]"
            # a kind with a group `keep` keeps it (the user, the name and its `=`)
            keeps = "keep" in pattern.groupindex
            text = pattern.sub((lambda m, mk=marker: m["keep"] + mk) if keeps else marker, text)
    return text


def redact(value: Any) -> Any:
    """The same JSON value with every secret replaced."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {
            k: "[REDACTED:secret-field]"
            if isinstance(v, str) and v and isinstance(k, str) and _SECRET_KEY.search(k)
            else redact(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value
