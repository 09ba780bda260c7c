import pathlib

import numpy as np
import pytest

from llm_graphrag import embeddings
from llm_graphrag.embeddings import MODEL_DIR, Model2VecEmbeddingModel, unit_rows

SAMPLE = pathlib.Path(__file__).parent.parent / "sample-corpus"
ODD = [
    "",
    "   ",
    "[MASK] and [CLS] are special tokens",
    "x[SEP]y",
    "[UNK] and [PAD] are this tokenizer's added tokens",  # never split into pieces
    "x[PAD]y (see [UNK]).",
    "tabs\tand\nnewlines",
    "UPPER lower MiXeD",
    "snake_case_name dotted.api.call() --flag=value",
    "café, naïve and 東京 take model2vec's own path",
    "\x01control\x02characters",
    "a" * 150 + " a word longer than the tokenizer's 100 characters",
    "Python 3.11.7, RFC 7159, uuid4()",
    "long " * 60,
    "longer " * 100,  # over SHORT_TEXT: model2vec's own path
    "x" * 511,
    "!" * 512,  # a token per character, just within model2vec's 512-token truncation
]


def _texts():
    lines = []
    for path in sorted(SAMPLE.rglob("*.*")):
        lines.extend(line[:600] for line in path.read_text().splitlines() if line.strip())
    return lines + ODD


def _reference(model, texts):
    return unit_rows(np.asarray(model.static_model.encode(texts), dtype=np.float32))


def test_short_texts_embed_as_model2vec_does():
    model = Model2VecEmbeddingModel("graphrag-minilm-256", MODEL_DIR)
    texts = _texts()
    assert sum(len(t) <= embeddings.SHORT_TEXT and t.isascii() for t in texts) > 500
    assert np.abs(model.encode(texts) - _reference(model, texts)).max() < 1e-6
    # Once more, from the word cache this time.
    assert np.abs(model.encode(texts[::-1]) - _reference(model, texts[::-1])).max() < 1e-6


def test_word_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(embeddings, "WORD_CACHE_LIMIT", 50)
    monkeypatch.setattr(embeddings, "_WORD_IDS", {})
    model = Model2VecEmbeddingModel("graphrag-minilm-256", MODEL_DIR)
    texts = _texts()
    for start in range(0, 200, 20):
        batch = texts[start : start + 20]
        assert np.abs(model.encode(batch) - _reference(model, batch)).max() < 1e-6
        words = {w for t in batch for w in t.split()}
        pieces = {p for w in words for p in embeddings._PIECE.findall(w)}
        assert len(model._word_ids) <= max(50, len(words | pieces))


@pytest.mark.parametrize("texts", [[], [""], ["", "word"]])
def test_empty_inputs(texts):
    model = Model2VecEmbeddingModel("graphrag-minilm-256", MODEL_DIR)
    vectors = model.encode(texts)
    assert vectors.shape == (len(texts), 256)
    assert [bool(np.any(row)) for row in vectors] == [bool(t) for t in texts]
