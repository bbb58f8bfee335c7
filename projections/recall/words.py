"""The words full-text search counts: lower case, split on anything that is not a letter or a
digit (so `otel.yaml` and `ERR_PORT` are two words each), stop words left out, the rest
stemmed (Snowball's English stemmer: "recalled" and "recalls" are one word).

The one tokenizer of memory: recall's BM25, and every comparison of two texts' words (whether
two facts say the same, two results repeat each other, a line of an injected memory is already
said), through `word_set`, `jaccard` and `covered`. A comparison keeps what BM25's stop words
drop but meaning turns on: the negations (`NEGATIONS`), so "never use pip" is not "always use
pip".

On LoCoMo's development split these words with BM25's k1 = 0.9 and b = 0.4 gave 2.3 points of
R@5 more than LanceDB's full-text search (k1 = 1.2 and b = 0.75, which it does not let one set).
"""

import functools
import importlib.util
import os
import re
import threading
from collections.abc import Hashable
from typing import TypeVar

import Stemmer


def _english_stop_words() -> frozenset[str]:
    """scikit-learn's English stop words (the Glasgow IR group's list), read from the one module
    of it that holds them: importing scikit-learn for them cost every process that reads words
    0.57 s and 75 MB (measured in the recall service, issue 23). Should a release move that
    module, they come the public way, at that cost."""
    try:
        package = importlib.util.find_spec("sklearn")  # found, not imported
        folder = os.path.dirname(package.origin)  # type: ignore[union-attr,arg-type]
        path = os.path.join(folder, "feature_extraction", "_stop_words.py")
        spec = importlib.util.spec_from_file_location("_reverie_stop_words", path)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        return frozenset(module.ENGLISH_STOP_WORDS)
    except (AttributeError, ImportError, OSError, TypeError):
        from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

        return frozenset(ENGLISH_STOP_WORDS)


ENGLISH_STOP_WORDS = _english_stop_words()

_WORD = re.compile(r"[^\W_]+")
_CAMEL = re.compile(r"[a-z0-9][A-Z]|[A-Z]{2}[a-z]")  # a lower case letter or digit before a capital, or ABCd
_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
# what conversation adds to scikit-learn's stop words: the ends of contractions ("didn't" is
# "didn" and "t"), the forms of "do", fillers; and French's most frequent words
_SPOKEN = "d ll m re s t ve did didn does doesn doing don gonna hey just like lol oh really wow yeah"
_FRENCH = """
    au aux ce ces cette dans de des du elle en est et il ils je la le les ma mes mon nous par pas
    pour qu que qui quoi sa se ses son sur tu un une vous"""
STOP_WORDS = frozenset(ENGLISH_STOP_WORDS | set(_SPOKEN.split()) | set(_FRENCH.split()))
# The words that turn what follows against it, in English and French, as `tokens` reads them:
# "don't" is "don" and "t", "n'utilise" is "n" and "utilise", so the "t" of every "n't" is one.
NEGATIONS = frozenset([
    "never", "not", "no", "t", "dont", "cannot", "nor", "without", "avoid", "stop",
    "jamais", "pas", "ne", "n", "sans", "aucun", "aucune", "évite", "évitez", "éviter",
])  # fmt: skip
_stemmers = threading.local()  # a Stemmer is not to be shared between threads
Word = TypeVar("Word", bound=Hashable)  # a word, or what is said of one


def tokens(text: str) -> list[str]:
    """`text`'s words as they are, in order: lower case, split at anything not a letter or a digit;
    a name from code written in camel case (`OtelTraceHelpers`, `parseJSON`) is itself and then
    its parts, so "the trace helpers" finds it."""
    found = []
    for word in _WORD.findall(text):
        found.append(word.lower())
        if _CAMEL.search(word):
            found += [part.lower() for part in _PARTS.findall(word)]
    return found


def terms(text: str) -> list[str]:
    """The words of `text` that full-text search counts, stemmed, in order."""
    stemmer = getattr(_stemmers, "english", None)
    if stemmer is None:
        stemmer = _stemmers.english = Stemmer.Stemmer("english")
    words: list[str] = stemmer.stemWords([w for w in tokens(text) if w not in STOP_WORDS])
    return words


@functools.lru_cache(maxsize=4096)
def word_set(text: str) -> frozenset[str]:
    """The distinct words of `text`, as `terms` reads them, and the negations it holds. The last
    few thousand are kept: a recall compares each of its ~200 candidates with the prompt, and
    its block compares them again (3.7 ms a prompt at 100k memories, tokenizing each time)."""
    return frozenset(terms(text)) | NEGATIONS.intersection(tokens(text))


def jaccard(a: frozenset[Word], b: frozenset[Word]) -> float:
    """How alike two texts' words are: shared over all (1.0 for two texts without words)."""
    return len(a & b) / len(a | b) if a or b else 1.0


def covered(words: frozenset[str], by: frozenset[str]) -> float:
    """The share of `words` that `by` holds too (1.0 for no words: nothing new)."""
    return len(words & by) / len(words) if words else 1.0
