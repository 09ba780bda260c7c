"""Local model2vec embedding models for llm, and the fast path graphrag uses itself.

The default model, alias ``graphrag``, is all-MiniLM-L6-v2 distilled with model2vec into
a 256-dimensional static model that ships inside this package. Other local model2vec
folders can be registered with ``llm graphrag models add PATH``.
"""

import json
import pathlib
import re
import time
from functools import lru_cache

import llm
import numpy as np

MODEL_DIR = pathlib.Path(__file__).parent / "model" / "graphrag-minilm-256"
DEFAULT_MODEL_ID = "graphrag-minilm-256"
DEFAULT_ALIAS = "graphrag"


class ModelUnavailable(Exception):
    """Raised when an embedding model cannot be loaded."""


@lru_cache(maxsize=8)
def load_static_model(path):
    """Load a model2vec ``StaticModel`` from a local folder, never from the network."""
    from model2vec import StaticModel

    folder = pathlib.Path(path)
    if not (folder / "tokenizer.json").exists():
        raise ModelUnavailable(
            f"No model2vec model in {folder}: expected config.json, tokenizer.json and "
            "model.safetensors there (rebuild the default one with "
            "scripts/build_embedding_model.py)"
        )
    # Shipped as float16 to stay small; float32 encodes about 25% faster per CPU-second.
    return StaticModel.from_pretrained(str(folder), quantize_to="float32")


# Characters: ASCII texts up to this long are tokenized word by word. An ASCII token
# covers at least one character, so they stay within model2vec's 512-token truncation.
SHORT_TEXT = 512
WORD_CACHE_LIMIT = 200_000  # words whose token ids are kept, per model
GATHER_BLOCK = 1024  # token vectors gathered at once when embedding short texts
_WORD_IDS = {}
_PIECE = re.compile(r"[A-Za-z0-9]+|[^A-Za-z0-9]")  # a printable ASCII word's pieces


@lru_cache(maxsize=8)
def _added_token_openers(path):
    """When the model's tokenizer splits words at punctuation as BERT's does, the first
    characters of its added tokens (``[`` of ``[UNK]``); None when it does not."""
    tokenizer = load_static_model(path).tokenizer
    if type(tokenizer.pre_tokenizer).__name__ != "BertPreTokenizer":
        return None
    return frozenset(token.content[:1] for token in tokenizer.get_added_tokens_decoder().values())


def unit_rows(vectors):
    """``vectors`` with every non-zero row scaled to length 1."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return vectors / norms


class Model2VecEmbeddingModel(llm.EmbeddingModel):
    """An llm embedding model backed by a local model2vec folder."""

    supports_text = True
    supports_binary = False
    batch_size = 1024

    def __init__(self, model_id, path):
        self.model_id = model_id
        self.path = str(path)

    @property
    def static_model(self):
        return load_static_model(self.path)

    @property
    def dimensions(self):
        return int(self.static_model.dim)

    def encode(self, texts):
        """Embed ``texts`` into a float32 array of unit-length rows.

        Short ASCII texts (entity names, facts, queries) take ``_encode_short``; the
        rest go to model2vec as they are.
        """
        texts = list(texts)
        model = self.static_model
        if not texts:
            return np.zeros((0, model.dim), dtype=np.float32)
        plain = model.weights is None and model.token_mapping is None
        short = [i for i, text in enumerate(texts) if plain and len(text) <= SHORT_TEXT and text.isascii()]
        if not short:
            return unit_rows(np.asarray(model.encode(texts), dtype=np.float32))
        vectors = np.zeros((len(texts), model.dim), dtype=np.float32)
        vectors[short] = self._encode_short(model, [texts[i] for i in short])
        if len(short) < len(texts):
            rest = sorted(set(range(len(texts))) - set(short))
            vectors[rest] = np.asarray(model.encode([texts[i] for i in rest]), dtype=np.float32)
        return unit_rows(vectors)

    def _encode_short(self, model, texts):
        """model2vec's mean of token vectors, tokenizing each distinct word once.

        The tokenizer splits on whitespace before anything else, so a text's tokens are
        its words' tokens in order; a run embeds the same few thousand words again and
        again, and a call per text costs more than the arithmetic.
        """
        cache = self._word_ids
        words = [text.split() for text in texts]
        # Look words up once into a local dict: another thread (Datasette's) may clear the
        # shared cache meanwhile, which then costs a tokenizer call, never a KeyError.
        distinct = {word for text in words for word in text}
        known = {}
        for word in distinct:
            ids = cache.get(word)
            if ids is not None:
                known[word] = ids
        missing = sorted(distinct - known.keys())
        if missing:
            new = self._tokenize(model, missing, cache)
            known.update(new)
            if len(cache) + len(new) > WORD_CACHE_LIMIT:
                cache.clear()
            cache.update(new)
        out = np.zeros((len(texts), model.dim), dtype=np.float32)
        embedding = model.embedding
        row = 0
        while row < len(words):
            # Token vectors of a block of texts at a time: a few hundred kilobytes that
            # malloc reuses, not a fresh array of megabytes for the kernel to clear.
            ids, spans = [], []
            while row < len(words) and len(ids) < GATHER_BLOCK:
                start = len(ids)
                for word in words[row]:
                    ids.extend(known[word])
                spans.append((row, start, len(ids)))
                row += 1
            if ids:
                vectors = embedding[ids].astype(np.float32, copy=False)
                # A slice's mean per text: several times faster than np.add.reduceat on rows.
                for text_row, start, end in spans:
                    if end > start:
                        out[text_row] = vectors[start:end].mean(axis=0)
        return out

    def _tokenize(self, model, words, cache):
        """``{word: token ids}`` for ``words`` and the pieces made of them, unknown ids dropped.

        A tokenizer that splits words at punctuation (BERT's) gives a printable ASCII word
        its pieces' ids: ``json.dumps()`` is ``json``, ``.``, ``dumps``, ``(``, ``)``. Pieces
        repeat far more often than words, so few of them reach the tokenizer.
        """
        openers = _added_token_openers(self.path)
        pieces_of = {}
        if openers is not None:
            for word in words:
                if word.isprintable() and not openers.intersection(word):
                    pieces = _PIECE.findall(word)
                    if len(pieces) > 1:
                        pieces_of[word] = pieces
        cached = {}  # looked up once: another thread may clear the cache meanwhile
        wanted = {word for word in words if word not in pieces_of}
        for piece in {p for pieces in pieces_of.values() for p in pieces}:
            piece_ids = cache.get(piece)
            if piece_ids is None:
                wanted.add(piece)
            else:
                cached[piece] = piece_ids
        wanted = sorted(wanted)
        unk = model.unk_token_id
        encodings = model.tokenizer.encode_batch_fast(wanted, add_special_tokens=False)
        ids = {word: [i for i in e.ids if i != unk] for word, e in zip(wanted, encodings)}
        cached.update(ids)
        for word, pieces in pieces_of.items():
            ids[word] = [i for p in pieces for i in cached[p]]
        return ids

    @property
    def _word_ids(self):
        return _WORD_IDS.setdefault(self.path, {})

    def embed_batch(self, items):
        for row in self.encode(items):
            yield row.tolist()


def user_models_path():
    return llm.user_dir() / "graphrag-models.json"


def registered_models():
    """Mapping of model id to folder for user-registered model2vec models."""
    path = user_models_path()
    if not path.exists():
        return {}
    return json.loads(path.read_text())


def add_model(folder, model_id=None):
    """Register a local model2vec folder with llm as ``model2vec/<name>``."""
    folder = pathlib.Path(folder).resolve()
    load_static_model(str(folder))  # fails clearly when the folder is not a model
    model_id = model_id or f"model2vec/{folder.name}"
    models = registered_models()
    models[model_id] = str(folder)
    path = user_models_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(models, indent=2))
    return model_id


def all_models():
    """Yield ``(model, aliases)`` for every model2vec model graphrag provides."""
    yield Model2VecEmbeddingModel(DEFAULT_MODEL_ID, MODEL_DIR), (DEFAULT_ALIAS,)
    for model_id, folder in registered_models().items():
        yield Model2VecEmbeddingModel(model_id, folder), ()


class Embedder:
    """Embeds text into unit float32 vectors with the database's configured model."""

    def __init__(self, model):
        self.model = model
        self.model_id = model.model_id

    @property
    def local(self):
        """Whether the model runs here (model2vec), not through a client of some service."""
        return isinstance(self.model, Model2VecEmbeddingModel)

    @property
    def dimensions(self):
        if self.local:
            return self.model.dimensions
        return len(self.encode(["dimensions"])[0])

    def encode(self, texts):
        texts = list(texts)
        if self.local:
            return self.model.encode(texts)
        vectors = np.asarray(list(self.model.embed_multi(texts)), dtype=np.float32)
        if not len(vectors):
            return np.zeros((0, 0), dtype=np.float32)
        return unit_rows(vectors)


def get_embedder(model_id=None):
    """The embedder for an llm model id or alias (default: the bundled ``graphrag``)."""
    model_id = model_id or DEFAULT_ALIAS
    if model_id in (DEFAULT_ALIAS, DEFAULT_MODEL_ID):
        return Embedder(Model2VecEmbeddingModel(DEFAULT_MODEL_ID, MODEL_DIR))
    try:
        return Embedder(llm.get_embedding_model(model_id))
    except llm.UnknownModelError as ex:
        raise ModelUnavailable(
            f"Unknown embedding model {model_id!r}: see 'llm embed-models' for the models "
            "installed, or register a model2vec folder with 'llm graphrag models add PATH'"
        ) from ex


def embedder_for(db):
    """The embedder a graphrag database was created with."""
    from .schema import get_setting

    return get_embedder(get_setting(db, "embedding_model"))


def collection_id(db, name):
    row = db.execute("select id from collections where name = ?", [name]).fetchone()
    return row[0]


def write_embeddings(db, collection, ids, vectors, texts=None):
    """Write vectors into llm's ``embeddings`` table and the collection's vec0 index.

    Call inside the caller's transaction. ``texts`` (optional) only feeds the content hash.
    A trigger copies the rows into vec0; while a bulk extraction has it suspended, this
    writes them there itself, which costs a third less than the trigger's statement.
    """
    from .schema import VECTOR_INDEXES, VECTOR_INSERT_TRIGGER, has_trigger

    cid = collection_id(db, collection)
    now = int(time.time())
    vectors = np.asarray(vectors, dtype="<f4")
    # bytearray, not bytes: sqlite3 binds it without looking for an adapter first,
    # which took longer than writing the row's kilobyte.
    blobs = [bytearray(vector) for vector in vectors]
    rows = [
        (
            cid,
            str(ident),
            blobs[i],
            bytearray(llm.Collection.content_hash(texts[i])) if texts is not None else None,
            now,
        )
        for i, ident in enumerate(ids)
    ]
    mirror = collection in VECTOR_INDEXES and not has_trigger(db, VECTOR_INSERT_TRIGGER + collection)
    if mirror:
        table, pk, _ = VECTOR_INDEXES[collection]
        # vec0 has no upsert: first remove the vectors that these rows replace.
        replaced = _stored_ids(db, cid, [row[1] for row in rows])
        db.conn.executemany(f"delete from {table} where {pk} = ?", [(int(ident),) for ident in replaced])
    db.conn.executemany(
        "insert or replace into embeddings (collection_id, id, embedding, content_hash, updated) "
        "values (?, ?, ?, ?, ?)",
        rows,
    )
    if mirror:
        db.conn.executemany(
            f"insert into {table} ({pk}, embedding) values (?, ?)",
            [(int(ident), blob) for ident, blob in zip(ids, blobs)],
        )


def _stored_ids(db, cid, ids):
    """Those of ``ids`` (strings) that the collection ``cid`` has rows for."""
    # One statement for any number of ids: a list of marks per length would fill the
    # connection's statement cache.
    return [
        ident
        for (ident,) in db.execute(
            "select id from embeddings where collection_id = ? and id in (select value from json_each(?))",
            [cid, json.dumps(ids)],
        )
    ]


def to_blob(vector):
    """A vector as the little-endian float32 blob llm and sqlite-vec both read."""
    return np.asarray(vector, dtype="<f4").tobytes()


PRELUDE_WEIGHT = 0.3
EMBED_BATCH = 256  # chunks embedded per call; encoding has a fixed cost per call


def chunk_vectors(embedder, chunks):
    """Unit vectors of chunk text plus ``PRELUDE_WEIGHT`` times the prelude's vector.

    Embedding the prelude with the text drowns short chunks in their path and headings
    (QASC R@10 any for vector search falls from 0.90 to 0.77); a lighter prelude keeps
    the context without the noise.
    """
    preludes = sorted({chunk.prelude for chunk in chunks} - {""})
    inputs = [chunk.text for chunk in chunks] + preludes
    # One call per EMBED_BATCH texts: the tokenizer's working memory grows with a call's
    # text (one call for a 5 MB file's 1,940 chunks took 600 MB).
    if len(inputs) <= EMBED_BATCH:
        encoded = embedder.encode(inputs)
    else:
        encoded = np.concatenate(
            [embedder.encode(inputs[i : i + EMBED_BATCH]) for i in range(0, len(inputs), EMBED_BATCH)]
        )
    texts = encoded[: len(chunks)]
    if not preludes:
        return texts
    prelude_vectors = dict(zip(preludes, encoded[len(chunks) :]))
    prelude_vectors[""] = np.zeros(texts.shape[1], dtype=texts.dtype)
    return unit_rows(
        texts + PRELUDE_WEIGHT * np.stack([prelude_vectors[c.prelude] for c in chunks])
    )
