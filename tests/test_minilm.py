"""The default model in NumPy gives the vectors sentence-transformers gives, from the same wheel."""

import numpy as np
import pytest

from benchmarks.common import locomo_turns
from projections.embedding_model import default_model_folder, load_encoder
from projections.minilm import MAX_TOKENS, MiniLM

TEXTS = [
    "how do we run the tests?",
    "",
    "Use pnpm, never npm: the lockfile is pnpm-lock.yaml",
    "héllo wörld, 世界 🙂 — naïve café",
    "TypeError: generate is not a function\n    at build (/app/src/index.ts:12:7)",
    "word " * (3 * MAX_TOKENS),  # cut at MAX_TOKENS tokens, as sentence-transformers cuts it
]


@pytest.fixture(scope="module")
def reference() -> object:
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(default_model_folder(), device="cpu")


def test_its_vectors_are_sentence_transformers(reference: object) -> None:
    texts = TEXTS + locomo_turns()[:200]
    ours = MiniLM(default_model_folder()).encode(texts)
    theirs = reference.encode(texts, normalize_embeddings=True, convert_to_numpy=True)  # type: ignore[attr-defined]
    assert ours.dtype == np.float32 and ours.shape == (len(texts), 384)
    assert np.abs(ours - theirs).max() < 1e-5
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


def test_a_text_gets_the_same_vector_alone_or_in_any_batch() -> None:
    model = MiniLM(default_model_folder())
    together = model.encode(TEXTS)
    alone = np.stack([model.encode([text])[0] for text in TEXTS])
    backwards = model.encode(TEXTS[::-1])[::-1]
    assert np.abs(together - alone).max() < 1e-5
    assert np.abs(together - backwards).max() < 1e-5


def test_the_default_encoder_loads_no_torch() -> None:
    import subprocess
    import sys

    code = (
        "import sys; from projections.embedding_model import load_encoder; load_encoder().encode(['x']); "
        "print('torch' in sys.modules, 'sentence_transformers' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False"]
    assert load_encoder().dim == 384
