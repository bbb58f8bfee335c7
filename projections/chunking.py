"""Cutting long memory texts into pieces an embedding model reads whole.

all-MiniLM-L6-v2 reads 256 word pieces and ignores the rest: about 1,000 characters of English
prose, fewer of code. A long assistant message is cut at the strongest boundary that keeps each
piece under the limit: paragraphs, then lines, then sentences, then words, and only then
anywhere. Neighbouring small pieces are packed back together, so short texts stay one chunk.
"""

import re

MAX_CHARS = 800
# strongest first; each splits after its separator, so the pieces put together are the text
_BOUNDARIES = tuple(re.compile(p) for p in (r"(?<=\n\n)", r"(?<=\n)", r"(?<=[.!?;:]\s)", r"(?<=\s)"))


def chunk(text: str, max_chars: int = MAX_CHARS) -> list[str]:
    """`text` cut into pieces of at most `max_chars` characters, blank pieces dropped."""
    pieces = _split(text.strip(), max_chars, 0)
    return [p for p in (piece.strip() for piece in _pack(pieces, max_chars)) if p]


def _split(text: str, max_chars: int, level: int) -> list[str]:
    if len(text) <= max_chars:
        return [text]
    if level == len(_BOUNDARIES):
        return [text[i : i + max_chars] for i in range(0, len(text), max_chars)]
    parts = [p for p in _BOUNDARIES[level].split(text) if p]
    if len(parts) == 1:
        return _split(text, max_chars, level + 1)
    return [piece for part in parts for piece in _split(part, max_chars, level + 1)]


def _pack(pieces: list[str], max_chars: int) -> list[str]:
    packed: list[str] = []
    for piece in pieces:
        if packed and len(packed[-1]) + len(piece) <= max_chars:
            packed[-1] += piece
        else:
            packed.append(piece)
    return packed
