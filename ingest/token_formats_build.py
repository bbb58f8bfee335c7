"""Writes `ingest/token_formats.py` from gitleaks' rule set: run by hand to refresh it, never by the hook.

    python -m ingest.token_formats_build path/to/gitleaks.toml COMMIT > ingest/token_formats.py
    ruff format ingest/token_formats.py

where the file is `config/gitleaks.toml` of https://github.com/gitleaks/gitleaks at COMMIT, then
run tests/test_redact.py (every pattern is timed on long runs of its keywords there).

Only the rules that name a token by its own shape are kept (`ghp_` and 36 letters or digits), and
only in a form Python's backtracking `re` runs in linear time:

- gitleaks' keyword-assignment rules (`beamer_token = ...`, the generic API key) are left out:
  they start with `[\\w.-]{0,50}?` before a keyword and need gitleaks' entropy and stop-word
  filters to keep off ordinary code; under `re` they took 50 ms to 6 s on a 20 kB string of their
  keyword (RE2, gitleaks' engine, is linear; `re` backtracks). redact.py's own
  `secret-assignment` covers `NAME = value` for secret-sounding names.
- rules with an unbounded `.` (`curl\\b.*`) are left out for the same reason.
- RE2 syntax is translated: a flag group `(?i)` inside the pattern scopes the rest of its group,
  `[[:alnum:]]` classes are spelled out, `\\z` is `\\Z`, and `\\w`, `\\d`, `\\s`, `\\b` are ASCII.
- rules that still do not compile are left out.
"""

from __future__ import annotations

import re
import sys
import tomllib
from typing import Any

# gitleaks' keyword-assignment rules start with this (identifierPrefix, cmd/generate/config/utils)
_ASSIGNMENT_RULE = r"[\w.-]{0,50}?"
_UNBOUNDED_DOT = re.compile(r"(?<!\\)\.(?:[*+]|\{\d+,\})")
_POSIX = {
    "alnum": "A-Za-z0-9",
    "alpha": "A-Za-z",
    "digit": "0-9",
    "lower": "a-z",
    "upper": "A-Z",
    "xdigit": "0-9A-Fa-f",
    "word": "A-Za-z0-9_",
    "space": r"\t\n\v\f\r ",
}


def translate(pattern: str) -> str:
    """An RE2 pattern as a Python pattern that matches the same text."""
    pattern = re.sub(r"\[:([a-z]+):\]", lambda m: _POSIX[m.group(1)], pattern).replace(r"\z", r"\Z")
    return "(?a)" + _scope_inline_flags(pattern)


def _scope_inline_flags(pattern: str) -> str:
    """`a(?i)b)` as `a(?i:b))`: RE2 lets a flag group stand anywhere, Python only at the start."""
    out: list[str] = []
    closers: list[int] = [0]  # per open group: how many `)` its inline flag groups opened
    i = 0
    in_class = False
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            if pattern[i + 1 : i + 2] == "]":  # a leading ] is a member
                out.append("[]")
                i += 2
                continue
        elif char == "(":
            flags = re.match(r"\(\?([a-zA-Z-]+)\)", pattern[i:])
            if flags and out:
                out.append(f"(?{flags.group(1)}:")
                closers[-1] += 1
                i += flags.end()
                continue
            closers.append(0)
        elif char == ")":
            out.append(")" * closers.pop())
        out.append(char)
        i += 1
    return "".join(out) + ")" * closers[0]


def formats(rules: list[dict[str, Any]]) -> list[tuple[str, tuple[str, ...], str, float, int]]:
    """(id, keywords, pattern, entropy, secret group) for each rule kept, in gitleaks' order."""
    kept = []
    for rule in rules:
        regex, keywords = rule.get("regex"), tuple(k.lower() for k in rule.get("keywords", ()))
        if not regex or not keywords or _ASSIGNMENT_RULE in regex or _UNBOUNDED_DOT.search(regex):
            continue
        pattern = translate(regex)
        try:
            re.compile(pattern)
        except re.error:
            continue
        kept.append(
            (rule["id"], keywords, pattern, float(rule.get("entropy", 0)), rule.get("secretGroup", 0))
        )
    return kept


def _raw(pattern: str) -> str:
    """The pattern as a raw string literal, as a person would write it."""
    for quote in ('"', "'", '"""', "'''"):
        if quote not in pattern and not pattern.endswith(("\\", quote[0])):
            return f"r{quote}{pattern}{quote}"
    return repr(pattern)


def module(rules: list[dict[str, Any]], commit: str) -> str:
    lines = [
        "# ruff: noqa: E501",
        '"""Token formats: generated from gitleaks\' rule set, do not edit.',
        "",
        "From config/gitleaks.toml of https://github.com/gitleaks/gitleaks at",
        f"{commit}, MIT License, Copyright (c) 2019 Zachary Rice.",
        "Refresh: python -m ingest.token_formats_build path/to/gitleaks.toml COMMIT",
        "> ingest/token_formats.py, then ruff format it (that module says which rules are kept and",
        "how they are translated).",
        "",
        "Each format: (gitleaks rule id, keywords one of which the lower-cased text must hold, pattern,",
        "least Shannon entropy of the secret, the group holding the secret: 0 for the first non-empty one).",
        '"""',
        "",
        "FORMATS: tuple[tuple[str, tuple[str, ...], str, float, int], ...] = (",
    ]
    for name, keywords, pattern, entropy, group in formats(rules):
        lines.append(f"    ({name!r}, {keywords!r}, {_raw(pattern)}, {entropy!r}, {group!r}),")
    lines.append(")")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    path, commit = sys.argv[1:3]
    with open(path, "rb") as f:
        sys.stdout.write(module(tomllib.load(f)["rules"], commit))
