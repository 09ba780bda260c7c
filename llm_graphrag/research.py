"""Deep research (seed 000): a question split into sub-queries that run in parallel, their
chunks merged into one ranked list, and multi-hop evidence chains along relations.

``research(db, q, options, model=None)`` runs them; ``research_run.deep_research`` is the
engine behind the ``deep_research`` tool and ``llm graphrag research``, and with
``run_dir`` it also writes seed 002's run directory.

Decomposition is heuristic unless an llm model is named. The question is split at
coordinating conjunctions and at the relational phrases relation extraction uses
(``relations``: "depends on", "is part of", ...; not the bare copula), and each pair of
the entities it names (1-3 word spans whose blocking key is an entity's ``norm``; the
most specific three) becomes a sub-query. With a model, the model writes them.

Each sub-query runs ``hybrid_query`` (graph mode) in its own thread on its own connection
to the database file, under ``timeout_ms``: its SQLite work is interrupted at the
deadline, and one without an answer by then counts as timed out. Results are chunks,
deduplicated: a chunk's score is the sum of its scores in the sub-queries that found it;
its source is ``direct`` when, in one of them, keyword and vector search gave it more of
its score than graph bridges (``relevance`` over ``bridge``), else ``graph``, with the
fewest hops of the bridges that reached it.

Evidence chains start at the entities a sub-query names and follow relations from
``src`` to ``dst`` for 2 to ``max_hops`` hops, to an entity the question names or one
mentioned in the sub-query's results; a hop deeper only while the entities reached stay
few (``FRONTIER``: past hubs the next hop reaches most of the graph). An edge's weight is its relation's confidence (the
best of its evidence, in [0, 1]); among the shortest paths to an entity, bfsvtab gives the
one with the greatest product of weights, and that product is the chain's
``total_weight``. Chains that reach an entity of the question rank first, then by weight.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import re
import threading
import time
from dataclasses import dataclass, field

from .db import BUSY_TIMEOUT_MS, load_extensions, sqlite3
from .fulltext import query_words
from .graph import lookup_norms
from .retrieval import RetrievalOptions, connection_embedder, hybrid_query
from .retrieval_log import database_file

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_NGRAM = 3
# Coordinating conjunctions and clause separators a question is split at.
_CONJUNCTION = re.compile(
    r"\s*(?:[;,]|\b(?:and|or|but|versus|vs\.?|whereas|while|as well as|along with|"
    r"together with|compared (?:to|with))\b)\s*",
    re.IGNORECASE,
)
# Relations whose patterns are the copula ("is a", "are"): in a question they relate nothing.
_COPULA_RELATIONS = frozenset({"is_a", "same_as"})
_LIST_MARK = re.compile(r"^\s*(?:[-*•]|\d+[.)]|Q\d+[:.])\s*")
_PROGRESS_STEPS = 1000  # SQLite instructions between two deadline checks
FRONTIER = 500  # chains go a hop deeper from a seed while it reaches at most this many

DECOMPOSE_PROMPT = (
    "Split this research question into at most {n} short search queries that together "
    "cover what is needed to answer it. Write one query per line and nothing else.\n\n"
    "Question: {q}"
)


class ResearchError(Exception):
    """A research request that cannot run (bad options, unknown model); says what to do."""


@dataclass
class ResearchOptions:
    """Parameters of one ``deep_research`` call."""

    k: int = 10  # results kept after deduplication
    max_sub_queries: int = 6  # the original question included
    max_hops: int = 3  # longest evidence chain
    max_chains: int = 10
    timeout_ms: int = 5000  # per sub-query
    with_bodies: bool = False
    per_query_k: int = 10  # chunks asked of each sub-query
    seed_entities: int = 3  # entities of a sub-query its chains start from
    paragraphs: int = 5  # run directory: extractive paragraphs drafted at most

    def __post_init__(self):
        checks = [
            ("k", self.k >= 1, "at least 1"),
            ("max_sub_queries", self.max_sub_queries >= 1, "at least 1"),
            ("max_hops", self.max_hops >= 2, "at least 2 (chains have 2 hops or more)"),
            ("max_chains", self.max_chains >= 0, "0 or more"),
            ("timeout_ms", self.timeout_ms >= 0, "0 or more"),
            ("per_query_k", self.per_query_k >= 1, "at least 1"),
            ("paragraphs", self.paragraphs >= 1, "at least 1"),
        ]
        for name, ok, wanted in checks:
            if not ok:
                raise ResearchError(f"{name} must be {wanted}, not {getattr(self, name)!r}")


@dataclass
class SubQuery:
    id: int
    text: str
    source: str  # "original" or "decomposed"

    def to_dict(self):
        return {"id": self.id, "text": self.text, "source": self.source}


# -- entities named in a question -------------------------------------------------------


def question_entities(conn, text):
    """Entities ``text`` names, in the order it names them.

    Every 1-3 word span that neither starts nor ends with a stopword is looked up by the
    linker's blocking keys in ``entities.norm``; longer spans win, each word belongs to
    one span, and a key shared by several entities stands for the most mentioned one. A
    lone verb form ("get", "depends") or inflected noun-or-verb ("owns") names nothing,
    and entities never mentioned are left out. Each is ``{"id", "name", "popularity",
    "start"}``.
    """
    from .extraction import AMBIGUOUS_FORMS, STOPWORDS, VERB_FORMS, lemma

    tokens = list(_WORD.finditer(text or ""))
    spans = []
    for size in range(_NGRAM, 0, -1):
        for i in range(len(tokens) - size + 1):
            words = tokens[i : i + size]
            if words[0].group().lower() in STOPWORDS or words[-1].group().lower() in STOPWORDS:
                continue
            word = words[0].group()
            if size == 1 and (word in VERB_FORMS or (word in AMBIGUOUS_FORMS and lemma(word) != word)):
                continue
            surface = text[words[0].start() : words[-1].end()]
            spans.append((i, size, lookup_norms(surface)))
    keys = sorted({key for _, _, span_keys in spans for key in span_keys})
    if not keys:
        return []
    marks = ",".join("?" * len(keys))
    best = {}
    for entity_id, name, norm, popularity in conn.execute(
        f"select id, name, norm, popularity from entities where norm in ({marks}) "
        "and status = 'active' and popularity > 0 order by popularity desc, id",
        keys,
    ):
        best.setdefault(norm, {"id": entity_id, "name": name, "popularity": popularity})
    taken = set()
    found = {}
    for start, size, span_keys in spans:  # longest spans first
        positions = set(range(start, start + size))
        hit = next((best[key] for key in span_keys if key in best), None)
        if hit is None or positions & taken or hit["id"] in found:
            continue
        taken |= positions
        found[hit["id"]] = dict(hit, start=start)
    return sorted(found.values(), key=lambda e: e["start"])


def most_specific(entities, n):
    """The ``n`` entities mentioned least often (most telling), kept in question order."""
    chosen = sorted(entities, key=lambda e: (e["popularity"], e["start"]))[:n]
    return sorted(chosen, key=lambda e: e["start"])


# -- decomposition --------------------------------------------------------------------------


def _clauses(q):
    """The parts of ``q`` between coordinating conjunctions and separators."""
    return [part for part in _CONJUNCTION.split(q) if part and part.strip(" ?!.")]


def _relational_parts(q):
    """The two sides of every relational phrase in ``q`` ("X depends on Y": X, Y)."""
    from .relations import _COMPILED

    parts = []
    for pattern, rel, _, _ in _COMPILED:
        if rel in _COPULA_RELATIONS:
            continue
        for match in pattern.finditer(q):
            parts.extend([q[: match.start()], q[match.end() :]])
    return parts


def _words_key(text):
    return tuple(sorted(set(query_words(text))))


def heuristic_sub_queries(conn, q, limit):
    """Up to ``limit`` sub-queries of ``q`` besides itself: clauses, the sides of
    relational phrases and pairs of the entities it names, taken in turn."""
    from .extraction import STOPWORDS

    entities = question_entities(conn, q)
    entity_words = {w.lower() for e in entities for w in _WORD.findall(e["name"])}
    pairs = [
        f"{a['name']} {b['name']}"
        for a, b in itertools.combinations(most_specific(entities, 3), 2)
    ]
    clauses = _clauses(q)
    relational = [part for clause in clauses for part in _relational_parts(clause)]
    kinds = [clauses, relational, pairs]
    whole = _words_key(q)
    seen = {whole}
    chosen = []
    for text in itertools.chain.from_iterable(itertools.zip_longest(*kinds)):
        if text is None:
            continue
        text = " ".join(text.split()).strip(" ,;:?!.")
        key = _words_key(text)
        content = [w for w in key if w not in STOPWORDS]
        # a fragment says enough with two content words, or one that names an entity
        if not content or (len(content) < 2 and not set(content) & entity_words):
            continue
        if key in seen:
            continue
        seen.add(key)
        chosen.append(text)
        if len(chosen) >= limit:
            break
    return chosen


def ask(model_id, prompt, task):
    """What the llm model ``model_id`` answers to ``prompt``; its errors as ``ResearchError``
    naming the ``task``."""
    import llm

    try:
        model = llm.get_model(model_id)
    except llm.UnknownModelError as ex:
        raise ResearchError(f"Unknown model {model_id!r}: 'llm models' lists the models llm knows") from ex
    try:
        return model.prompt(prompt).text()
    except (llm.ModelError, llm.NeedsKeyException) as ex:
        raise ResearchError(f"Model {model_id} could not {task}: {ex}") from ex


def llm_sub_queries(model_id, q, limit):
    """Up to ``limit`` sub-queries of ``q`` written by the llm model ``model_id``."""
    text = ask(model_id, DECOMPOSE_PROMPT.format(n=limit, q=q), "decompose the question")
    whole = _words_key(q)
    seen = {whole}
    chosen = []
    for line in text.splitlines():
        line = _LIST_MARK.sub("", line).strip().strip("\"'").strip()
        key = _words_key(line)
        if not key or key in seen:
            continue
        seen.add(key)
        chosen.append(line)
        if len(chosen) >= limit:
            break
    return chosen


def decompose(db, q, max_sub_queries=6, model=None):
    """``[SubQuery]``: ``q`` itself (id 0) then its decomposed sub-queries."""
    conn = getattr(db, "conn", db)
    limit = max_sub_queries - 1
    if limit <= 0:
        parts = []
    elif model:
        parts = llm_sub_queries(model, q, limit)
    else:
        parts = heuristic_sub_queries(conn, q, limit)
    return [SubQuery(0, q, "original")] + [
        SubQuery(i, text, "decomposed") for i, text in enumerate(parts, 1)
    ]


# -- evidence chains ----------------------------------------------------------------------

_BFS = (
    "select id, distance, path, weight from bfsvtab where tablename = 'graph_edges' "
    "and fromcolumn = 'src' and tocolumn = 'dst' and weightcolumn = 'confidence' "
    "and direction = 'out' and root = :root and max_depth = :max_depth"
)


@dataclass
class Chain:
    """A path of relations; ``relations[i]`` leads from ``nodes[i]`` to ``nodes[i + 1]``."""

    nodes: list  # entity ids
    relations: list  # (relation id, rel, weight)
    names: dict  # entity id -> name
    reaches_question: bool
    sub_query_ids: list = field(default_factory=list)

    @property
    def total_weight(self):
        total = 1.0
        for _, _, weight in self.relations:
            total *= weight
        return round(total, 6)

    def to_dict(self):
        path = [{"entity": self.names[self.nodes[0]]}]
        for node, (_, rel, weight) in zip(self.nodes[1:], self.relations):
            path.append({"entity": self.names[node], "relation": rel, "weight": weight})
        return {
            "from": self.names[self.nodes[0]],
            "to": self.names[self.nodes[-1]],
            "path": path,
            "total_weight": self.total_weight,
            "depth": len(self.relations),
            "sub_query_ids": sorted(self.sub_query_ids),
        }


def _mentioned(conn, chunk_ids):
    if not chunk_ids:
        return set()
    marks = ",".join("?" * len(chunk_ids))
    return {
        row[0]
        for row in conn.execute(
            f"select distinct entity_id from mentions where chunk_id in ({marks}) "
            "and entity_id is not null",
            list(chunk_ids),
        )
    }


def reach(conn, seed, max_hops, cache=None):
    """bfsvtab rows ``(id, distance, path, weight)`` from ``seed`` along relations.

    Goes one hop deeper at a time, up to ``max_hops``, while the seed reaches at most
    ``FRONTIER`` entities: past a hub the graph's next hop reaches most of it (60,000
    rows and a second on python3.11-doc), and chains through hubs say little.
    ``cache`` (a dict shared by the sub-queries of one call) keeps what was computed.
    """
    cache = {} if cache is None else cache
    rows = []
    for depth in range(1, max_hops + 1):
        key = (seed, depth)
        if key not in cache:
            cache[key] = conn.execute(_BFS, {"root": seed, "max_depth": depth}).fetchall()
        rows = cache[key]
        if len(rows) > FRONTIER:
            break
    return rows


def evidence_chains(conn, seeds, targets, question_ids, max_hops, limit, cache=None):
    """Chains of 2 to ``max_hops`` relations from each seed entity id to a target id."""
    found = []
    for seed in seeds:
        for node, distance, path, weight in reach(conn, seed, max_hops, cache):
            if distance >= 2 and node in targets and node != seed:
                found.append((node in question_ids, weight, path))
    found.sort(key=lambda f: (not f[0], -f[1], f[2]))
    chains = []
    for reaches_question, _, path in found[:limit]:
        nodes = [int(n) for n in path.strip("[]").split(",")]
        relations = []
        for a, b in zip(nodes, nodes[1:]):
            relation_id, rel, confidence = conn.execute(
                "select id, rel, confidence from relations where src_id = ? and dst_id = ? "
                "order by confidence desc, id limit 1",
                [a, b],
            ).fetchone()
            relations.append((relation_id, rel, round(confidence, 4)))
        chains.append(Chain(nodes, relations, {}, reaches_question))
    ids = sorted({n for chain in chains for n in chain.nodes})
    if ids:
        marks = ",".join("?" * len(ids))
        names = dict(conn.execute(f"select id, name from entities where id in ({marks})", ids))
        for chain in chains:
            chain.names = {n: names[n] for n in chain.nodes}
    return chains


# -- sub-queries in parallel --------------------------------------------------------------


@dataclass
class Outcome:
    """What one sub-query came back with: ``completed``, ``failed`` or ``timed_out``."""

    sub_query: SubQuery
    status: str
    chunks: list = field(default_factory=list)
    chains: list = field(default_factory=list)
    error: str | None = None


def _reader(file):
    """A connection of this thread's own to ``file``, for reading (no pragma writes)."""
    conn = sqlite3.connect(file)
    load_extensions(conn)
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    return conn


@dataclass
class Context:
    """What the sub-queries of one call share: the question's entities, reach rows."""

    question_ids: frozenset
    reached: dict = field(default_factory=dict)


def run_sub_query(conn, sub_query, options, context):
    """Chunks (``hybrid_query``, graph mode) and evidence chains of one sub-query."""
    result = hybrid_query(conn, sub_query.text, RetrievalOptions(k=options.per_query_k))
    chains = []
    if options.max_chains:
        seeds = [e["id"] for e in most_specific(question_entities(conn, sub_query.text), options.seed_entities)]
        if seeds:
            targets = context.question_ids | _mentioned(conn, [c["id"] for c in result["chunks"]])
            chains = evidence_chains(
                conn, seeds, targets, context.question_ids, options.max_hops, options.max_chains,
                context.reached,
            )
    return result["chunks"], chains


def _attempt(source, sub_query, options, context, deadline, cancelled):
    """Run one sub-query on ``source`` (a file to open, or a connection), interrupting
    its SQLite work at ``deadline``."""
    if time.monotonic() >= deadline:
        return Outcome(sub_query, "timed_out")
    own = isinstance(source, str)
    conn = None
    try:
        conn = _reader(source) if own else source
        conn.set_progress_handler(
            lambda: int(cancelled.is_set() or time.monotonic() >= deadline), _PROGRESS_STEPS
        )
        chunks, chains = run_sub_query(conn, sub_query, options, context)
    except Exception as ex:  # one sub-query's failure is counted, not raised
        if cancelled.is_set() or time.monotonic() >= deadline:
            return Outcome(sub_query, "timed_out")
        return Outcome(sub_query, "failed", error=f"{type(ex).__name__}: {ex}")
    finally:
        if conn is not None:
            conn.set_progress_handler(None, 0)
            if own:
                conn.close()
    if time.monotonic() >= deadline:
        return Outcome(sub_query, "timed_out")
    for chain in chains:
        chain.sub_query_ids = [sub_query.id]
    return Outcome(sub_query, "completed", chunks, chains)


def run_sub_queries(db, sub_queries, options, question_ids):
    """``[Outcome]`` of every sub-query, in id order.

    A database file: one thread and one connection per sub-query, all started together;
    what is not back ``timeout_ms`` later is timed out (its connection is interrupted).
    In memory: one after the other on ``db``'s connection, each with its own deadline.
    """
    conn = getattr(db, "conn", db)
    file = database_file(conn)
    timeout = options.timeout_ms / 1000
    cancelled = threading.Event()
    context = Context(frozenset(question_ids))
    # The model loads on first use (seconds, once per process): not a sub-query's time
    connection_embedder(conn).encode([sub_queries[0].text])
    if file is None:
        return [
            _attempt(conn, sq, options, context, time.monotonic() + timeout, cancelled)
            for sq in sub_queries
        ]
    deadline = time.monotonic() + timeout
    pool = concurrent.futures.ThreadPoolExecutor(
        max_workers=len(sub_queries), thread_name_prefix="graphrag-research"
    )
    try:
        futures = [
            pool.submit(_attempt, file, sq, options, context, deadline, cancelled)
            for sq in sub_queries
        ]
        concurrent.futures.wait(futures, timeout=max(0.0, deadline - time.monotonic()))
        cancelled.set()  # whatever is still running stops at its next SQLite step
        return [
            future.result() if future.done() else Outcome(sq, "timed_out")
            for sq, future in zip(sub_queries, futures)
        ]
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


# -- merging ---------------------------------------------------------------------------------


def _kebab(text):
    return "-".join(w.lower() for w in _WORD.findall(text)) or "chunk"


def result_name(path, chunk_id):
    """A result's kebab-case name: the document's folder and file name, and the chunk id."""
    tail = "/".join(str(path).replace("\\", "/").rstrip("/").split("/")[-2:])
    return f"{_kebab(tail)}-chunk-{chunk_id}"


def merge_results(outcomes):
    """Chunks of all completed sub-queries, one entry per chunk, best first."""
    merged = {}
    for outcome in outcomes:
        if outcome.status != "completed":
            continue
        for chunk in outcome.chunks:
            entry = merged.setdefault(
                chunk["id"],
                {
                    "chunk_id": chunk["id"],
                    "doc_id": chunk["doc_id"],
                    "path": chunk["path"],
                    "section": chunk.get("section"),
                    "snippet": chunk["snippet"],
                    "score": 0.0,
                    "direct": False,
                    "hops": None,
                    "sub_query_ids": [],
                },
            )
            entry["score"] += max(0.0, chunk["score"])
            entry["sub_query_ids"].append(outcome.sub_query.id)
            if chunk.get("hop") and chunk.get("bridge", 0.0) > chunk.get("relevance", 0.0):
                entry["hops"] = min(entry["hops"] or chunk["hop"], chunk["hop"])
            else:
                entry["direct"] = True
    return sorted(merged.values(), key=lambda e: (-e["score"], e["chunk_id"]))


def merge_chains(outcomes, limit):
    """Chains of all completed sub-queries, one per path: question entities reached
    first, then by total weight."""
    merged = {}
    for outcome in outcomes:
        if outcome.status != "completed":
            continue
        for chain in outcome.chains:
            key = tuple(chain.nodes)
            if key in merged:
                merged[key].sub_query_ids.extend(chain.sub_query_ids)
            else:
                merged[key] = chain
    chains = sorted(
        merged.values(),
        key=lambda c: (not c.reaches_question, -c.total_weight, len(c.nodes), c.nodes),
    )
    return chains[:limit]


def _chunk_rows(conn, ids):
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    cursor = conn.execute(
        "select chunks.id, chunks.seq, chunks.content, docs.title from chunks "
        f"join docs on docs.id = chunks.doc_id where chunks.id in ({marks})",
        list(ids),
    )
    return {row[0]: {"seq": row[1], "content": row[2], "title": row[3]} for row in cursor}


@dataclass
class Research:
    """One research answer: seed 000's JSON (``to_dict``) and what a run directory needs."""

    query: str
    sub_queries: list
    results: list  # merged entries with "content", "seq" and "title" added
    chains: list
    stats: dict
    question_entities: list
    outcomes: list

    def to_dict(self, with_bodies=False):
        results = []
        for entry in self.results:
            item = {
                "name": result_name(entry["path"], entry["chunk_id"]),
                "score": round(entry["score"], 6),
                "source": "direct" if entry["direct"] else "graph",
                "sub_query_ids": sorted(set(entry["sub_query_ids"])),
                "snippet": entry["snippet"],
                "hop_distance": None if entry["direct"] else entry["hops"],
            }
            if with_bodies:
                item["body"] = entry["content"]
            results.append(item)
        return {
            "query": self.query,
            "sub_queries": [sq.to_dict() for sq in self.sub_queries],
            "results": results,
            "evidence_chains": [chain.to_dict() for chain in self.chains],
            "stats": self.stats,
        }


def research(db, q, options=None, model=None, sub_queries=None):
    """Decompose ``q`` (unless ``sub_queries`` are given), run the sub-queries in
    parallel and merge them: a ``Research``."""
    options = options or ResearchOptions()
    started = time.perf_counter()
    q = (q or "").strip()
    if not q:
        raise ResearchError("The question is empty: ask something, e.g. 'What does tidepool depend on?'")
    conn = getattr(db, "conn", db)
    if sub_queries is None:
        sub_queries = decompose(conn, q, options.max_sub_queries, model)
    entities = question_entities(conn, q)
    outcomes = run_sub_queries(conn, sub_queries, options, [e["id"] for e in entities])
    merged = merge_results(outcomes)
    kept = merged[: options.k]
    rows = _chunk_rows(conn, [entry["chunk_id"] for entry in kept])
    kept = [dict(entry, **rows[entry["chunk_id"]]) for entry in kept if entry["chunk_id"] in rows]
    chains = merge_chains(outcomes, options.max_chains)
    counts = {status: sum(o.status == status for o in outcomes) for status in ("completed", "failed", "timed_out")}
    stats = {
        "sub_queries_total": len(sub_queries),
        "sub_queries_completed": counts["completed"],
        "sub_queries_failed": counts["failed"],
        "sub_queries_timed_out": counts["timed_out"],
        "unique_memories_found": len(merged),
        "evidence_chains_found": len(chains),
        "elapsed_ms": int((time.perf_counter() - started) * 1000),
    }
    return Research(q, sub_queries, kept, chains, stats, entities, outcomes)
