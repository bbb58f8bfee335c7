"""The real embedding model, remembering what it encoded: tests that embed the same transcripts
again and again (each in a fresh data directory) pay the model once per session, not 6 s each
on two cores. What it returns is what the model returned."""

import numpy as np

from projections.embedding_model import Encoder, Matrix, load_encoder


class _Remembering:
    def __init__(self, encoder: Encoder) -> None:
        self.encoder = encoder
        self.dim = encoder.dim
        self.known: dict[str, Matrix] = {}

    def encode(self, texts: list[str]) -> Matrix:
        if missing := [t for t in dict.fromkeys(texts) if t not in self.known]:
            self.known.update(zip(missing, self.encoder.encode(missing), strict=True))
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32)
        return np.stack([self.known[t] for t in texts])


def remembering_encoder() -> Encoder:
    """The default model, each text encoded once."""
    encoder = load_encoder()
    return Encoder(_Remembering(encoder), encoder.name)
