"""The signal tracker: preferences, principles and corrections in English and French, code and
wrappers skipped, normalized, once a session and at most 10; frustration and its trend."""

import pytest

from workers.dynamics.signals import (
    MAX_PER_SESSION,
    PATTERNS,
    Signal,
    normalize,
    rising,
    sentiment,
    session_signals,
    signals,
)


def found(prompt: str) -> list[tuple[str, str]]:
    return [(s.kind, s.text) for s in signals(prompt)]


def test_at_least_hora_s_34_patterns_each_named_once_of_every_kind() -> None:
    names = [name for _, name, _ in PATTERNS]
    assert len(names) >= 34 and len(set(names)) == len(names)
    assert {kind for kind, _, _ in PATTERNS} == {"preference", "principle", "correction"}
    assert {"always", "never", "i-prefer", "toujours", "jamais", "je-prefere", "no", "non"} <= set(names)


@pytest.mark.parametrize(
    ("prompt", "text"),
    [
        ("Always use uv for Python projects.", "use uv for python projects"),
        ("Never mock the database in tests.", "never mock the database in tests"),
        ("I prefer small commits with clear messages", "small commits with clear messages"),
        ("You should never push to main", "never push to main"),
        ("Don't ever push to main directly", "never push to main directly"),
        ("From now on, answer in French", "answer in french"),
        ("Toujours lancer les tests avant de pousser.", "lancer les tests avant de pousser"),
        ("Je préfère les fonctions courtes.", "les fonctions courtes"),
        ("Je prefere les fonctions courtes.", "les fonctions courtes"),
        ("Il ne faut jamais committer les secrets", "jamais committer les secrets"),
        ("Ne jamais committer les secrets", "jamais committer les secrets"),
        ("N'utilise jamais de mocks", "n'utilise jamais de mocks"),
        ("Désormais, réponds en français", "réponds en français"),
    ],
)
def test_preferences_in_english_and_french(prompt: str, text: str) -> None:
    assert found(prompt) == [("preference", text)]


@pytest.mark.parametrize(
    ("prompt", "name"),
    [
        ("Let's follow the single source of truth here", "ssot"),
        ("On applique le principe SSOT", "ssot"),
        ("Keep it DRY please, and KISS.", "dry"),
        ("We go library-first on this project", "library-first"),
        ("Approche TDD: write the test first", "tdd"),
        ("We should follow YAGNI here", "yagni"),
        ("Respect the SOLID principles", "solid"),
        ("Des fonctions pures partout", "pure-functions"),
    ],
)
def test_principles_are_named_by_their_canonical_name(prompt: str, name: str) -> None:
    assert found(prompt) == [("principle", name)]


@pytest.mark.parametrize(
    ("prompt", "text"),
    [
        ("No, use pytest instead of unittest.", "use pytest instead of unittest"),
        ("no, use pytest not unittest", "use pytest not unittest"),
        ("No, no, no. Use pytest for the tests", "use pytest for the tests"),
        ("I told you to run the linter before committing", "run the linter before committing"),
        ("I told you not to touch the schema", "not to touch the schema"),
        (
            "Stop, you are rewriting files you should not touch",
            "you are rewriting files you should not touch",
        ),
        (
            "Stop. You are rewriting files you should not touch.",
            "you are rewriting files you should not touch",
        ),
        ("Stop adding comments everywhere", "stop adding comments everywhere"),
        ("Non, il faut garder l'ancienne API", "garder l'ancienne api"),
        ("Je t'ai dit de ne pas toucher au schéma", "ne pas toucher au schéma"),
        ("Je t\u2019ai déjà dit de ne pas toucher au schéma", "ne pas toucher au schéma"),
        ("Arrête, tu casses les tests à chaque fois", "tu casses les tests à chaque fois"),
        ("Arrête de mocker la base de données", "arrête de mocker la base de données"),
        ("arrete de mocker la base de données", "arrete de mocker la base de données"),
    ],
)
def test_corrections_in_english_and_french(prompt: str, text: str) -> None:
    assert found(prompt) == [("correction", text)]


@pytest.mark.parametrize(
    "prompt",
    [
        "I never had this problem before",
        "No idea why the build fails",
        "No thanks, that's fine as is",
        "It has always been slow on CI",
        "It always fails on CI",
        "It fails and never recovers",
        "Never worked for me",
        "Never mind, it works now",
        "Stop the dev server and restart it",
        "I said I would look at it later today",
        "Do a dry run first",
        "That is a solid plan",
        "Ça ne marche toujours pas",
        "C'est toujours la même erreur",
        "Je n'ai jamais vu ça",
        "Ça n'a jamais marché",
        "Non merci",
        "What does this function do?",
    ],
)
def test_stories_and_idioms_are_not_signals(prompt: str) -> None:
    assert signals(prompt) == []


def test_a_question_states_no_preference_nor_principle() -> None:
    assert signals("Should we always use uv?") == []
    assert signals("What is SSOT?") == []
    assert found("Combien de fois je dois te le dire ?") == [
        ("correction", "combien de fois je dois te le dire")
    ]


def test_code_and_claude_codes_wrappers_are_skipped() -> None:
    assert signals("```\n# always use tabs\nnever do this\n```") == []
    assert signals("Look at this:\n```python\n# never use mocks\n") == []  # a fence left open
    assert signals("look at `always_retry = True` here") == []
    assert signals("`never use mocks`") == []
    assert signals("<system-reminder>Always answer in French.</system-reminder>") == []
    assert signals("<command-name>/review</command-name><command-args>never skip</command-args>") == []
    assert found("<command-name>/review</command-name> never skip reviews") == [
        ("preference", "never skip reviews")
    ]
    assert found("Caveat: The messages below were generated by the user. Always use uv.") == []


def test_inline_code_stays_in_the_statement_but_is_never_matched() -> None:
    [signal] = signals("- **Always** use `uv` for installs")
    assert signal == Signal("preference", "use uv for installs", "Always use `uv` for installs", "always")


def test_a_signal_is_the_sentence_holding_it_scope_kept_and_other_requests_left_out() -> None:
    [first, second] = signals(
        "Fix the parser and always run ruff before committing. In tests, never mock the DB!"
    )
    assert (first.text, first.said) == (
        "run ruff before committing",
        "Fix the parser and always run ruff before committing.",
    )
    assert (second.text, second.said) == ("in tests, never mock the db", "In tests, never mock the DB!")
    assert len(signals("Always " + "check this " * 40)[0].text) <= 200


def test_wordings_of_one_preference_normalize_alike_and_negations_stay() -> None:
    assert normalize("I think we should ALWAYS   use uv") == normalize("always use uv") == "use uv"
    assert (
        found("I think we should ALWAYS   use uv.")
        == found("Please, always use uv!")
        == [("preference", "use uv")]
    )
    assert normalize("je pense que il faut toujours tester") == "tester"
    assert normalize("Je pense qu'il faut toujours tester") == "tester"
    assert normalize("never use mocks") == "never use mocks" != normalize("use mocks")
    assert normalize("Don't ever use mocks") == normalize("you should never use mocks") == "never use mocks"
    assert normalize("il ne faut jamais utiliser de mocks") == normalize("ne jamais utiliser de mocks")
    for text in ("I think we should ALWAYS use uv!", "il faut toujours  tester.", "Never use mocks"):
        assert normalize(normalize(text)) == normalize(text)


def test_a_session_keeps_each_signal_once_with_the_prompt_that_said_it_first() -> None:
    said = [
        ("e1", "Always use uv."),
        ("e2", "ALWAYS   use uv!"),
        ("e3", "I think we should always use uv"),
        ("e4", "Never use pip."),
    ]
    assert [(event_id, signal.text) for event_id, signal in session_signals(said)] == [
        ("e1", "use uv"),
        ("e4", "never use pip"),
    ]


def test_a_session_keeps_ten_signals_at_most() -> None:
    many = [(f"e{n}", f"Always run check number {n} first") for n in range(15)]
    kept = session_signals(many)
    assert MAX_PER_SESSION == 10
    assert [event_id for event_id, _ in kept] == [f"e{n}" for n in range(10)]
    assert session_signals([("e0", "Always run check number 0 first"), *many]) == kept


def test_frustration_is_scored_from_words_capitals_and_punctuation() -> None:
    calm = sentiment("Could you add a test for the parser?")
    annoyed = sentiment("This is still not working, it's broken again")
    furious = sentiment("THIS IS STILL NOT WORKING, IT IS BROKEN AGAIN!!!")
    assert (calm, annoyed, furious) == (1.0, 2.0, 4.0)
    assert sentiment("Non, c'est encore mauvais, rien ne marche") == 3.0
    assert sentiment("NON!!! C'EST ENCORE MAUVAIS, RIEN NE MARCHE") == 5.0
    assert sentiment("wrong") == 2.0  # short and negative: concentrated


def test_frustration_grows_with_each_added_negativity() -> None:
    steps = [
        "Please look at the parser output for this case",
        "Please look at the parser output for this case, it is wrong",
        "Please look at the parser output for this case, it is wrong and broken",
        "Please look at the parser output for this case, it is wrong and broken!!!",
        "PLEASE LOOK AT THE PARSER OUTPUT FOR THIS CASE, IT IS WRONG AND BROKEN!!!",
        "PLEASE LOOK AT THE PARSER OUTPUT FOR THIS CASE, IT IS WRONG AND BROKEN!!! NON, C'EST NUL",
    ]
    # HORA's floor: a single negative word scores 1, as calm does
    assert [sentiment(prompt) for prompt in steps] == [1.0, 1.0, 2.0, 3.0, 4.0, 5.0]


def test_code_identifiers_paths_and_acronyms_are_not_a_tone() -> None:
    assert sentiment("`ERROR_CODE` in /src/app.py") == 1.0
    assert sentiment("ERROR_CODE keeps appearing in /src/app.py and lib/WRONG_THING") == 1.0
    assert sentiment("Could you add a JSON API to the SQL layer of the REST client") == 1.0
    assert sentiment("```\nassert wrong == broken  # again!!!\n```") == 1.0
    assert sentiment("none of these are anonymous, the fight against bugs") == 1.0  # words count whole


def test_the_trend_rule_wants_three_prompts_never_falling_to_three_and_a_half() -> None:
    assert rising([2.0, 3.0, 3.6])
    assert rising([1.0, 1.0, 2.0, 3.0, 4.0])
    assert rising([4.0, 4.0, 4.0])  # HORA compares with >=: sustained frustration is a trend
    assert not rising([2.0, 3.6, 3.0])  # falls
    assert not rising([5.0, 4.0, 4.0])
    assert not rising([1.0, 2.0, 3.0])  # below 3.5
    assert not rising([3.0, 4.0])  # two prompts are no trend
