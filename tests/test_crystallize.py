"""Crystallization: a preference said in 3 distinct sessions holds, 2 are not enough, wordings of
one meaning count as one; a failure met 3 times recurs."""

import random
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from projections.embedding_model import load_encoder
from workers.dynamics.crystallize import (
    PROFILE,
    SAME_MEANING,
    WINDOW,
    Occurrence,
    Utterance,
    about,
    crystallize,
    preference_id,
    recurring,
)
from workers.dynamics.signals import normalize

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def said(text: str, session: str, n: int = 0) -> Utterance:
    return Utterance(f"e-{session}-{text}-{n}", session, text, T0 + timedelta(minutes=n))


def test_three_sessions_crystallize_and_two_do_not() -> None:
    two = [said("always use uv", "s1"), said("always use uv", "s2")]
    assert crystallize("p", two) == []
    [crystal] = crystallize("p", [*two, said("always use uv", "s3")])
    assert (crystal.statement, crystal.sessions, crystal.evidence) == ("always use uv", 3, 3)
    assert crystal.strength == 0.6  # 3 / (3 + 2)
    assert crystal.preference_id == preference_id("p", "always use uv")
    assert crystal.caused_by == tuple(sorted(s.event_id for s in [*two, said("always use uv", "s3")]))


def test_three_sayings_in_one_session_are_one_session() -> None:
    one_session = [said("always use uv", "s1", n) for n in range(3)]
    assert crystallize("p", [*one_session, said("always use uv", "s2")]) == []


def _encode(meanings: dict[str, int]) -> Callable[[Sequence[str]], np.ndarray]:
    def encode(texts: Sequence[str]) -> np.ndarray:
        vectors = np.zeros((len(texts), 8), dtype=np.float32)
        for row, text in enumerate(texts):
            vectors[row, meanings[text]] = 1.0
        return vectors

    return encode


def test_wordings_of_one_meaning_count_as_one_preference() -> None:
    meanings = {"always use uv": 0, "stick with the astral tool": 0, "prefer tabs": 1}
    signals = [
        said("always use uv", "s1"),
        said("stick with the astral tool", "s2"),
        said("always use uv", "s3"),
        said("prefer tabs", "s1"),
    ]
    assert crystallize("p", signals) == []  # by what they name alone: 2 sessions and 1
    [crystal] = crystallize("p", signals, _encode(meanings))
    assert crystal.sessions == 3 and crystal.statement == "always use uv"  # the wording said most
    assert crystal.preference_id == preference_id("p", "always use uv")  # the wording said first
    meanings["a must: the astral tool"] = 0  # a new wording, said later, sorting first
    [joined] = crystallize("p", [*signals, said("a must: the astral tool", "s4", 9)], _encode(meanings))
    assert (joined.sessions, joined.preference_id) == (4, crystal.preference_id)


def test_the_profile_keeps_the_strongest_and_the_newest_window() -> None:
    signals = [said(f"rule {k}", f"s{s}") for k in range(PROFILE + 5) for s in range(3 + (k % 2))]
    crystals = crystallize("p", signals)
    assert len(crystals) == PROFILE
    assert all(c.sessions == 4 for c in crystals[: (PROFILE + 5) // 2])  # the strongest first
    old = [Utterance(f"old{s}", f"s{s}", "ancient rule", T0 - timedelta(days=9)) for s in range(3)]
    recent = [said(f"recent {n}", "s0", n) for n in range(WINDOW)]
    assert crystallize("p", [*old, *recent]) == []  # out of the window of the newest 500
    assert [c.statement for c in crystallize("p", [*old, *recent[:-3]])] == ["ancient rule"]


def test_the_order_of_the_signals_changes_nothing() -> None:
    signals = [said(t, s) for t in ("a", "b", "c") for s in ("s1", "s2", "s3", "s4")]
    shuffled = signals[:]
    random.Random(7).shuffle(shuffled)
    assert crystallize("p", signals) == crystallize("p", shuffled)


def test_a_failure_met_three_times_recurs() -> None:
    def met(event_id: str, signature: str, minutes: int) -> Occurrence:
        return Occurrence(event_id, signature, T0 + timedelta(minutes=minutes), f"{signature} at {minutes}")

    twice = [met("a", "ImportError: N", 1), met("b", "ImportError: N", 2), met("b", "ImportError: N", 2)]
    assert recurring(twice) == []  # one event counted once
    [found] = recurring([*twice, met("c", "ImportError: N", 3), met("d", "other", 4)])
    assert (found.signature, found.occurrences, found.example) == ("ImportError: N", 3, "ImportError: N at 3")
    assert found.caused_by == ("a", "b", "c") and found.last_seen == T0 + timedelta(minutes=3)


@pytest.fixture(scope="module")
def encode() -> Callable[[Sequence[str]], np.ndarray]:
    """The real model's vectors (MiniLM puts the seed's wordings at cosines 0.64 to 0.73)."""
    encoder = load_encoder()
    return lambda texts: encoder.encode(list(texts))


def test_the_seeds_named_exports_in_french_and_english_crystallize(
    encode: Callable[[Sequence[str]], np.ndarray],
) -> None:
    wordings = [
        normalize("Toujours utiliser des exports nommés"),
        normalize("On utilise des named exports, pas de default"),
        normalize("Je préfère les named exports"),
    ]
    vectors = encode(wordings)
    assert (vectors @ vectors.T)[np.triu_indices(3, 1)].max() < SAME_MEANING  # the model alone: apart
    [crystal] = crystallize("p", [said(w, f"s{n}") for n, w in enumerate(wordings)], encode)
    assert crystal.sessions == 3


def test_paraphrases_of_one_lint_rule_crystallize_and_two_rules_about_one_tool_do_not(
    encode: Callable[[Sequence[str]], np.ndarray],
) -> None:
    lint = ["always run ruff before committing", "run the linter (ruff) before you commit",
            "never commit without running ruff"]  # fmt: skip
    [crystal] = crystallize("p", [said(w, f"s{n}") for n, w in enumerate(lint)], encode)
    assert crystal.sessions == 3
    tests = [said("always run pytest with -x", s) for s in ("s1", "s2")] + [
        said("never run pytest in parallel", "s3"),
        said("always run pytest with coverage", "s3"),
    ]
    assert crystallize("p", tests, encode) == []  # one tool, three rules: none said in 3 sessions


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("utiliser des exports nommés", {("export", True), ("name", True)}),
        (
            "on utilise des named exports, pas de default",
            {("export", True), ("name", True), ("default", False)},
        ),
        ("never commit without running ruff", {("ruff", True)}),
        ("use uv instead of pip", {("uv", True), ("pip", False)}),
    ],
)
def test_a_rule_is_about_the_things_it_names_each_wanted_or_not(
    text: str, named: set[tuple[str, bool]]
) -> None:
    assert about(text) == named
