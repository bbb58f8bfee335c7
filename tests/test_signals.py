"""The signal tracker: preferences, principles and corrections in English and French, code and
wrappers skipped, normalized, once a session and at most 10; frustration and its trend."""

from workers.dynamics.signals import (
    MAX_PER_SESSION,
    PATTERNS,
    normalize,
    rising,
    sentiment,
    session_signals,
    signals,
    weight,
)


def kinds_and_texts(prompt: str) -> list[tuple[str, str]]:
    return [(s.kind, s.text) for s in signals(prompt)]


def test_at_least_hora_s_34_patterns_each_named_once() -> None:
    names = [name for _, name, _ in PATTERNS]
    assert len(names) >= 34 and len(set(names)) == len(names)


def test_preferences_in_english_and_french() -> None:
    assert kinds_and_texts("Always use uv for Python projects.") == [
        ("preference", "use uv for python projects")
    ]
    assert kinds_and_texts("Never mock the database in tests.") == [
        ("preference", "never mock the database in tests")
    ]
    assert kinds_and_texts("I prefer small commits with clear messages") == [
        ("preference", "small commits with clear messages")
    ]
    assert kinds_and_texts("Toujours lancer les tests avant de pousser.") == [
        ("preference", "lancer les tests avant de pousser")
    ]
    assert kinds_and_texts("Je préfère les fonctions courtes.") == [("preference", "les fonctions courtes")]
    assert kinds_and_texts("Il ne faut jamais committer les secrets") == [
        ("preference", "il ne faut jamais committer les secrets")
    ]


def test_principles_are_named_by_their_canonical_name() -> None:
    assert kinds_and_texts("Let's follow the single source of truth here") == [("principle", "ssot")]
    assert kinds_and_texts("Keep it DRY please, and KISS.") == [("principle", "dry")]
    assert kinds_and_texts("We go library-first on this project") == [("principle", "library-first")]
    assert kinds_and_texts("Approche TDD: write the test first") == [("principle", "tdd")]


def test_corrections_in_english_and_french() -> None:
    assert kinds_and_texts("No, use pytest instead of unittest.") == [
        ("correction", "use pytest instead of unittest")
    ]
    assert kinds_and_texts("I told you to run the linter before committing") == [
        ("correction", "run the linter before committing")
    ]
    assert kinds_and_texts("Stop, you are rewriting files you should not touch") == [
        ("correction", "you are rewriting files you should not touch")
    ]
    assert kinds_and_texts("Non, il faut garder l'ancienne API") == [("correction", "garder l'ancienne api")]
    assert kinds_and_texts("Je t'ai dit de ne pas toucher au schéma") == [
        ("correction", "ne pas toucher au schéma")
    ]
    assert kinds_and_texts("Arrête, tu casses les tests à chaque fois") == [
        ("correction", "tu casses les tests à chaque fois")
    ]
    assert weight("correction") == 1.5 and weight("preference") == 1.0


def test_stories_and_idioms_are_not_signals() -> None:
    for prompt in (
        "I never had this problem before",
        "No idea why the build fails",
        "It has always been slow on CI",
        "What does this function do?",
    ):
        assert signals(prompt) == [], prompt


def test_code_and_claude_codes_wrappers_are_skipped() -> None:
    assert signals("```\n# always use tabs\nnever do this\n```") == []
    assert signals("look at `always_retry = True` here") == []
    assert signals("<system-reminder>Always answer in French.</system-reminder>") == []
    assert signals("<command-name>/review</command-name> never skip reviews") == [
        *signals("never skip reviews")
    ]


def test_wordings_of_one_preference_normalize_alike_and_negations_stay() -> None:
    alike = {
        normalize(s.text)
        for prompt in (
            "I think we should ALWAYS   use uv.",
            "always use uv",
            "Please, always use uv!",
        )
        for s in signals(prompt)
    }
    assert alike == {"use uv"}  # and normalizing again changes nothing
    assert normalize("je pense que il faut toujours tester") == "tester"
    assert normalize("never use mocks") != normalize("use mocks")


def test_a_session_keeps_each_signal_once_and_ten_at_most() -> None:
    said = [("e1", "Always use uv."), ("e2", "ALWAYS use uv!"), ("e3", "always  use uv")]
    [(event_id, signal)] = session_signals(said)
    assert (event_id, signal.text) == ("e1", "use uv")
    many = [(f"e{n}", f"Always run check number {n} first") for n in range(15)]
    kept = session_signals(many)
    assert len(kept) == MAX_PER_SESSION and [e for e, _ in kept] == [f"e{n}" for n in range(10)]


def test_frustration_is_scored_from_words_capitals_and_punctuation() -> None:
    calm = sentiment("Could you add a test for the parser?")
    annoyed = sentiment("This is still not working, it's broken again")
    furious = sentiment("THIS IS STILL NOT WORKING, IT IS BROKEN AGAIN!!!")
    french = sentiment("Non, c'est encore mauvais, rien ne marche")
    assert calm == 1.0 and 1.0 < annoyed < furious <= 5.0 and french >= 3.0
    assert sentiment("`ERROR_CODE` in /src/app.py") == 1.0  # identifiers and paths are not a tone


def test_the_trend_rule_wants_three_rising_prompts_reaching_three_and_a_half() -> None:
    assert rising([2.0, 3.0, 4.0])
    assert rising([1.0, 2.0, 3.0, 4.0])
    assert not rising([2.0, 4.0, 3.0])  # not monotonic
    assert not rising([1.0, 2.0, 3.0])  # below 3.5
    assert not rising([4.0, 4.0, 4.0])  # flat is not rising
    assert not rising([3.0, 4.0])  # two prompts are no trend
