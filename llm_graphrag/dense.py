"""Dense chunk vectors: a second vector per chunk from the MiniLM transformer (optional).

``embed_chunks`` computes the vectors of the chunks that lack one into llm's
``embeddings`` table, collection ``chunks_dense``, and records the model in the setting
``dense_model``; from then on ingest keeps them up to date and every retrieval mode's
vector search (``vector``, ``hybrid``, ``graph``) uses them instead of the static model's,
with the question encoded by the same transformer (``dense_search``). The static vectors
stay: entities, facts and the graph's candidate fit still use them.
"""

import collections
import json
import threading

import numpy as np

from .db import read_setting
from .minilm import one_blas_thread

COLLECTION = "chunks_dense"
SETTING = "dense_model"
CLEANUP_TRIGGER = "chunks_dense_embedding_cleanup"
BATCH = 64  # chunks encoded and committed at a time


class _Chunk:
    """What ``embeddings.chunk_vectors`` reads of a chunk."""

    __slots__ = ("text", "prelude")

    def __init__(self, text, prelude):
        self.text = text
        self.prelude = prelude or ""


def dense_model(conn):
    """The model id of ``conn``'s dense chunk vectors, or None when it has none."""
    return read_setting(conn, SETTING)


def _ensure_collection(db):
    from .minilm import MODEL_ID

    db.execute("insert or ignore into collections (name, model) values (?, ?)", [COLLECTION, MODEL_ID])


def _ensure_cleanup(db):
    """Delete a chunk's dense vector with the chunk, as ``chunks_embedding_cleanup`` does
    for its static one."""
    db.execute(
        f"""CREATE TRIGGER IF NOT EXISTS {CLEANUP_TRIGGER} AFTER DELETE ON chunks BEGIN
          DELETE FROM embeddings WHERE collection_id =
            (SELECT id FROM collections WHERE name = '{COLLECTION}') AND id = CAST(OLD.id AS TEXT);
        END"""
    )


def missing_chunks(db):
    """Ids of the chunks without a dense vector, in id order."""
    return [
        row[0]
        for row in db.execute(
            "select id from chunks where cast(id as text) not in (select id from embeddings "
            "where collection_id = (select id from collections where name = ?)) order by id",
            [COLLECTION],
        )
    ]


def embed_chunks(db, progress=None, batch=BATCH, workers=None, missing=None):
    """Give every chunk of ``db`` (a ``sqlite_utils.Database``) its dense vector.

    Chunks that have one are skipped (``missing``: their ids if the caller has them
    already, from ``missing_chunks``), so an interrupted run goes on where it stopped
    (each batch is committed). Batches are encoded in ``workers`` forked processes
    (default: one per CPU for runs of two batches or more; 0: here) while this one
    writes. ``progress(n)`` is told each batch's size. Returns ``{"embedded": n,
    "chunks": total, "model": id}``.
    """
    from .embeddings import write_embeddings
    from .minilm import MODEL_ID, load_transformer
    from .parallel import ordered_map, worker_count
    from .schema import set_setting

    load_transformer()  # fails with the install hint before anything is written; workers inherit it
    with db.conn:
        _ensure_collection(db)
        _ensure_cleanup(db)
        set_setting(db, SETTING, MODEL_ID)
    ids = missing_chunks(db) if missing is None else missing
    batches = [ids[start : start + batch] for start in range(0, len(ids), batch)]

    def rows():
        for part in batches:
            yield db.execute(
                "select id, content, prelude from chunks where id in (select value from json_each(?))",
                [json.dumps(part)],
            ).fetchall()

    embedded = 0
    for chunk_ids, vectors in ordered_map(_encode_rows, rows(), worker_count(workers, len(batches), least=2)):
        if chunk_ids:
            with db.conn:
                write_embeddings(db, COLLECTION, chunk_ids, vectors)
            embedded += len(chunk_ids)
        if progress:
            progress(len(chunk_ids))
    total = db.execute("select count(*) from chunks").fetchone()[0]
    return {"embedded": embedded, "chunks": total, "model": MODEL_ID}


def _encode_rows(rows):
    """``(chunk ids, dense vectors)`` of ``(id, content, prelude)`` rows: the text plus
    ``PRELUDE_WEIGHT`` times the prelude, as the static chunk vectors are made."""
    from .embeddings import chunk_vectors
    from .minilm import load_transformer

    if not rows:
        return [], []
    chunks = [_Chunk(content, prelude) for _, content, prelude in rows]
    return [row[0] for row in rows], chunk_vectors(load_transformer(), chunks)


def forget_dense(db, chunk_ids):
    """Delete the dense vectors of ``chunk_ids`` (their text or prelude changed)."""
    db.conn.execute(
        "delete from embeddings where collection_id = (select id from collections where name = ?) "
        "and id in (select cast(value as text) from json_each(?))",
        [COLLECTION, json.dumps(list(chunk_ids))],
    )


def drop_dense(db):
    """Delete ``db``'s dense vectors and the setting: searches use the static ones again.
    Returns ``{"dropped": n}``."""
    with db.conn:
        dropped = db.execute(
            "delete from embeddings where collection_id = (select id from collections where name = ?)",
            [COLLECTION],
        ).rowcount
        db.execute("delete from collections where name = ?", [COLLECTION])
        db.execute("delete from graphrag_settings where key = ?", [SETTING])
        db.execute(f"drop trigger if exists {CLEANUP_TRIGGER}")
    return {"dropped": max(dropped, 0)}


class DenseIndex:
    """A database's dense chunk vectors as one float32 matrix, for exact cosine search."""

    def __init__(self, ids, matrix, complete=True):
        self.ids = np.asarray(ids, dtype=np.int64)
        self.matrix = matrix
        self.complete = complete  # every chunk has its vector

    @classmethod
    def from_db(cls, conn):
        rows = conn.execute(
            "select cast(id as integer), embedding from embeddings where collection_id = "
            "(select id from collections where name = ?) order by cast(id as integer)",
            [COLLECTION],
        ).fetchall()
        chunks = conn.execute("select count(*) from chunks").fetchone()[0]
        if not rows:
            return cls([], np.zeros((0, 0), dtype=np.float32), complete=not chunks)
        matrix = np.frombuffer(b"".join(row[1] for row in rows), dtype="<f4").reshape(len(rows), -1)
        return cls([row[0] for row in rows], matrix, complete=len(rows) >= chunks)

    def __len__(self):
        return len(self.ids)

    def search(self, vector, k):
        """``[(chunk id, cosine distance)]`` of the ``k`` nearest rows, nearest first
        (ties: the lower id first)."""
        if not len(self.ids) or k < 1:
            return []
        with one_blas_thread():  # one product: waking a second thread costs more
            similarity = self.matrix @ np.asarray(vector, dtype=np.float32)
        k = min(k, len(similarity))
        top = np.argpartition(-similarity, k - 1)[:k]
        top = top[np.lexsort((self.ids[top], -similarity[top]))]
        return [(int(self.ids[i]), float(1.0 - similarity[i])) for i in top]


class DenseIndexCache:
    """The ``DenseIndex`` of recently queried database files. An entry is valid while its
    collection's row count and highest rowid are unchanged: writing a vector (``insert or
    replace`` gives it a new rowid) or deleting one changes them."""

    def __init__(self, size=4):
        self.size = size
        self._entries = collections.OrderedDict()  # file -> (stamp, index)
        self._lock = threading.Lock()

    def get(self, conn):
        file = conn.execute("select file from pragma_database_list where name = 'main'").fetchone()[0]
        if not file:  # in memory: nothing to share with another connection
            return DenseIndex.from_db(conn)
        stamp = conn.execute(
            "select count(*), max(rowid), (select max(id) from chunks) from embeddings "
            "where collection_id = (select id from collections where name = ?)",
            [COLLECTION],
        ).fetchone()
        with self._lock:
            entry = self._entries.get(file)
            if entry is not None and entry[0] == stamp:
                self._entries.move_to_end(file)
                return entry[1]
        index = DenseIndex.from_db(conn)
        with self._lock:
            self._entries[file] = (stamp, index)
            self._entries.move_to_end(file)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        return index


DENSE_INDEXES = DenseIndexCache()


def dense_search(conn, question, k):
    """``[(chunk id, cosine distance)]`` of the ``k`` chunks whose dense vectors are
    nearest ``question`` (a text), or None when ``conn``'s database has no dense vectors,
    some chunks lack theirs, or the transformer is not installed here (the caller then
    searches the static vectors, which every chunk has)."""
    from .minilm import available, load_transformer

    if not dense_model(conn) or not available():
        return None
    index = DENSE_INDEXES.get(conn)
    if not len(index) or not index.complete:  # chunks ingested without the transformer
        return None
    vector = load_transformer().encode([question])[0]
    return index.search(vector, k)
