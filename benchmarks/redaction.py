"""Redaction of secrets told in prose, measured on a labelled set (benchmarks/redaction_cases.json).

The set holds secret phrasings, each labelled with the secret substrings it holds (a value named
in English, French, German, Spanish, Italian or Portuguese prose, after its word or before it,
a passphrase, a quoted value, an assignment, a provider's prefix, an AWS secret key with no key
id near), and innocent sentences that look alike (hashes, UUIDs, commit ids, base64 images,
"the password field is required", key and variable names without values, config docs).

A secret is kept when `redact_text`'s output still holds it, or holds one of its words of four
characters or more that the sentence holds nowhere else (the output's markers aside): a secret
half redacted is kept. An innocent sentence is touched when the output differs from it at all.
Prints one JSON line: the counts, recall, the false-positive rate, the median microseconds of a
`redact_text` call over every sentence, the counts by language, and with --cases the sentences
whose secret was kept and the innocent ones touched.

    python benchmarks/redaction.py [--module path/to/redact.py] [--runs 20] [--cases]

`--module` measures another copy of ingest/redact.py (e.g. `git show HEAD:ingest/redact.py`
saved to /tmp) in place of the installed one.
"""

import argparse
import importlib.util
import json
import os
import re
import statistics
import time
from collections.abc import Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "redaction_cases.json")
_MARKER = re.compile(r"\[REDACTED:[a-z0-9-]+\]")
_WORD = re.compile(r"\w{4,}")

Redactor = Callable[[str], str]


def load_redactor(path: str | None) -> Redactor:
    """`redact_text` of ingest/redact.py, or of the copy of it at `path`."""
    if path is None:
        from ingest.redact import redact_text

        return redact_text
    spec = importlib.util.spec_from_file_location("redact_under_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found: Redactor = module.redact_text
    return found


def kept(text: str, secret: str, redacted: str) -> bool:
    """Whether any of `secret` survives in `redacted`, the redaction of `text`."""
    if secret in redacted:
        return True
    elsewhere = text.replace(secret, " ")
    output = _MARKER.sub(" ", redacted)
    return any(word not in elsewhere and word in output for word in _WORD.findall(secret))


def measure(redact_text: Redactor, cases: dict[str, Any], runs: int) -> dict[str, Any]:
    secret, innocent = cases["secret"], cases["innocent"]
    missed = [
        case
        for case in secret
        if any(kept(case["text"], s, redact_text(case["text"])) for s in case["secrets"])
    ]
    touched = [case for case in innocent if redact_text(case["text"]) != case["text"]]
    texts = [case["text"] for case in (*secret, *innocent)]
    return {
        "secret_cases": len(secret),
        "secrets_kept": len(missed),
        "recall": round(1 - len(missed) / len(secret), 4),
        "innocent_cases": len(innocent),
        "innocent_touched": len(touched),
        "false_positive_rate": round(len(touched) / len(innocent), 4),
        "median_us_per_call": round(median_call_us(redact_text, texts, runs), 2),
        "by_language": by_language(secret, missed, innocent, touched),
        "kept": [case["text"] for case in missed],
        "touched": [case["text"] for case in touched],
    }


def by_language(
    secret: list[dict[str, Any]],
    missed: list[dict[str, Any]],
    innocent: list[dict[str, Any]],
    touched: list[dict[str, Any]],
) -> dict[str, list[int]]:
    """For each language (and "config"): [secret cases, kept, innocent cases, touched]."""
    counts: dict[str, list[int]] = {}
    for group, slot in ((secret, 0), (missed, 1), (innocent, 2), (touched, 3)):
        for case in group:
            counts.setdefault(case["lang"], [0, 0, 0, 0])[slot] += 1
    return dict(sorted(counts.items()))


def median_call_us(redact_text: Redactor, texts: list[str], runs: int) -> float:
    """The median, over every sentence, of its fastest call in `runs` (the pattern cache warm)."""
    best = []
    for text in texts:
        redact_text(text)
        timings = []
        for _ in range(runs):
            started = time.perf_counter()
            redact_text(text)
            timings.append(time.perf_counter() - started)
        best.append(min(timings))
    return statistics.median(best) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--module", help="a copy of ingest/redact.py to measure instead")
    parser.add_argument("--runs", type=int, default=20, help="calls timed per sentence")
    parser.add_argument(
        "--cases", action="store_true", help="also list the secrets kept and sentences touched"
    )
    args = parser.parse_args()
    with open(CASES, encoding="utf-8") as f:
        cases = json.load(f)
    measured = measure(load_redactor(args.module), cases, args.runs)
    if not args.cases:
        del measured["kept"], measured["touched"]
    print(json.dumps(measured, ensure_ascii=False))


if __name__ == "__main__":
    main()
