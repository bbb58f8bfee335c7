"""Secrets never leave the machine's hook: API keys, tokens, private keys, passwords.

`redact` walks a decoded JSON value and rewrites every string that holds a secret, keys
included, and every value stored under a key whose name says it is a secret. A redacted
secret becomes `[REDACTED:<what>]`, so a reader can tell a secret was there and of what kind.

Where the patterns come from:
- token formats (a provider's prefix and shape: `ghp_` and 36 letters, `pypi-AgEIcHlwaS5vcmc...`)
  are gitleaks' rules, generated into `ingest/token_formats.py`, whose docstring names the
  gitleaks commit and how to refresh it (`python -m ingest.token_formats_build`);
- `_OWN` below holds what gitleaks lacks or states too narrowly for a redactor: passwords in
  URLs, commands, connection strings and assignments, and looser forms of the common tokens (a
  redactor would rather eat a made-up key than miss a real one; gitleaks, a scanner, would not);
  and secrets told by their neighbourhood: an AWS secret key (40 characters of base64) within
  200 characters of an access key id, and a value shaped like a secret (letters, digits and
  more) right after a word that names one in prose ("the password is ...", "token: ...",
  "mot de passe : ..."), never a word ("the token budget", "secret sauce").

Cost: the hook redacts every payload on the agent's time and most strings hold no secret. Each
kind names literals one of which its matches hold (gitleaks' keywords); a string is searched
only for the kinds whose literals its lower-cased form holds, each kind's pattern compiled the
first time it is needed, from ingest/patterns.py's cache without importing `re` when the install
keeps one. Every pattern runs in linear time under `re` (no nested quantifiers:
tests/test_redact.py runs each on 100k characters of its literals). The gitleaks formats cost
a hook about 0.3 ms to import and 0.2 ms (median payload) to 3 ms (largest) more to redact.
"""

from __future__ import annotations

from ingest.patterns import compiled
from ingest.token_formats import FORMATS

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from collections.abc import Callable
    from typing import Any

# Every pattern is taken when first needed, from ingest/patterns.py's cache (`re` costs a hook
# 6 ms to import): most strings hold none of the literals a secret holds. The caches below are
# plain dictionaries: functools costs a hook a millisecond.

# Where a token may start: not inside a word ("risk-assessment" holds no key), but right after
# an escape ("\\nsk-...") or a percent-encoded byte ("%3Dsk-..."). It also makes a long run of a
# prefix ("eyJeyJeyJ...") a single candidate, so every pattern stays linear.
_START = r"(?:(?<![A-Za-z0-9_\-])|(?<=\\[nrt])|(?<=%[0-9A-Fa-f]{2}))"
# a value quoted or bare, as shells and config files write it
_VALUE = r"(?:\"[^\"\n]{4,}\"|'[^'\n]{4,}'|[^\s\"',;}&]{4,})"
_SECRET_FLAGS = r"--(?:password|passwd|token|api-key|secret)"
# an AWS access key id, as gitleaks knows them
_AWS_KEY_ID_LITERALS = ("a3t", "akia", "asia", "abia", "acca")
_AWS_KEY_ID = r"(?<![A-Za-z0-9])(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])"
_AWS_NEIGHBOURHOOD = 200  # characters either side of a secret where its key id may be
# the words that name a secret in prose (lower-case, as literals are)
_PROSE_WORDS = (
    "secret", "token", "password", "passwd", "passphrase", "api key", "api_key", "api-key", "apikey",
    "access key", "mot de passe", "mots de passe", "mdp", "jeton",
)  # fmt: skip


class Kind:
    """A kind of secret. What is redacted of a match: the group `secret`, or what follows the
    group `keep`, or else gitleaks' secret (the `group`-th, or the first non-empty group) with
    at most a delimiter around it, or else the whole match. A plain class: `typing` (NamedTuple)
    would cost the hook 2 ms to import."""

    __slots__ = ("command", "entropy", "group", "literals", "name", "source")

    def __init__(
        self,
        name: str,
        literals: tuple[str, ...],
        source: str,
        entropy: float = 0.0,
        group: int = 0,
        command: str = "",
    ) -> None:
        self.name = name
        self.literals = literals  # lower-case; a match holds one of them
        self.source = source
        self.entropy = entropy  # least Shannon entropy of gitleaks' secret
        self.group = group
        self.command = command  # a pattern the command the match is an argument of must hold

    def pattern(self) -> re.Pattern[str]:
        return compiled(self.source)


_OWN = (
    Kind(
        "private-key",
        ("private key",),
        r"-----BEGIN[A-Z ]{0,20} PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END[A-Z ]{0,20} PRIVATE KEY(?: BLOCK)?-----|\Z)",
    ),
    Kind("age-key", ("age-secret-key-",), r"AGE-SECRET-KEY-1[0-9A-Z]{50,}"),
    Kind("anthropic-key", ("sk-ant-",), _START + r"sk-ant-[A-Za-z0-9_\-]{16,}"),
    Kind("openai-key", ("sk-",), _START + r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"),
    Kind(
        "github-token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        _START + r"(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})",
    ),
    Kind("gitlab-token", ("glpat-",), _START + r"glpat-[A-Za-z0-9_\-]{20,}"),
    Kind("slack-token", ("xox", "xapp-"), _START + r"(?:xox[abposr]|xapp)-[A-Za-z0-9\-]{10,}"),
    Kind("slack-webhook", ("hooks.slack.com/",), r"hooks\.slack\.com/services/[A-Za-z0-9_/]+"),
    # An AWS secret access key has no prefix of its own: 40 characters of base64 are one only
    # beside a key id (prose, a CSV of credentials), which _beside_aws_key_id looks for. Before
    # the key id's kind, which would hide that id.
    Kind(
        "aws-secret-key",
        _AWS_KEY_ID_LITERALS,
        r"(?:(?<![A-Za-z0-9/+=])|(?<=\\[nrt]))[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])",
    ),
    Kind("aws-access-key", ("akia", "asia"), _START + r"(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    Kind("google-api-key", ("aiza",), _START + r"AIza[0-9A-Za-z_\-]{35}"),
    Kind("stripe-key", ("k_live_", "k_test_"), _START + r"[rs]k_(?:live|test)_[0-9A-Za-z]{16,}"),
    Kind("huggingface-token", ("hf_",), _START + r"hf_[A-Za-z0-9]{30,}"),
    Kind("npm-token", ("npm_",), _START + r"npm_[A-Za-z0-9]{36}"),
    Kind("sendgrid-key", ("sg.",), _START + r"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}"),
    Kind("jwt", ("eyj",), _START + r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    # the ones below keep what comes before the secret: the scheme and user, the variable name.
    # "Bearer authentication" or "basic configuration" are words, not credentials: a bearer
    # token holds a digit, and a basic one decodes to user:password.
    Kind(
        "bearer-token",
        ("bearer ",),
        r"(?<=[Bb]earer )(?=[A-Za-z0-9._~+/=\-]*[0-9])[A-Za-z0-9._~+/=\-]{16,}",
    ),
    Kind("basic-auth", ("basic ",), r"(?<=[Bb]asic )[A-Za-z0-9+/]{8,}={0,2}"),
    # the password runs to the last @ before the host: "https://user:p@ss@host/"; a ? or # would
    # end the authority
    Kind("url-password", ("://",), r"(?<=://)(?P<keep>[^/?#\s:@'\"]*:)[^/?#\s'\"]+(?=@)"),
    # Azure connection strings (storage, Service Bus) and the signature of a SAS URL
    Kind(
        "azure-key",
        ("accountkey=", "sharedaccesskey="),
        r"(?i)(?P<keep>\b(?:AccountKey|SharedAccessKey)=)[A-Za-z0-9+/=]{8,}",
    ),
    Kind("sas-signature", ("sig=",), r"(?P<keep>[?&;]sig=)[A-Za-z0-9%+/=_\-]{8,}"),
    Kind(
        "flag-secret",
        ("--password", "--passwd", "--token", "--api-key", "--secret"),
        rf"(?i)(?P<keep>{_SECRET_FLAGS}[= ])[^\s\"']{{4,}}",
    ),
    # curl -u user:password, --user user:password, -u 'user:pass word'
    Kind(
        "curl-user",
        ("curl",),
        r"(?P<keep>(?<![\w-])(?:-u[ \t]*|--user(?:=|[ \t]+))(?P<quote>['\"])?[^\s:'\"]*:)"
        r"(?P<secret>(?(quote)[^'\"\n]+|[^\s'\"]+))",
        command=r"\bcurl\b",
    ),
    # the mysql client's attached password: -pPASSWORD, -p'PASS WORD' (-p 3306 is no password)
    Kind(
        "mysql-password",
        ("mysql", "mariadb"),
        r"(?P<keep>(?<![\w-])-p)(?P<secret>'[^'\n]*'|\"[^\"\n]*\"|(?![\d.]+:[\d.:\-]+(?:/tcp|/udp)?(?:\s|$))[^\s'\"]+)",
        command=r"\b(?:mysql\w*|mariadb[\w-]*)\b",
    ),
    # ..._PASSWORD=value, DB_PASS=value, apiKey: "value", "token": "value": the name must end with
    # the keyword; _PASS and _PWD only in upper case, as environment variables are named
    Kind(
        "secret-assignment",
        ("pass", "pwd", "secret", "token", "key", "credential"),
        r"(?i)(?P<keep>(?:PASSWORD|PASSWD|PASSPHRASE|SECRET|SECRET[_-]?KEY|TOKEN|API[_-]?KEY|ACCESS[_-]?KEY|"
        r"PRIVATE[_-]?KEY|CREDENTIALS?|(?-i:(?<=[A-Z0-9])_(?:PASS|PWD)))[\"']?\s*[:=]\s*)" + _VALUE,
    ),
    # a secret named in prose: "the password is hunter2-Xy9!", "with secret wJalr...", "le mot de
    # passe est ...": the word, at most two linking words or a colon, then a value. Only a value
    # shaped like a secret counts (_looks_random): "the token budget", "password reset flow" and
    # "secret sauce" name none. The value ends before the punctuation that ends a sentence.
    Kind(
        "prose-secret",
        _PROSE_WORDS,
        r"(?i)(?P<keep>\b(?:secrets?|tokens?|passwords?|passwd|passphrases?|api[ _-]?keys?|access keys?|"
        r"mots? de passe|mdp|jetons?)"
        r"(?:[ \t]*[:=]{1,3}\s*|[ \t]+(?:(?:is|was|are|now|set to|becomes|est|sera|c'est):?[ \t]+){0,2})"
        r"[\"'\x60]?)(?P<secret>\S{8,}?)(?=[.,;:)\]}'\"\x60]{0,3}(?!\S))",
        entropy=2.5,
    ),
)

KINDS: tuple[Kind, ...] = _OWN + tuple(
    Kind(name, literals, source, entropy, group) for name, literals, source, entropy, group in FORMATS
)


def _is_basic_credential(match: re.Match[str]) -> bool:
    import binascii

    token = match.group(0)
    try:
        decoded = binascii.a2b_base64(token + "=" * (-len(token) % 4))
    except binascii.Error:
        return False
    # user:password is printable text; an English word read as base64 almost never is
    return b":" in decoded and all(32 <= byte < 127 for byte in decoded)


def _beside_aws_key_id(match: re.Match[str]) -> bool:
    text, start, end = match.string, match.start(), match.end()
    around = text[max(0, start - _AWS_NEIGHBOURHOOD) : end + _AWS_NEIGHBOURHOOD]
    return compiled(_AWS_KEY_ID).search(around) is not None


def _looks_random(match: re.Match[str]) -> bool:
    """Whether a value named in prose is shaped like a secret rather than a word: letters and
    digits, and a third kind of character (case, punctuation) or 16 characters at least."""
    value = match.group("secret")
    lower = any(c.islower() for c in value)
    upper = any(c.isupper() for c in value)
    digit = any(c.isdigit() for c in value)
    other = any(not c.isalnum() for c in value)
    return (lower or upper) and digit and (lower + upper + other >= 2 or len(value) >= 16)


# kinds whose matches must pass a check before they count as secrets
_CONFIRM: dict[str, Callable[[re.Match[str]], bool]] = {
    "basic-auth": _is_basic_credential,
    "aws-secret-key": _beside_aws_key_id,
    "prose-secret": _looks_random,
}


def redact_text(text: str) -> str:
    """The text with every secret it holds replaced by its marker."""
    global _looked_at
    lowered = text.lower()
    _looked_at += len(lowered) + 100
    if _looked_at < _TRIE_AFTER:
        found = {literal for literal in _kinds_of_literal() if literal in lowered}
    else:
        found = set(_literal_finder().findall(lowered))
    if not found:
        return text
    for index in sorted({i for literal in found for i in _kinds_called_for(literal)}):
        kind = KINDS[index]
        text = kind.pattern().sub(_replacer(kind), text)
    return text


# One pass of a trie of the literals costs half as much per character as a substring test for
# each (170 of them), and a sixth per string, but 1 to 2 ms to compile: about what the tests
# cost on 50,000 characters (a string counting for 100 more). A process compiles it once it has
# looked at that much: a hook with a typical payload never does, the transcript import at once.
_TRIE_AFTER = 50_000
_looked_at = 0
_finder: re.Pattern[str] | None = None


def _literal_finder() -> re.Pattern[str]:
    """A pattern that finds, at each place, the longest literal starting there."""
    global _finder
    if _finder is None:  # its source is long to build
        _finder = compiled(f"(?=({_trie(set(_kinds_of_literal()))}))")
    return _finder


_literals: dict[str, tuple[int, ...]] = {}


def _kinds_of_literal() -> dict[str, tuple[int, ...]]:
    if not _literals:
        for i, kind in enumerate(KINDS):
            for literal in kind.literals:
                _literals[literal] = (*_literals.get(literal, ()), i)
    return _literals


def _kinds_called_for(found: str) -> tuple[int, ...]:
    """The kinds a literal found calls for: those of the literals that start it, itself included
    (the finder reports only the longest literal at a place)."""
    kinds = _kinds_of_literal()
    return tuple(i for end in range(1, len(found) + 1) for i in kinds.get(found[:end], ()))


def _trie(words: set[str]) -> str:
    """A pattern matching the longest of `words` at a place, in time bounded by the longest word:
    each step follows one character (a trie), never trying the words one by one."""
    root: dict[str, dict[str, Any]] = {}
    for word in words:
        node = root
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def pattern(node: dict[str, dict[str, Any]]) -> str:
        import re

        branches = [re.escape(char) + pattern(child) for char, child in sorted(node.items()) if char]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if "" in node else body

    return pattern(root)


def _replacer(kind: Kind) -> Callable[[re.Match[str]], str]:
    marker = f"[REDACTED:{kind.name}]"
    confirm = _CONFIRM.get(kind.name)
    command = compiled(kind.command) if kind.command else None

    def replace(match: re.Match[str]) -> str:
        whole = match.group(0)
        if confirm is not None and not confirm(match):
            return whole
        if command is not None and not command.search(_command_before(match)):
            return whole
        start, end = _secret_span(match, kind.group)
        if kind.entropy and _entropy(match.string[start:end]) < kind.entropy:
            return whole
        offset = match.start()
        return whole[: start - offset] + marker + whole[end - offset :]

    return replace


# compiled when first needed, like the kinds: most hooks need neither
_COMMAND_SEPARATOR = r"(?<!\\)\n|(?:;|&&|\|\|?)(?=\s)"
_DELIMITER = r"(?:[\x60'\"\s;,:=>()<]|\\[nr])?"


def _command_before(match: re.Match[str]) -> str:
    """The command that the match is an argument of, up to the match: at most 300 characters back,
    and not past a line break (unless escaped: a continued line) or a `;`, `&&`, `|`."""
    window = match.string[max(0, match.start() - 300) : match.start()]
    return compiled(_COMMAND_SEPARATOR).split(window)[-1]


def _secret_span(match: re.Match[str], group: int) -> tuple[int, int]:
    names = match.re.groupindex
    if "secret" in names:
        return match.span("secret")
    if "keep" in names:
        return match.end("keep"), match.end()
    if not group:
        group = next((i for i in range(1, match.re.groups + 1) if match.group(i)), 0)
    start, end = match.span(group)
    text = match.string
    # gitleaks' secret alone when the rest of the match only delimits it (`\b(token)(?:['";\s]|$)`)
    delimiter = compiled(_DELIMITER)
    if delimiter.fullmatch(text, match.start(), start) and delimiter.fullmatch(text, end, match.end()):
        return start, end
    return match.span()


def _entropy(text: str) -> float:
    """Shannon entropy in bits per character, as gitleaks computes it."""
    import math

    counts: dict[str, int] = {}
    for char in text:
        counts[char] = counts.get(char, 0) + 1
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values()) if text else 0.0


# keys whose values are secrets: the name ends with the word; pass and pwd only as a word of their
# own (db_pass, dbPass, smtp-pwd; not bypass, compass)
_SECRET_KEY = (
    r"(?i:password|passwd|passphrase|secret|token|api_?key|access_?key|private_?key|credentials?|authorization)$"
    r"|(?i:(?:^|[_\-.])(?:pass|pwd))$|(?<=[a-z])(?:Pass|Pwd)$"
)
# the last letter of every word the pattern ends with, casefolded (as (?i) matches the long s for "s"):
# the pattern runs only on keys that end so (before one line break, which "$" allows)
_SECRET_KEY_LAST = frozenset("detnyls")


def _is_secret_key(key: str) -> bool:
    last = key[-2:-1] if key.endswith("\n") else key[-1:]
    return last.casefold() in _SECRET_KEY_LAST and compiled(_SECRET_KEY).search(key) is not None


def redact(value: Any, text: Callable[[str], str] = redact_text) -> Any:
    """The same JSON value with every secret replaced: values under secret-named keys (strings
    and numbers), and secrets in strings and keys, which `text` redacts (it may cut them to size
    on the way). Keys that become the same marker stay apart (`[REDACTED:github-token] (2)`)."""
    if isinstance(value, str):
        return text(value)
    if isinstance(value, dict):
        redacted: dict[Any, Any] = {}
        for key, item in value.items():
            if isinstance(key, str) and _is_secret_value(item) and _is_secret_key(key):
                item = "[REDACTED:secret-field]"
            else:
                item = redact(item, text)
            if isinstance(key, str):
                key = new = text(key)
                copies = 1
                while new in redacted:
                    copies += 1
                    new = f"{key} ({copies})"
                key = new
            redacted[key] = item
        return redacted
    if isinstance(value, list):
        return [redact(v, text) for v in value]
    return value


def _is_secret_value(value: Any) -> bool:
    return (isinstance(value, str) and value != "") or (
        isinstance(value, (int, float)) and not isinstance(value, bool)
    )


def redact_argv(argv: list[str]) -> list[str]:
    """Command-line arguments with their secrets redacted: each on its own, and the one after
    a flag that names a secret (`--token VALUE`) whole."""
    return [
        "[REDACTED:flag-secret]"
        if i and compiled(f"(?i){_SECRET_FLAGS}").fullmatch(argv[i - 1])
        else redact_text(arg)
        for i, arg in enumerate(argv)
    ]


def pattern_sources() -> list[str]:
    """Every pattern a hook may compile, for ingest/patterns.py to keep compiled."""
    return [
        *(kind.source for kind in KINDS),
        *(kind.command for kind in KINDS if kind.command),
        _COMMAND_SEPARATOR,
        _DELIMITER,
        _SECRET_KEY,
        f"(?i){_SECRET_FLAGS}",
        _AWS_KEY_ID,
    ]
