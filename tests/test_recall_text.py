"""Every step recall takes on a prompt's text is linear, and recall reads a prompt's gist."""

import time
from collections.abc import Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingest.injection import SENT_WHOLE, prompt_sent
from projections.recall.tasks import classify, identifiers, keywords, queries
from projections.recall.timeframes import asks_when, tells_time, window
from projections.recall.words import terms
from schemas.text.gist import PROMPT_LIMIT, gist

# What people paste, and what defeats backtracking: long runs of one class of character
UNITS = [
    "deadbeef", "é", "漢字", "a", "Aa", "aB", "a.", "a-", "a/", "_", "0", "1 ", "in ", "may ", "3rd ",
    "when ", ", what", "last ", "12 ",
    " ", "\n", "-", "eyJ", "AbC.", "x/y_z", "Error: ", "?", "'",
]  # fmt: skip
STEPS: list[Callable[[str], object]] = [
    classify,
    identifiers,
    keywords,
    queries,
    window,
    asks_when,
    tells_time,
    terms,
    gist,
]
LIMIT_US = 25  # linear steps take about 1; the quadratic ones took 150 and more


def _seconds(step: Callable[[str], object], text: str) -> float:
    started = time.perf_counter()
    step(text)
    return time.perf_counter() - started


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    prefix=st.sampled_from(["", "what is ", "fix "]),
    units=st.lists(st.sampled_from(UNITS), min_size=1, max_size=3),
    length=st.integers(20_000, 60_000),
)
def test_every_text_step_is_linear_on_adversarial_input(prefix: str, units: list[str], length: int) -> None:
    unit = "".join(units)
    text = prefix + unit * (length // len(unit))
    for step in STEPS:
        per_character = _seconds(step, text) / len(text) * 1e6
        assert per_character < LIMIT_US, f"{step.__name__}: {per_character:.0f} µs/character"


def test_identifiers_are_runs_with_a_dot_slash_or_underscore_and_camel_case_words() -> None:
    text = "see otel.yaml, src/app.py and fold_fact_asserted; fooBar and HTTPServer, JsonDecoder, not this."
    assert identifiers(text) == ["otel.yaml", "src/app.py", "fold_fact_asserted", "fooBar", "JsonDecoder"]


def test_a_short_prompt_is_its_own_gist() -> None:
    prompt = "why does the upload fail with ERR_QUOTA_4711 since the 2026-03-14 deploy?"
    assert gist(prompt) == prompt


def test_a_long_hash_keeps_its_first_64_characters_and_a_commit_hash_stays_whole() -> None:
    sha = "3f786850e387550fdab836ed7e6dc881de23001b"
    blob = "QUJD" * 500
    assert gist(f"is {sha} in {blob}?") == f"is {sha} in {blob[:64]}…?"


def test_a_pasted_log_keeps_the_question_the_error_and_stays_within_the_limit() -> None:
    lines = [f"2026-01-01 12:00:{i % 60:02} INFO worker step {i} ok" for i in range(2_000)]
    lines[1_500] = "ValueError: quota exceeded ERR_QUOTA_4711"
    prompt = "the upload fails, here is the log:\n" + "\n".join(lines) + "\nwhat is going on?"
    kept = gist(prompt)
    assert len(kept) <= PROMPT_LIMIT
    assert kept.startswith("the upload fails, here is the log:\n")
    assert kept.endswith("\n…\nwhat is going on?")
    assert "ValueError: quota exceeded ERR_QUOTA_4711" in kept
    assert kept.index("step 0 ok") < kept.index("ValueError") < kept.index("what is going on")


@given(st.text(alphabet="ab é漢\n-_.E", max_size=6_000), st.integers(80, 3_000))
def test_a_gist_never_exceeds_its_limit(prompt: str, limit: int) -> None:
    assert len(gist(prompt, limit)) <= max(limit, 0)


def test_the_hook_sends_a_prompt_whole_unless_it_is_long() -> None:
    usual = "why does the upload fail with ERR_QUOTA_4711 since the deploy? " * 40
    assert prompt_sent(usual) == usual  # the service reads its gist: the hook needs no `re`
    pasted = "QUJD" * (SENT_WHOLE // 4) + " why?"
    assert prompt_sent(pasted) == gist(pasted) == "QUJD" * 16 + "… why?"


def test_one_enormous_line_keeps_its_head_and_tail() -> None:
    prompt = "é" * 1_000_000 + " why?"
    kept = gist(prompt)
    assert len(kept) == PROMPT_LIMIT and kept.startswith("ééé") and kept.endswith("é why?")
