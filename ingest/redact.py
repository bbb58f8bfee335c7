"""Secrets never leave the machine's hook: API keys, tokens, private keys, passwords.

`redact` walks a decoded JSON value and rewrites every string that holds a secret, and every
value stored under a key whose name says it is a secret. A redacted secret becomes
`[REDACTED:<what>]`, so a reader can tell a secret was there and of what kind.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

# (kind, literals one of which a match must contain, pattern). A string is only searched for a
# kind when it holds one of its literals (a fast substring test): the hook redacts every
# payload on the agent's time, and most strings hold no secret at all.
#
# Where a token may start: not inside a word ("risk-assessment" holds no key), but right after
# an escape ("\\nsk-...") or a percent-encoded byte ("%3Dsk-..."). It also makes a long run of a
# prefix ("eyJeyJeyJ...") a single candidate, so every pattern stays linear.
_START = r"(?:(?<![A-Za-z0-9_\-])|(?<=\\[nrt])|(?<=%[0-9A-Fa-f]{2}))"

_KINDS: list[tuple[str, tuple[str, ...], str]] = [
    (
        "private-key",
        ("PRIVATE KEY",),
        r"-----BEGIN[A-Z ]{0,20} PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END[A-Z ]{0,20} PRIVATE KEY(?: BLOCK)?-----|\Z)",
    ),
    ("age-key", ("AGE-SECRET-KEY-",), r"AGE-SECRET-KEY-1[0-9A-Z]{50,}"),
    ("anthropic-key", ("sk-ant-",), _START + r"sk-ant-[A-Za-z0-9_\-]{16,}"),
    ("openai-key", ("sk-",), _START + r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"),
    (
        "github-token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        _START + r"(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})",
    ),
    ("gitlab-token", ("glpat-",), _START + r"glpat-[A-Za-z0-9_\-]{20,}"),
    ("slack-token", ("xox", "xapp-"), _START + r"(?:xox[abposr]|xapp)-[A-Za-z0-9\-]{10,}"),
    ("slack-webhook", ("hooks.slack.com/",), r"hooks\.slack\.com/services/[A-Za-z0-9_/]+"),
    ("aws-access-key", ("AKIA", "ASIA"), _START + r"(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("google-api-key", ("AIza",), _START + r"AIza[0-9A-Za-z_\-]{35}"),
    ("stripe-key", ("k_live_", "k_test_"), _START + r"[rs]k_(?:live|test)_[0-9A-Za-z]{16,}"),
    ("huggingface-token", ("hf_",), _START + r"hf_[A-Za-z0-9]{30,}"),
    ("npm-token", ("npm_",), _START + r"npm_[A-Za-z0-9]{36}"),
    ("sendgrid-key", ("SG.",), _START + r"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}"),
    ("jwt", ("eyJ",), _START + r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    # the ones below keep what comes before the secret: the scheme and user, the variable name.
    # "Bearer authentication" or "basic configuration" are words, not credentials: a bearer
    # token holds a digit, and a basic one decodes to user:password.
    ("bearer-token", ("earer ",), r"(?<=[Bb]earer )(?=[A-Za-z0-9._~+/=\-]*[0-9])[A-Za-z0-9._~+/=\-]{16,}"),
    ("basic-auth", ("asic ",), r"(?<=[Bb]asic )[A-Za-z0-9+/]{8,}={0,2}"),
    ("url-password", ("://",), r"(?<=://)(?P<keep>[^/\s:@'\"]*:)[^/\s@'\"]+(?=@)"),
    (
        "flag-secret",
        ("--password", "--passwd", "--token", "--api-key", "--secret"),
        r"(?i)(?P<keep>--(?:password|passwd|token|api-key|secret)[= ])[^\s\"']{4,}",
    ),
    # ..._PASSWORD=value, apiKey: "value", "token": "value": the name must end with the keyword
    (
        "secret-assignment",
        ("pass", "secret", "token", "key", "credential"),
        r"(?i)(?P<keep>(?:PASSWORD|PASSWD|PASSPHRASE|SECRET|SECRET[_-]?KEY|TOKEN|API[_-]?KEY|ACCESS[_-]?KEY|"
        r"PRIVATE[_-]?KEY|CREDENTIALS?)[\"']?\s*[:=]\s*)(?:\"[^\"\n]{4,}\"|'[^'\n]{4,}'|[^\s\"',;}&]{4,})",
    ),
]
# kinds whose literals are looked for in the lower-cased text
_CASE_FREE = {"flag-secret", "secret-assignment"}
_compiled: dict[str, re.Pattern[str]] = {}  # compiled on first need: most hooks need few kinds

_SECRET_KEY = re.compile(
    r"(?i)(password|passwd|secret|token|api_?key|access_?key|private_?key|credentials?|authorization)$"
)


def _is_basic_credential(token: str) -> bool:
    import binascii

    try:
        decoded = binascii.a2b_base64(token + "=" * (-len(token) % 4))
    except binascii.Error:
        return False
    # user:password is printable text; an English word read as base64 almost never is
    return b":" in decoded and all(32 <= byte < 127 for byte in decoded)


# kinds whose matches must pass a check before they count as secrets
_CONFIRM = {"basic-auth": _is_basic_credential}


def redact_text(text: str) -> str:
    lowered = None
    for name, literals, source in _KINDS:
        haystack = text
        if name in _CASE_FREE:
            haystack = lowered = lowered or text.lower()
        if any(literal in haystack for literal in literals):
            pattern = _compiled.get(name) or _compiled.setdefault(name, re.compile(source))
            text = pattern.sub(_replacer(name, "keep" in pattern.groupindex), text)
    return text


def _replacer(name: str, keeps: bool) -> Callable[[re.Match[str]], str]:
    marker = f"[REDACTED:{name}]"
    confirm = _CONFIRM.get(name)

    def replace(match: re.Match[str]) -> str:
        if confirm is not None and not confirm(match.group(0)):
            return match.group(0)
        # a kind with a group `keep` keeps it (the user, the name and its `=`)
        return (match["keep"] if keeps else "") + marker

    return replace


def redact(value: Any, text: Callable[[str], str] = redact_text) -> Any:
    """The same JSON value with every secret replaced: values under secret-named keys, and
    secrets in strings, which `text` redacts (it may cut them to size on the way)."""
    if isinstance(value, str):
        return text(value)
    if isinstance(value, dict):
        return {
            k: "[REDACTED:secret-field]"
            if isinstance(v, str) and v and isinstance(k, str) and _SECRET_KEY.search(k)
            else redact(v, text)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [redact(v, text) for v in value]
    return value
