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
    ("anthropic-key", ("sk-ant-",), r"sk-ant-[A-Za-z0-9_\-]{16,}"),
    ("openai-key", ("sk-",), r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"),
    ("github-token", ("gh", "github_pat_"), r"(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
    ("gitlab-token", ("glpat-",), r"glpat-[A-Za-z0-9_\-]{20,}"),
    ("slack-token", ("xox",), r"xox[abposr]-[A-Za-z0-9\-]{10,}"),
    ("aws-access-key", ("AKIA", "ASIA"), r"(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("google-api-key", ("AIza",), r"AIza[0-9A-Za-z_\-]{35}"),
    ("stripe-key", ("k_live_", "k_test_"), r"[rs]k_(?:live|test)_[0-9A-Za-z]{16,}"),
    ("jwt", ("eyJ",), r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    # the ones below keep what comes before the secret: the scheme and user, the variable name
    ("bearer-token", ("earer",), r"(?<=[Bb]earer )[A-Za-z0-9._~+/=\-]{8,}"),
    ("basic-auth", ("asic",), r"(?<=[Bb]asic )[A-Za-z0-9+/=]{8,}"),
    ("url-password", ("://",), r"(?<=://)(?P<keep>[^/\s:@'\"]*:)[^/\s@'\"]+(?=@)"),
    # ..._PASSWORD=value, apiKey: "value", "token": "value": the name must end with the keyword
    (
        "secret-assignment",
        ("pass", "secret", "token", "key", "credential"),
        r"(?i)(?P<keep>(?:PASSWORD|PASSWD|PASSPHRASE|SECRET|SECRET_?KEY|TOKEN|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|"
        r"CREDENTIALS?)[\"']?\s*[:=]\s*)(?:\"[^\"\n]{4,}\"|'[^'\n]{4,}'|[^\s\"',;}&]{4,})",
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
