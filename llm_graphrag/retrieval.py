"""Hybrid retrieval: FTS5 BM25 and vec0 KNN fused, then bridged through the graph.

``hybrid_query(db, q, options)`` is the engine behind the ``hybrid_query`` tool. Modes:

* ``bm25``: FTS5 BM25 over chunk text (porter tokenizer), question words OR-ed.
* ``vector``: cosine KNN over the chunk vectors: an exact ``chunk_vec`` vec0 scan, or
  from ``bit_index_min_chunks`` chunks on an in-memory bit index whose candidates are
  rescored exactly (``vector_search``).
* ``hybrid``: weighted reciprocal-rank fusion of the two, no graph. Each list's weight
  (``keyword_weight``, ``vector_weight``) grows with how far its best score stands out
  from its first ``peak_depth`` (``list_peak`` times ``peak_boost``): a list that
  singles a chunk out counts more for that question than one whose scores are flat.
* ``graph``: ``hybrid``, then expansion from the first ``seeds`` fused chunks (each of
  relevance at least ``seed_min_relevance``) to the chunks that complete them, through
  rare shared entities (mentions), typed relations traversed by ``bfsvtab`` (up to
  ``hops``, filtered by ``rels``; ``related_to`` co-occurrence and ``stated`` edges only
  when ``rels`` names them) and the seed's words the question lacks. Only a seed both searches put (nearly)
  first (``seed_new_relevance``) brings chunks neither search found; a less relevant one
  lifts the fused chunks it shares a rare entity or typed relation with. The fused ranking's
  first ``keep_top`` chunks and every chunk of relevance at least ``keep_relevance``
  keep their places: the graph fills the places below a strong independent match.
  Before expanding, each fused chunk's relevance takes in its document
  (``_document_evidence``): its page's other fused chunks (``page_support``), the page's
  length (``page_size``) and the question's words in its title and headings
  (``heading_weight``); nothing changes when every document is one chunk with a title
  that holds no question word. Then a learned linear re-scorer (``rescore``,
  ``RESCORE_WEIGHTS`` over ``RESCORE_FEATURES``, fitted by ``bench/fit_rescorer.py``)
  orders the first ``rescore_depth`` fused chunks: the fused relevance plus each list's
  rank, BM25 score and cosine gap to the list's best and the document evidence, each
  times its weight; each chunk takes the relevance of the place it gets
  (``signals.learned`` lists the parts). Last, the first document's chunks come first
  (``group_pages``), with its chunks below ``k`` in the places of repeated documents'
  (``page_fill``): the documents returned and their order stay the same.

Scoring follows seed 004 §14 with weights from config (``weights`` in the
``retrieval`` setting, or ``RetrievalOptions.weights``): a chunk's score is
``semantic * relevance + graph * bridge``. Relevance is the fused rank score in [0, 1]
(1 for a chunk first in both lists). Bridge sums, over the seeds that reach the chunk,
the seed's confidence (its relevance ** ``seed_sharpness``: only a seed both searches
agree on counts much) times ``bridge_decay ** n`` for the chunk's rank n among that
seed's candidates, times the path's hop score and relation weight relative to a
one-hop bridge. Candidates are ranked by their fit to question + seed: BM25 of the
seed's words the question lacks, cosine to the question + seed vector, the inverse
document frequency of the entities they share and of the question words the seed lacks
that they hold (``fit["coverage"]``). A chunk reached from a seed ranks just below that seed.
"""

from __future__ import annotations

import collections
import functools
import json
import math
import re
import threading
from dataclasses import dataclass, field

import numpy as np

from .db import read_setting, sqlite3
from .fulltext import WORD as _WORD
from .fulltext import fts_match, query_words
from .graph import relation_kind

MODES = ("bm25", "vector", "hybrid", "graph")
BRIDGES = ("entities", "terms", "relations", "adjacent")
DEFAULT_WEIGHTS = {"semantic": 1.0, "graph": 0.5}
# A chunk whose first sentence holds a personal pronoun refers back to the chunk before it
# ("He resigned in 1998."), so the two are read together: the ``adjacent`` bridge. "it",
# "its" and "their" are left out: in general statements they mostly point within their own
# sentence ("Plants use their leaves"; with them, QASC R@10 both fell 0.480 -> 0.476 on
# dev-odd while MultiRC rose 0.452 -> 0.476).
BACK_REFERENCES = frozenset("he him his himself she her hers herself they them themselves".split())
# Seed 004 §14: hop scores and relation weights. A bridge through a shared entity or
# term is one hop; each relation traversed adds one more.
HOP_SCORES = {0: 1.0, 1: 0.7, 2: 0.4, 3: 0.2}
REL_WEIGHTS = {"defines": 1.0, "uses": 0.9, "depends_on": 0.8, "cites": 0.5}
DEFAULT_REL_WEIGHT = 0.6

# The learned re-scorer of the fused chunks (``RetrievalOptions.rescore``): a feature's
# weight is added, times the feature, to the fused relevance. Fitted by
# ``python bench/fit_rescorer.py`` (listwise, on the dev-even halves and Django dev).
RESCORE_FEATURES = (
    "keyword",
    "vector",
    "both",
    "bm25",
    "cosine",
    "page_support",
    "page_size",
    "heading",
    "code",
)
RESCORE_WEIGHTS = {
    "keyword": -0.3377,
    "vector": -0.0729,
    "both": 0.0620,
    "bm25": 0.3705,
    "cosine": 0.1977,
    "page_support": 0.1000,
    "page_size": -0.0500,
    "heading": 0.3000,
    "code": 0.3000,
}

_NGRAM = 3


@dataclass
class RetrievalOptions:
    """Parameters of one ``hybrid_query`` call; the defaults are the measured ones."""

    k: int = 10
    hops: int = 2
    rels: list | None = None
    mode: str = "graph"
    weights: dict | None = None  # {"semantic": .., "graph": ..}; None: config or default
    fts_candidates: int = 50
    vector_candidates: int = 50
    # Vector search: a bit index from this many chunks on (0: always, None: never), its
    # top ``bit_candidates`` rescored exactly. 800 of 1M: recall@50 1.0 (400: 0.96).
    bit_index_min_chunks: int | None = 100_000
    bit_candidates: int = 800
    rrf_k: int = 4
    keyword_weight: float = 1.0  # the BM25 list's weight in the fusion
    vector_weight: float = 0.6  # the vector list's: the static model is the weaker one
    peak_boost: float = 1.0  # a list's weight times 1 + peak_boost * list_peak
    peak_depth: int = 29  # list_peak looks at the first peak_depth + 1 scores
    # Graph expansion
    # The first fused chunks expanded, each weighted by its confidence (relevance **
    # sharpness: 1 for a chunk first in both lists, 0.13 at relevance 0.6)
    seeds: int = 3
    seed_sharpness: float = 4.0
    seed_min_relevance: float = 0.45  # a seed less relevant expands nothing
    # only a seed both searches put (nearly) first brings chunks neither search found; a
    # less relevant one lifts the fused chunks it shares a rare entity or typed relation with
    seed_new_relevance: float = 0.8
    bridge_pool: int = 5  # candidates kept per seed
    # the n-th candidate of a seed counts decay ** n: on QASC dev-even, a confident seed's
    # n-th candidate is as often gold as a fused chunk of relevance about 0.75 * 0.88 ** n
    bridge_decay: float = 0.88
    keep_top: int = 3  # the fused ranking's first chunks keep their places
    keep_relevance: float = 0.6  # and so does every fused chunk at least this relevant
    bridge_via: tuple = BRIDGES
    # A candidate's fit: bm25 (of the seed's words the question lacks), cosine (to the
    # question + seed * "seed"), entities (idf of the wanted entities it holds) and coverage
    # (idf of the question words its seed lacks that it holds: a partner supplies what the
    # seed misses; for the seed's first 2 x bridge_pool candidates by the rest of the fit,
    # each costing an FTS5 lookup a word; 0.5: QASC R@5 both 0.304 -> 0.314 dev-even,
    # 0.300 -> 0.310 dev-odd, no figure below a single mode that was not before; 1.0 drops
    # R@10 any below hybrid's). The FalkorDB backend does not apply coverage.
    fit: dict = field(
        default_factory=lambda: {
            "bm25": 1.0, "cosine": 3.0, "seed": 1.0, "entities": 0.5, "coverage": 0.5
        }
    )
    term_candidates: int = 50
    max_bridge_terms: int = 8  # words of the seed's best-matching sentence
    max_entity_chunks: int = 30  # entities in more chunks are too common to bridge
    max_bridge_entities: int = 5  # the rarest entities of a seed the question lacks
    relation_roots: int = 3  # bridge entities whose relations are traversed
    relation_targets: int = 10  # related entities followed to their chunks
    snippet_chars: int = 240
    # Pair coverage: a candidate's gain times coverage_base + coverage_slope * share, its
    # share of the weight (idf) of the question words its seed lacks (0.5 when the seed
    # lacks none): a partner that supplies what the seed misses completes the pair.
    # (1.0, 0.0): off, the measured default (README: on, QASC R@10 both rises and R@10 any
    # falls below hybrid's on dev-odd). The FalkorDB backend does not apply it.
    coverage_base: float = 1.0
    coverage_slope: float = 0.0
    # Document evidence (graph mode; nothing when every document is one chunk and no
    # title or heading holds a question word): a fused chunk's relevance plus
    # page_support * the relevance of its page's next page_depth - 1 best fused chunks,
    # minus page_size * log(chunks in its page) (a long page offers more chances to match
    # a word: changelogs), plus heading_weight * the share of the question's idf weight
    # its document title and headings hold.
    page_support: float = 0.1
    page_depth: int = 3
    page_size: float = 0.05
    heading_weight: float = 0.3
    # Code links (graph mode): an entity of type code that the question names by a
    # code-like token (``os.path.join``, ``Py_DECREF``, ``getLogger``, ``len()``, anything
    # in backticks) brings the chunk its description comes from (its definition or home)
    # with code_link_weight, found by a search or not: a name that specific is evidence.
    code_link_weight: float = 0.3
    # Learned re-scoring (graph mode): the fused chunks' first rescore_depth places (by
    # relevance with document evidence; None: all) are ordered by a learned score, the
    # fused relevance plus sum(weight * feature) over RESCORE_FEATURES, and each chunk
    # takes the relevance its place had (the graph's gains keep their scale). True: the
    # weights RESCORE_WEIGHTS (bench/fit_rescorer.py); a dict: other weights; False: off.
    rescore: bool | dict = True
    rescore_depth: int | None = 10
    # Page grouping (graph mode): the chunks returned of the first group_pages documents
    # (in the order each first appears) move up to follow that document's first chunk.
    # The documents' order and the set returned stay the same (hit@1, MRR, R@k), and a
    # reader finds the best page's other passages next to it (P@5). 0: off.
    group_pages: int = 1
    # and the first document's chunks found below k (fused, or reached by the graph) take
    # the places of later chunks of documents already returned, until it has page_fill
    # of them: the same documents in the same order, more of the first one's passages.
    # A moved chunk takes the score of its place (its own in signals.page), so scores
    # still fall down the list.
    # Measured (P@5, every other figure the same): python docs dev-even 0.407 -> 0.464,
    # dev-odd 0.450 -> 0.494, Django dev 0.465 -> 0.520; group_pages 2: dev-even 0.436.
    page_fill: int = 5

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        unknown = set(self.bridge_via) - set(BRIDGES)
        if unknown:
            raise ValueError(f"bridge_via: unknown bridge {sorted(unknown)[0]!r}")
        if self.k < 1:
            raise ValueError("k must be at least 1")
        if self.keep_top < 0 or self.bridge_pool < 0:
            raise ValueError("keep_top and bridge_pool must be at least 0")
        if self.bit_candidates < 1:
            raise ValueError("bit_candidates must be at least 1")
        if self.bit_index_min_chunks is not None and self.bit_index_min_chunks < 0:
            raise ValueError("bit_index_min_chunks must be None or at least 0")
        if self.group_pages < 0 or self.page_fill < 0:
            raise ValueError("group_pages and page_fill must be at least 0")
        if self.page_depth < 1:
            raise ValueError("page_depth must be at least 1")
        if self.rescore_depth is not None and self.rescore_depth < 1:
            raise ValueError("rescore_depth must be None (every place) or at least 1")
        if isinstance(self.rescore, dict):
            unknown = sorted(set(self.rescore) - set(RESCORE_FEATURES))
            if unknown:
                raise ValueError(
                    f"rescore: unknown feature {unknown[0]!r}; the features are {', '.join(RESCORE_FEATURES)}"
                )
            if any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in self.rescore.values()):
                raise ValueError("rescore: each feature's weight must be a number")


def hybrid_query(db, q, options=None):
    """Ranked chunks for ``q`` with provenance, entities, edges and explanations.

    ``db`` is a ``sqlite_utils.Database`` or a connection with the extensions loaded.
    Returns seed 004 §11.4's JSON: ``{"chunks", "entities", "edges", "explanations"}``,
    one explanation per chunk in the same order.
    """
    options = options or RetrievalOptions()
    conn = getattr(db, "conn", db)
    weights = dict(DEFAULT_WEIGHTS)
    weights.update(options.weights or read_setting(conn, "retrieval", {}).get("weights") or {})
    state = _Query(conn, q, options)
    if options.mode in ("bm25", "hybrid", "graph"):
        state.keyword_search()
    if options.mode in ("vector", "hybrid", "graph"):
        state.vector_search()
    state.fuse()
    if options.mode == "graph" and options.hops > 0:
        state.expand()
    return state.result(weights)


_EMBEDDERS = {}


def connection_embedder(conn):
    """The database's embedder, loaded once per model."""
    from .embeddings import get_embedder

    model_id = read_setting(conn, "embedding_model")
    if model_id not in _EMBEDDERS:
        _EMBEDDERS[model_id] = get_embedder(model_id)
    return _EMBEDDERS[model_id]


@functools.lru_cache(maxsize=65536)
def _lemma(word):
    from .extraction import lemma

    return lemma(word)


class _Query:
    """The state of one query as it goes through search, fusion and expansion."""

    def __init__(self, conn, q, options):
        self.conn = conn
        self.q = q
        self.options = options
        self.words = query_words(q)
        self.bm25 = {}  # chunk id -> (rank, bm25 score, positive: higher is better)
        self.vector = {}  # chunk id -> (rank, cosine similarity)
        self.relevance = {}  # chunk id -> fused relevance (graph: with document evidence)
        self.fused = {}  # chunk id -> fused relevance in [0, 1] of the two lists alone
        self.document = {}  # chunk id -> its document evidence (``_document_evidence``)
        self.learned = {}  # chunk id -> the learned re-scorer's parts (``RESCORE_WEIGHTS``)
        self.moved = {}  # chunk id -> its own score, for one page grouping moved (``_group_pages``)
        self.features = {}  # chunk id -> the re-scorer's feature values (bench/fit_rescorer.py)
        self.fusion = {}  # list name -> its weight in this question's fusion
        self.dense = False  # whether the vector list came from the dense chunk vectors
        self.order = []
        self.bridge = {}  # chunk id -> summed bridge contribution
        self.paths = {}  # chunk id -> best path dict
        self.query_entities = {}
        self._query_vector = None
        self._total_chunks = None
        self._wanted = {}
        self._idfs = {}

    # -- first hop ------------------------------------------------------------------

    def keyword_search(self):
        if not self.words:
            return
        rows = self.conn.execute(
            "select rowid, bm25(chunks_fts) from chunks_fts where chunks_fts match ? "
            "order by bm25(chunks_fts) limit ?",
            [fts_match(self.words), self.options.fts_candidates],
        ).fetchall()
        self.bm25 = {row[0]: (rank, -row[1]) for rank, row in enumerate(rows)}

    @property
    def query_vector(self):
        if self._query_vector is None:
            vector = connection_embedder(self.conn).encode([self.q])[0]
            self._query_vector = np.asarray(vector, dtype=np.float32)
        return self._query_vector

    def vector_search(self):
        """The nearest chunks by the dense vectors when the database has them
        (``dense.dense_search``), else by the static model's."""
        from .dense import dense_search

        rows = dense_search(self.conn, self.q, self.options.vector_candidates)
        self.dense = rows is not None
        if rows is None:
            vector = self.query_vector
            if not np.any(vector):
                return
            rows = vector_search(self.conn, vector, self.options.vector_candidates, self.options)
        self.vector = {row[0]: (rank, 1.0 - row[1]) for rank, row in enumerate(rows)}

    def fuse(self):
        """Weighted reciprocal-rank fusion, scaled so a chunk first in every list scores 1.

        With both lists, each one's weight is its base weight times ``1 + peak_boost *
        peak``, its peak measured on its own scores (``list_peak``).
        """
        options = self.options
        k = options.rrf_k
        lists = [
            (name, ranks, weight)
            for name, ranks, weight in (
                ("keyword", self.bm25, options.keyword_weight),
                ("vector", self.vector, options.vector_weight),
            )
            if ranks
        ]
        if len(lists) == 2:
            lists = [
                (name, ranks, weight * (1 + options.peak_boost * list_peak(ranks, options.peak_depth)))
                for name, ranks, weight in lists
            ]
        elif lists:
            lists = [(lists[0][0], lists[0][1], 1.0)]
        self.fusion = {name: round(weight, 6) for name, _, weight in lists}
        scores = {}
        for _, ranks, weight in lists:
            for chunk_id, (rank, _) in ranks.items():
                scores[chunk_id] = scores.get(chunk_id, 0.0) + weight / (k + rank + 1)
        top = sum(weight for _, _, weight in lists) / (k + 1) if lists else 1.0
        self.relevance = {c: s / top for c, s in scores.items()}
        self.fused = dict(self.relevance)
        if options.mode == "graph":
            self._document_evidence()
        self.order = sorted(self.relevance, key=lambda c: (-self.relevance[c], c))

    def _document_evidence(self):
        """Add what the chunk's document says to each fused chunk's relevance: the
        support of its page's other fused chunks, the page's length, and the question's
        words in its document title and headings (``RetrievalOptions.page_support``,
        ``page_size``, ``heading_weight``), and whether it describes a code entity the
        question names (``code_link_weight``: such a chunk joins the fused ones if neither
        search found it). Kept in ``self.document`` for the signals."""
        options = self.options
        if not self.relevance:
            return
        learned = self._rescore_weights()
        code = self._code_links() if options.code_link_weight else {}
        if learned is None and not (
            code or options.page_support or options.page_size or options.heading_weight
        ):
            return
        for chunk_id in code:
            if chunk_id not in self.relevance:  # neither search found it: the name did
                self.relevance[chunk_id] = self.fused[chunk_id] = 0.0
        ids = list(self.relevance)
        rows = self._document_rows(ids)
        docs = {row[0]: row[1] for row in rows}
        sizes = self._page_sizes(sorted(set(docs.values())))
        by_page = collections.defaultdict(list)
        for chunk_id, doc_id in docs.items():
            by_page[doc_id].append(self.relevance[chunk_id])
        for values in by_page.values():
            values.sort(reverse=True)
        headings = (
            self._heading_shares(rows) if options.heading_weight or learned is not None else {}
        )
        evidence = {}
        for chunk_id, doc_id in docs.items():
            own = self.relevance[chunk_id]
            others = list(by_page[doc_id])
            others.remove(own)
            support = sum(others[: max(options.page_depth - 1, 0)])
            size = sizes.get(doc_id, 1)
            heading = headings.get(chunk_id, 0.0)
            named = 1.0 if chunk_id in code else 0.0
            self.document[chunk_id] = {
                "page_support": round(support, 6),
                "page_chunks": size,
                "heading": round(heading, 6),
            }
            if named:
                self.document[chunk_id]["names"] = code[chunk_id]
            adjust = (
                options.page_support * support
                - options.page_size * math.log(max(size, 1))
                + options.heading_weight * heading
                + options.code_link_weight * named
            )
            if adjust:
                self.relevance[chunk_id] = max(0.0, own + adjust)
            evidence[chunk_id] = (support, size, heading, named)
        if learned is not None:
            self._rescore_places(learned, evidence)

    def _rescore_places(self, learned, evidence):
        """The learned score orders the first ``rescore_depth`` chunks (all when None);
        each takes the relevance of the place it gets, so the places below and the
        graph's gains keep the scale they were set on."""
        ranked = sorted(self.relevance, key=lambda c: (-self.relevance[c], c))
        top = ranked[: self.options.rescore_depth]
        best_bm25 = max((score for _, score in self.bm25.values()), default=0.0)
        cosines = [score for _, score in self.vector.values()]
        best_cos, last_cos = (max(cosines), min(cosines)) if cosines else (0.0, 0.0)
        for chunk_id in top:
            found = evidence.get(chunk_id, (0.0, 1, 0.0, 0.0))
            values = self._rescore_features(chunk_id, best_bm25, best_cos, last_cos, *found)
            self.features[chunk_id] = values
            parts = {"fused": round(self.fused[chunk_id], 6)}
            for name in RESCORE_FEATURES:
                if learned[name] * values[name]:
                    parts[name] = round(learned[name] * values[name], 6)
            parts["score"] = round(sum(parts.values()), 6)
            self.learned[chunk_id] = parts
        values = [self.relevance[c] for c in top]
        top.sort(key=lambda c: (-self.learned[c]["score"], c))
        self.relevance.update(zip(top, values))

    def _rescore_features(self, chunk_id, best_bm25, best_cos, last_cos, support, size, heading, named):
        """The learned re-scorer's features of one fused chunk (``RESCORE_FEATURES``):
        each list's reciprocal rank scaled to 1 at its first place (0 when absent),
        whether both lists hold it, its BM25 score over the list's best, its cosine's gap
        to the list's best (the list's last when absent), then its document evidence."""
        k = self.options.rrf_k
        bm25 = self.bm25.get(chunk_id)
        vector = self.vector.get(chunk_id)
        return {
            "keyword": (k + 1) / (k + bm25[0] + 1) if bm25 else 0.0,
            "vector": (k + 1) / (k + vector[0] + 1) if vector else 0.0,
            "both": 1.0 if bm25 and vector else 0.0,
            "bm25": bm25[1] / best_bm25 if bm25 and best_bm25 > 0 else 0.0,
            "cosine": (vector[1] if vector else last_cos) - best_cos if self.vector else 0.0,
            "page_support": support,
            "page_size": math.log(max(size, 1)),
            "heading": heading,
            "code": named,
        }

    def _rescore_weights(self):
        """The learned re-scorer's weights (``RetrievalOptions.rescore``), or None when off."""
        rescore = self.options.rescore
        if not rescore:
            return None
        weights = RESCORE_WEIGHTS if rescore is True else rescore
        return {name: float(weights.get(name, 0.0)) for name in RESCORE_FEATURES}

    def _code_links(self):
        """``{chunk id: entity name}``: for each code entity the question names by a
        code-like token (``_CODE_TOKEN``), the chunk its description comes from: the best
        ranked ``describes`` mention (its home, then a defining sentence), the first in
        path and text order among equals, as ``refine`` picks it."""
        from .extraction import normalize

        keys = {normalize(a or b, "code") for a, b in _CODE_TOKEN.findall(self.q)} - {""}
        if not keys:
            return {}
        marks = ",".join("?" * len(keys))
        out = {}
        for entity_id, name in self.conn.execute(
            f"select id, name from entities where norm in ({marks}) and type = 'code' "
            "and status = 'active' order by id",
            sorted(keys),
        ).fetchall():
            row = self.conn.execute(
                "select m.chunk_id from mentions m join chunks c on c.id = m.chunk_id "
                "join docs d on d.id = m.doc_id where m.entity_id = ? "
                "and m.meta like '%\"describes\"%' "
                "and json_extract(m.meta, '$.describes[0]') is not null "
                "order by json_extract(m.meta, '$.describes[0]') desc, d.path, c.seq, m.span_start "
                "limit 1",
                [entity_id],
            ).fetchone()
            if row:
                out.setdefault(row[0], name)
        return out

    def _document_rows(self, ids):
        """``[(chunk id, doc id, chunk hash, chunk section, document title)]``."""
        marks = ",".join("?" * len(ids))
        return self.conn.execute(
            "select chunks.id, chunks.doc_id, chunks.hash, chunks.section, docs.title "
            f"from chunks join docs on docs.id = chunks.doc_id where chunks.id in ({marks})",
            list(ids),
        ).fetchall()

    def _page_sizes(self, doc_ids):
        """``{doc id: its number of chunks}``."""
        if not doc_ids:
            return {}
        marks = ",".join("?" * len(doc_ids))
        return dict(
            self.conn.execute(
                f"select doc_id, count(*) from chunks where doc_id in ({marks}) group by doc_id",
                list(doc_ids),
            ).fetchall()
        )

    def _heading_shares(self, rows):
        """``{chunk id: share}``: the share of the question words' idf weight that the
        chunk's document title, section and headings in it hold."""
        weights = {}
        for word in self.words:
            weights.setdefault(_lemma(word), self._word_idf(word))
        total = sum(weights.values())
        if total <= 0:
            return {}
        shares = {}
        def contents(ids):
            return {i: row["content"] for i, row in self._chunk_rows(ids).items()}

        for chunk_id, lemmas in _heading_lemmas(contents, rows).items():
            held = sum(weight for lemma, weight in weights.items() if lemma in lemmas)
            if held:
                shares[chunk_id] = held / total
        return shares

    # -- graph expansion --------------------------------------------------------------

    def expand(self):
        options = self.options
        seeds = self.order[: options.seeds]
        if not seeds:
            return
        self.query_entities = self._match_query_entities()
        for seed in seeds:
            if self.fused[seed] < options.seed_min_relevance:
                continue
            confidence = self.fused[seed] ** options.seed_sharpness
            fused_only = self.fused[seed] < options.seed_new_relevance
            candidates, term_scores = self._candidates(seed, fused_only)
            candidates.pop(seed, None)
            untyped = {"related_to", "stated"} - set(options.rels or ())
            if untyped:
                # co-occurrence is no specific evidence, a stated edge no named relation:
                # only typed relations bridge, unless ``rels`` names them
                for chunk_id in [c for c, p in candidates.items() if p.get("rel") in untyped]:
                    del candidates[chunk_id]
            if not candidates:
                continue
            ranked = self._rank_candidates(seed, candidates, term_scores)[: options.bridge_pool]
            shares = self._coverage_shares(seed, [c for c, _ in ranked])
            for rank, (chunk_id, path) in enumerate(ranked):
                gain = confidence * options.bridge_decay**rank * path["factor"]
                if chunk_id in shares:
                    path = dict(path, coverage=shares[chunk_id])
                    gain *= options.coverage_base + options.coverage_slope * shares[chunk_id]
                self.bridge[chunk_id] = self.bridge.get(chunk_id, 0.0) + gain
                best = self.paths.get(chunk_id)
                if best is None or gain > best["gain"]:
                    self.paths[chunk_id] = dict(path, gain=gain, seed=seed, rank=rank)

    def _coverage_shares(self, seed, chunk_ids):
        """``{chunk_id: share}``: each chunk's share of the idf weight of the question words
        ``seed`` lacks (0.5 for every chunk when it lacks none). Empty when off."""
        if not self.options.coverage_slope or not chunk_ids or not self.words:
            return {}
        held, total = self._missing_weight(seed, chunk_ids)
        if total <= 0:
            return {c: 0.5 for c in chunk_ids}
        return {c: held.get(c, 0.0) / total for c in chunk_ids}

    def _missing_weight(self, seed, chunk_ids):
        """``({chunk_id: weight}, total)``: the idf weight of the question words ``seed``
        lacks that each chunk holds (a partner supplies what its seed misses), and the
        weight of all of them."""
        row = self.conn.execute("select content from chunks where id = ?", [seed]).fetchone()
        seed_lemmas = {_lemma(w) for w in query_words(row[0] if row else "")}
        missing = [w for w in self.words if _lemma(w) not in seed_lemmas]
        held, total = {}, 0.0
        ids = json.dumps(list(chunk_ids))
        for word in missing:
            weight = self._word_idf(word)
            total += weight
            if weight <= 0:
                continue
            for (chunk_id,) in self.conn.execute(
                "select rowid from chunks_fts where chunks_fts match ? "
                "and rowid in (select value from json_each(?))",
                [fts_match([word]), ids],
            ):
                held[chunk_id] = held.get(chunk_id, 0.0) + weight
        return held, total

    def _word_idf(self, word):
        """The inverse document frequency of ``word`` in the chunks (once per query)."""
        cache = self._idfs
        if word not in cache:
            count = self.conn.execute(
                "select count(*) from chunks_fts where chunks_fts match ?", [fts_match([word])]
            ).fetchone()[0]
            cache[word] = self._idf(count) if count else 0.0
        return cache[word]

    def _match_query_entities(self):
        """Entities whose normalized name is a 1-3 word n-gram of the question."""
        from .extraction import normalize

        tokens = [t.lower() for t in _WORD.findall(self.q)]
        keys = set()
        for size in range(1, _NGRAM + 1):
            for i in range(len(tokens) - size + 1):
                key = normalize(" ".join(tokens[i : i + size]))
                if key:
                    keys.add(key)
        if not keys:
            return {}
        marks = ",".join("?" * len(keys))
        rows = self.conn.execute(
            f"select id, name, type from entities where norm in ({marks}) "
            "and status = 'active'",
            sorted(keys),
        ).fetchall()
        return {row[0]: {"id": row[0], "name": row[1], "type": row[2]} for row in rows}

    def _chunk_entities(self, chunk_id):
        rows = self.conn.execute(
            "select distinct entity_id from mentions where chunk_id = ? and entity_id is not null",
            [chunk_id],
        ).fetchall()
        return {row[0] for row in rows}

    def _popularity(self, entity_ids):
        """How often each entity is mentioned (its ``popularity``): a document frequency."""
        if not entity_ids:
            return {}
        marks = ",".join("?" * len(entity_ids))
        rows = self.conn.execute(
            f"select id, popularity from entities where id in ({marks})", list(entity_ids)
        ).fetchall()
        return {entity_id: count for entity_id, count in rows}

    @property
    def total_chunks(self):
        if self._total_chunks is None:
            # max(id) is an index lookup where count(*) would scan every chunk
            row = self.conn.execute("select max(id) from chunks").fetchone()
            self._total_chunks = row[0] or 0
        return self._total_chunks

    def _idf(self, count):
        return math.log((self.total_chunks + 1) / (count + 0.5))

    def _candidates(self, seed, fused_only=False):
        """Chunks one bridge away from ``seed``: ``{chunk_id: path}``. ``fused_only``: only
        chunks the searches found, through entities and relations (no term search)."""
        options = self.options
        via = set(options.bridge_via)
        if fused_only:
            via -= {"terms"}
        if options.rels:
            via &= {"relations"}  # a filter on relation types: only typed paths bridge
        candidates = {}
        seed_entities = self._chunk_entities(seed) if via & {"entities", "relations"} else set()
        query_entities = set(self.query_entities)
        counts = self._popularity(seed_entities | query_entities)
        bridges = [
            e
            for e in seed_entities - query_entities
            if 1 < counts.get(e, 0) <= options.max_entity_chunks
        ]
        bridges.sort(key=lambda e: (counts[e], e))
        bridges = bridges[: options.max_bridge_entities]
        # what a good candidate adds: the seed's bridges and the question's other entities
        wanted = set(bridges) | (query_entities - seed_entities)
        self._wanted = {e: self._idf(counts.get(e, 1)) for e in wanted}
        if "entities" in via and bridges:
            marks = ",".join("?" * len(bridges))
            for chunk_id, entity_id in self.conn.execute(
                f"select distinct chunk_id, entity_id from mentions where entity_id in ({marks})",
                bridges,
            ):
                path = candidates.get(chunk_id)
                if path is None:
                    candidates[chunk_id] = {
                        "kind": "entity",
                        "hops": 1,
                        "factor": 1.0,
                        "entity": entity_id,
                        "rel": "MENTIONED_IN",
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

    def _adjacent_candidates(self, seed):
        """The chunks next to ``seed`` that read with it: the chunk after it when that one's
        first sentence refers back (``BACK_REFERENCES``), the chunk before it when its own
        first sentence does. Next to: in its document, or across documents of one numbered
        series (files named by consecutive numbers in one folder, such as the passages of
        an ordered corpus ``llm graphrag eval`` writes): the last chunk of the one before,
        the first of the one after."""
        place = self._chunk_place(seed)
        if place is None:
            return []
        doc_id, seq, path, last = place
        before = self._chunk_at(doc_id, seq - 1)
        after = self._chunk_at(doc_id, seq + 1)
        series = _series_neighbours(path)
        if before is None and seq == 0 and series[0]:
            before = self._end_chunk(series[0], last=True)
        if after is None and seq == last and series[1]:
            after = self._end_chunk(series[1], last=False)
        rows = self._chunk_rows([c for c in (seed, after) if c is not None])
        found = []
        if before is not None and _refers_back(rows[seed]["content"]):
            found.append(before)
        if after is not None and _refers_back(rows[after]["content"]):
            found.append(after)
        return found

    def _chunk_place(self, chunk_id):
        """``(doc id, seq, document path, the document's last seq)`` of a chunk, or None."""
        return self.conn.execute(
            "select c.doc_id, c.seq, d.path, (select max(seq) from chunks where doc_id = c.doc_id) "
            "from chunks c join docs d on d.id = c.doc_id where c.id = ?",
            [chunk_id],
        ).fetchone()

    def _chunk_at(self, doc_id, seq):
        row = self.conn.execute("select id from chunks where doc_id = ? and seq = ?", [doc_id, seq]).fetchone()
        return row[0] if row else None

    def _end_chunk(self, path, last):
        """The last (or first) chunk of the document at ``path``, or None."""
        row = self.conn.execute(
            "select c.id from chunks c join docs d on d.id = c.doc_id where d.path = ? "
            f"order by c.seq {'desc' if last else 'asc'} limit 1",
            [path],
        ).fetchone()
        return row[0] if row else None

    def _relation_candidates(self, bridges, candidates):
        """Chunks mentioning entities related to the seed's rarest bridge entities."""
        from .graph import traverse

        options = self.options
        reached = {}
        for entity_id in bridges[: options.relation_roots]:
            for row in traverse(
                self.conn, entity_id, options.hops - 1, direction="both", rels=options.rels
            ):
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
        marks = ",".join("?" * len(targets))
        for chunk_id, entity_id in self.conn.execute(
            f"select distinct chunk_id, entity_id from mentions where entity_id in ({marks})",
            targets,
        ):
            origin, parent, distance = reached[entity_id]
            hops = 1 + distance
            edge = rel_of.get((parent, entity_id)) or {
                "src": parent, "dst": entity_id, "rel": "related_to", "weight": None
            }
            rel = edge["rel"]
            factor = (
                HOP_SCORES.get(hops, 0.1)
                / HOP_SCORES[1]
                * REL_WEIGHTS.get(rel, DEFAULT_REL_WEIGHT)
            )
            if chunk_id in candidates and candidates[chunk_id]["factor"] >= factor:
                continue
            candidates[chunk_id] = {
                "kind": "relation",
                "hops": hops,
                "factor": factor,
                "entity": origin,
                "target": entity_id,
                "edge": edge,
                "rel": rel,
            }

    def _relations_between(self, reached):
        pairs = [(parent, target) for target, (_, parent, _) in reached.items()]
        found = {}
        for start in range(0, len(pairs), 400):
            chunk = pairs[start : start + 400]
            clause = " or ".join(
                "(src_id = ? and dst_id = ?) or (src_id = ? and dst_id = ?)" for _ in chunk
            )
            params = []
            for a, b in chunk:
                params += [a, b, b, a]
            rels = self.options.rels or []
            only = f" and rel in ({', '.join('?' for _ in rels)})" if rels else ""
            for src, dst, rel, weight in self.conn.execute(
                f"select src_id, dst_id, rel, weight from relations where ({clause}){only} "
                "order by rel = 'stated', weight desc",
                params + list(rels),
            ):
                edge = {"src": src, "dst": dst, "rel": rel, "weight": weight}
                for key in ((src, dst), (dst, src)):
                    found.setdefault(key, edge)
        return found

    def _term_candidates(self, seed, candidates):
        """Chunks sharing a seed word the question lacks (query-aware expansion).

        Adds them to ``candidates``; returns their BM25 scores for that expansion query.
        """
        row = self.conn.execute("select content from chunks where id = ?", [seed]).fetchone()
        if not row:
            return {}
        question = {_lemma(w) for w in self.words}
        seed_words = query_words(_best_sentence(row[0], question))
        seed_lemmas = {_lemma(w) for w in seed_words}
        bridge = [w for w in seed_words if _lemma(w) not in question]
        bridge = bridge[: self.options.max_bridge_terms]
        rest = [w for w in self.words if _lemma(w) not in seed_lemmas]
        if not bridge:
            return {}
        expression = fts_match(bridge)
        if rest:
            expression = f"({expression}) AND ({fts_match(bridge + rest)})"
        scores = {}
        for chunk_id, score in self.conn.execute(
            "select rowid, bm25(chunks_fts) from chunks_fts where chunks_fts match ? "
            "order by bm25(chunks_fts) limit ?",
            [expression, self.options.term_candidates],
        ):
            scores[chunk_id] = -score
            if chunk_id not in candidates or candidates[chunk_id]["factor"] < 1.0:
                candidates[chunk_id] = {
                    "kind": "term",
                    "hops": 1,
                    "factor": 1.0,
                    "terms": bridge,
                    "rel": "shares_term",
                }
        return scores

    def _rank_candidates(self, seed, candidates, term_scores):
        """Candidates by fit to question + seed: bridge BM25, cosine, entity overlap."""
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
            marks = ",".join("?" * len(ids))
            wmarks = ",".join("?" * len(wanted))
            for chunk_id, entity_id in self.conn.execute(
                f"select distinct chunk_id, entity_id from mentions where chunk_id in ({marks}) "
                f"and entity_id in ({wmarks})",
                ids + sorted(wanted),
            ):
                overlap[chunk_id] = overlap.get(chunk_id, 0.0) + wanted[entity_id]
        zero = np.zeros_like(target)
        matrix = np.stack([vectors.get(chunk_id, zero) for chunk_id in ids])
        cosines = matrix @ target
        factors = np.array([candidates[c]["factor"] for c in ids])
        values = (
            fit.get("bm25", 0.0) * np.array([term_scores.get(c, 0.0) for c in ids])
            + fit.get("cosine", 0.0) * cosines
            + fit.get("entities", 0.0) * np.array([overlap.get(c, 0.0) for c in ids])
        ) * factors
        if fit.get("coverage"):
            # only the first 2 x bridge_pool: each chunk costs an FTS5 lookup per word
            head = [ids[i] for i in np.argsort(-values, kind="stable")[: 2 * self.options.bridge_pool]]
            supplies = self._missing_weight(seed, head)[0]
            values = values + fit["coverage"] * np.array([supplies.get(c, 0.0) for c in ids]) * factors
        return by_fit(candidates, ids, values)

    def _vectors(self, ids):
        if not ids:
            return {}
        row = self.conn.execute("select id from collections where name = 'chunks'").fetchone()
        if not row:
            return {}
        marks = ",".join("?" * len(ids))
        rows = self.conn.execute(
            f"select id, embedding from embeddings where collection_id = ? and id in ({marks})",
            [row[0]] + [str(i) for i in ids],
        ).fetchall()
        return {int(i): np.frombuffer(blob, dtype="<f4") for i, blob in rows}

    # -- result -------------------------------------------------------------------------

    def result(self, weights):
        options = self.options
        if options.mode == "bm25":
            scores = {c: self.relevance[c] for c in self.bm25}
        elif options.mode == "vector":
            scores = {c: self.relevance[c] for c in self.vector}
        else:
            scores = {
                c: weights["semantic"] * self.relevance.get(c, 0.0)
                + weights["graph"] * self.bridge.get(c, 0.0)
                for c in set(self.relevance) | set(self.bridge)
            }
            if weights["graph"] and self.paths:
                self._below_seeds(scores, self._keep_places(scores, weights))
        order = sorted(scores, key=lambda c: (-scores[c], c))
        ranked = order[: options.k]
        if options.mode == "graph" and options.group_pages:
            grouped = self._group_pages(order, ranked)
            # each chunk takes the score of the place it gets, as the re-scorer's do, so
            # the list still falls by score (callers that sort keep the grouping); its own
            # is in ``signals.page``
            places = sorted((scores[c] for c in grouped), reverse=True)
            scores = dict(scores)
            for chunk_id, place in zip(grouped, places):
                if scores[chunk_id] != place:
                    self.moved[chunk_id] = scores[chunk_id]
                    scores[chunk_id] = place
            ranked = grouped
        rows = self._chunk_rows(ranked)
        chunks, explanations = [], []
        entity_ids = set(self.query_entities)
        edges = []
        for chunk_id in ranked:
            row = rows.get(chunk_id)
            if row is None:
                continue
            chunk = {
                "id": chunk_id,
                "doc_id": row["doc_id"],
                "path": row["path"],
                "section": row["section"],
                "snippet": _snippet(row["content"], options.snippet_chars),
                "score": round(scores[chunk_id], 6),
                "relevance": round(self.relevance.get(chunk_id, 0.0), 6),
            }
            if chunk_id in self.vector:
                chunk["semantic"] = round(self.vector[chunk_id][1], 6)
            if chunk_id in self.bm25:
                chunk["bm25"] = round(self.bm25[chunk_id][1], 6)
            path = self.paths.get(chunk_id) if weights["graph"] else None
            chunk["signals"] = self._signals(chunk_id, path, weights)
            chunk["hop"] = path["hops"] if path else 0
            if path:
                chunk["bridge"] = round(self.bridge[chunk_id], 6)
                chunk["via"] = {
                    key: path[key]
                    for key in ("kind", "seed", "entity", "target", "rel", "terms", "hops")
                    if key in path
                }
                edges.extend(_path_edges(path, chunk_id))
                entity_ids.update(e for e in (path.get("entity"), path.get("target")) if e)
            chunks.append(chunk)
            explanations.append(self._explain(chunk_id, path))
        entities = self._entity_rows(entity_ids)
        return {
            "chunks": chunks,
            "entities": entities,
            "edges": _dedupe(_only_rels(edges, options.rels)),
            "explanations": explanations,
            "mode": options.mode,
            "fusion": self.fusion,
        }

    def _group_pages(self, order, ranked):
        """``ranked`` (the first ``k`` of ``order``) with the first document's chunks
        first: up to ``page_fill`` of them, the ones below ``k`` taking the places of
        chunks whose document already came earlier (never a document's first chunk),
        then the chunks of the next ``group_pages`` - 1 documents behind each one's first."""
        options = self.options
        if not order:
            return ranked
        docs = {row[0]: row[1] for row in self._document_rows(order)}
        first = docs.get(order[0])
        held = sum(1 for c in ranked if docs.get(c) == first)
        extra = [c for c in order[len(ranked):] if docs.get(c) == first][: max(options.page_fill - held, 0)]
        if extra:
            seen, repeats = set(), []
            for chunk_id in ranked:
                doc = docs.get(chunk_id)
                if doc in seen and doc != first:
                    repeats.append(chunk_id)
                seen.add(doc)
            dropped = set(repeats[::-1][: len(extra)])
            ranked = [c for c in ranked if c not in dropped] + extra[: len(dropped)]
        return _gather_pages(ranked, docs, options.group_pages)

    def _signals(self, chunk_id, path, weights):
        """Every score that placed ``chunk_id``: each list's rank and score, the fused
        relevance and, for a chunk the graph brought, its bridge and fit."""
        signals = {}
        if chunk_id in self.bm25:
            rank, score = self.bm25[chunk_id]
            signals["bm25"] = {"rank": rank + 1, "score": round(score, 6)}
        if chunk_id in self.vector:
            rank, score = self.vector[chunk_id]
            signals["semantic"] = {"rank": rank + 1, "score": round(score, 6)}
            if self.dense:
                signals["semantic"]["vectors"] = "dense"
        signals["relevance"] = round(self.relevance.get(chunk_id, 0.0), 6)
        if chunk_id in self.document:
            signals["fused"] = round(self.fused.get(chunk_id, 0.0), 6)
            signals["document"] = self.document[chunk_id]
        if chunk_id in self.learned:
            signals["learned"] = self.learned[chunk_id]
        if chunk_id in self.moved:
            signals["page"] = {"grouped": True, "own_score": round(self.moved[chunk_id], 6)}
        if path:
            signals["graph"] = {
                "bridge": round(self.bridge[chunk_id], 6),
                "weight": weights["graph"],
                "fit": round(path.get("fit", 0.0), 3),
                "seed_rank": path["rank"] + 1,
            }
            if "coverage" in path:
                signals["graph"]["coverage"] = round(path["coverage"], 3)
        return signals

    def _keep_places(self, scores, weights):
        """The fused ranking's strongest chunks keep their places: its first ``keep_top``
        and every chunk of relevance at least ``keep_relevance`` score their relevance
        alone (the graph neither lifts nor displaces an independent match). Returns the
        lowest of their scores."""
        options = self.options
        floor = None
        for position, chunk_id in enumerate(self.order):
            if position >= options.keep_top and self.fused[chunk_id] < options.keep_relevance:
                break
            scores[chunk_id] = weights["semantic"] * self.relevance[chunk_id]
            self.paths.pop(chunk_id, None)
            self.bridge.pop(chunk_id, None)
            floor = scores[chunk_id]
        return floor

    def _below_seeds(self, scores, floor=None):
        """A chunk reached from a seed ranks below that seed (and below ``floor``), in
        candidate order."""
        for chunk_id, path in sorted(self.paths.items(), key=lambda item: item[1]["rank"]):
            ceiling = scores.get(path["seed"], 0.0)
            if floor is not None:
                ceiling = min(ceiling, floor)
            ceiling -= 1e-6 * (path["rank"] + 1)
            if scores.get(chunk_id, 0.0) > ceiling:
                scores[chunk_id] = ceiling

    def _explain(self, chunk_id, path):
        parts = []
        if chunk_id in self.vector:
            parts.append(f"semantic match ({self.vector[chunk_id][1]:.2f})")
        if chunk_id in self.bm25:
            parts.append(f"keyword match (BM25 rank {self.bm25[chunk_id][0] + 1})")
        document = self.document.get(chunk_id)
        if document and document["heading"]:
            parts.append(f"its title and headings hold {document['heading']:.0%} of the question")
        if document and document["page_support"]:
            parts.append(f"its page's other matches ({document['page_support']:.2f})")
        if document and document.get("names"):
            parts.append(f"the question names '{document['names']}', which it describes")
        if path:
            seed = path["seed"]
            if path["kind"] == "entity":
                name = self._entity_name(path["entity"])
                parts.append(f"1-hop via shared entity '{name}' from chunk {seed}")
            elif path["kind"] == "relation":
                edge = path["edge"]
                fact = " ".join(
                    [self._entity_name(edge["src"]), edge["rel"], self._entity_name(edge["dst"])]
                )
                name = self._entity_name(path["entity"])
                parts.append(
                    f"{path['hops']}-hop via shared entity '{name}' and relation "
                    f"'{fact}' from chunk {seed}"
                )
            elif path["kind"] == "adjacent":
                parts.append(f"next to chunk {seed}, read with it (a pronoun refers back)")
            else:
                terms = ", ".join(path["terms"][:3])
                parts.append(f"1-hop via shared terms '{terms}' from chunk {seed}")
        return "Selected by " + " + ".join(parts) if parts else "Selected"

    def _entity_name(self, entity_id):
        row = self.conn.execute("select name from entities where id = ?", [entity_id]).fetchone()
        return row[0] if row else str(entity_id)

    def _chunk_rows(self, ids):
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        cursor = self.conn.execute(
            "select chunks.id, chunks.doc_id, docs.path, chunks.section, chunks.content "
            f"from chunks join docs on docs.id = chunks.doc_id where chunks.id in ({marks})",
            list(ids),
        )
        columns = [d[0] for d in cursor.description]
        return {row[0]: dict(zip(columns, row)) for row in cursor.fetchall()}

    def _entity_rows(self, ids):
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        rows = self.conn.execute(
            f"select id, name, type from entities where id in ({marks}) order by id",
            sorted(ids),
        ).fetchall()
        return [
            {
                "id": i,
                "name": name,
                "type": type_,
                "role": "query" if i in self.query_entities else "bridge",
            }
            for i, name, type_ in rows
        ]


# a code-like token: dotted (``os.path``), snake_case, lowerCamelCase (``getLogger``, not
# "pH", "mRNA", "iPhone", "macOS"), a call ``name()`` or anything in backticks;
# UpperCamelCase is left out: "PyPI", "GitHub" are names too
_CODE_TOKEN = re.compile(
    r"`([^`\s]+)`|\b([A-Za-z_]\w+(?:\.[A-Za-z_]\w*)+|[A-Za-z]\w*_\w+|[a-z]{2,}[A-Z][a-z]\w*|\w+(?=\(\)))"
)
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+)$", re.MULTILINE)  # a Markdown heading line
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n\s*\n")


def list_peak(ranks, depth):
    """How far a ranked list's best score stands out from the rest of its head.

    The best score's distance above the mean of the first ``depth + 1`` scores, in their
    standard deviations, over 5: near 0 for a flat list, near 1 when one chunk is far
    ahead (the z-score of the best of 30 can reach about 5). ``ranks`` maps chunk ids to
    ``(rank, score)``, higher scores better (negated BM25 scores, cosines).
    """
    scores = np.array(sorted((score for _, score in ranks.values()), reverse=True)[: depth + 1])
    if len(scores) < 2:
        return 0.0
    spread = float(scores.std())
    if spread <= 0:
        return 0.0
    return max(0.0, float(scores[0] - scores.mean()) / spread / 5)


_HEADINGS = collections.OrderedDict()  # (chunk hash, section, title) -> heading lemmas
_HEADINGS_SIZE = 100_000
_HEADINGS_LOCK = threading.Lock()


def _heading_lemmas(read_texts, rows):
    """``{chunk id: frozenset of lemmas}`` of each chunk's document title, its section
    and the Markdown headings in it. ``rows``: ``(id, doc id, hash, section, title)``;
    ``read_texts(ids)``: ``{id: content}``. Kept per chunk hash, so a chunk's text is read
    once."""
    out, missing = {}, {}
    for chunk_id, _, digest, section, title in rows:
        key = (digest, section, title) if digest else None
        found = _HEADINGS.get(key) if key else None
        if found is None:
            missing[chunk_id] = (key, section, title)
        else:
            out[chunk_id] = found
    if missing:
        texts = read_texts(list(missing))
        for chunk_id, (key, section, title) in missing.items():
            text = " ".join([title or "", section or "", *_HEADING.findall(texts.get(chunk_id) or "")])
            lemmas = out[chunk_id] = frozenset(_lemma(w) for w in query_words(text))
            if key:
                with _HEADINGS_LOCK:
                    _HEADINGS[key] = lemmas
                    while len(_HEADINGS) > _HEADINGS_SIZE:
                        _HEADINGS.popitem(last=False)
    return out


def _gather_pages(ranked, docs, pages):
    """``ranked`` with the chunks of its first ``pages`` documents (``docs``: chunk id ->
    doc id) each moved up behind that document's first chunk; the rest in order."""
    leading = list(dict.fromkeys(docs.get(c) for c in ranked))[:pages]
    grouped = [c for doc in leading for c in ranked if docs.get(c) == doc]
    held = set(grouped)
    return grouped + [c for c in ranked if c not in held]


def _best_sentence(text, lemmas):
    """The sentence of ``text`` sharing most words with ``lemmas`` (the whole text when
    it is one sentence): a long chunk bridges from the passage that matched."""
    sentences = [s for s in _SENTENCE.split(text or "") if s.strip()]
    if len(sentences) <= 1:
        return text or ""

    def overlap(sentence):
        return len({_lemma(w) for w in query_words(sentence)} & lemmas)

    return max(sentences, key=overlap)


def _snippet(text, limit):
    text = " ".join((text or "").split())
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return cut + "…"


def _path_edges(path, chunk_id):
    """Edges of a bridge path: mentions as seed 003 ``MENTIONED_IN``, relations as-is."""
    seed = path["seed"]
    if path["kind"] == "entity":
        entity = path["entity"]
        return [
            {"src": entity, "dst": seed, "rel": "MENTIONED_IN", "kind": "mention"},
            {"src": entity, "dst": chunk_id, "rel": "MENTIONED_IN", "kind": "mention"},
        ]
    if path["kind"] == "relation":
        return [
            {"src": path["entity"], "dst": seed, "rel": "MENTIONED_IN", "kind": "mention"},
            dict(path["edge"], kind=relation_kind(path["edge"]["rel"])),
            {"src": path["target"], "dst": chunk_id, "rel": "MENTIONED_IN", "kind": "mention"},
        ]
    if path["kind"] == "adjacent":
        return [{"src": seed, "dst": chunk_id, "rel": "NEXT_CHUNK", "kind": "adjacent"}]
    return []


def by_fit(candidates, ids, values):
    """``[(chunk id, path with its fit)]`` of a seed's candidates, best fit first; a
    neighbour that reads with the seed (``adjacent``) comes before the rest: its own
    continuation is the closest evidence a seed has (MultiRC R@10 both 0.362 -> 0.450
    dev-even, 0.354 -> 0.452 dev-odd)."""
    scored = sorted(
        zip(values.tolist(), ids),
        key=lambda item: (candidates[item[1]]["kind"] != "adjacent", -item[0], item[1]),
    )
    return [(chunk_id, dict(candidates[chunk_id], fit=value)) for value, chunk_id in scored]


def _refers_back(text):
    """Whether ``text``'s first sentence holds a pronoun of ``BACK_REFERENCES``."""
    first = _SENTENCE.split(text.strip(), maxsplit=1)[0]
    return not BACK_REFERENCES.isdisjoint(_WORD.findall(first.lower()))


def _series_neighbours(path):
    """The paths before and after ``path`` in its numbered series (``00041.txt`` →
    ``00040.txt``, ``00042.txt``: same folder, width and suffix), None where there is none."""
    name = path.replace("\\", "/").rpartition("/")[2]
    stem, dot, suffix = name.partition(".")
    if not stem.isdigit():
        return None, None
    number, width = int(stem), len(stem)
    prefix = path[: len(path) - len(name)]
    before, after = (f"{prefix}{n:0{width}d}{dot}{suffix}" for n in (number - 1, number + 1))
    return (before if number else None), after


def _only_rels(edges, rels):
    """The edges whose ``rel`` is one of ``rels`` (all of them when ``rels`` is empty)."""
    if not rels:
        return edges
    wanted = set(rels)
    return [edge for edge in edges if edge["rel"] in wanted]


def _dedupe(edges):
    seen = set()
    out = []
    for edge in edges:
        key = (edge["src"], edge["dst"], edge["rel"], edge["kind"])
        if key not in seen:
            seen.add(key)
            out.append(edge)
    return out


def vector_search(db, vector, k, options=None):
    """``[(chunk_id, cosine distance)]`` of the ``k`` chunks nearest ``vector``, nearest first.

    An exact ``chunk_vec`` scan, unless the database holds at least
    ``options.bit_index_min_chunks`` chunk vectors: then the cached ``BitIndex`` of the
    chunk vectors picks ``options.bit_candidates`` by Hamming distance and those are
    rescored exactly with ``vec_distance_cosine``.
    """
    options = options or RetrievalOptions()
    conn = getattr(db, "conn", db)
    index = chunk_bit_index(conn, options.bit_index_min_chunks)
    if index is None:
        return conn.execute(
            "select chunk_id, distance from chunk_vec where embedding match ? and k = ? "
            "order by distance",
            [np.asarray(vector, dtype="<f4").tobytes(), k],
        ).fetchall()
    return index.search(conn, vector, k, max(options.bit_candidates, k))


# Rescoring reads llm's embeddings table, which the triggers mirror into chunk_vec: a
# primary-key lookup there is about 30 times faster than a vec0 point query.
_RESCORE = (
    "select cast(id as integer), vec_distance_cosine(embedding, ?) from embeddings "
    "where collection_id = (select id from collections where name = 'chunks') "
    "and id in (select value from json_each(?))"
)


class BitIndex:
    """Sign bits of vectors held in memory, for approximate KNN with exact rescoring.

    A Hamming scan over the bits (those of ``vec_quantize_binary``) picks candidates,
    which ``search`` rescores with exact cosine distance on their float32 vectors in
    the ``embeddings`` table. ``bits`` is column-major, ``(words, rows)`` uint64: numpy
    then XORs long rows of one word instead of many four-word rows.
    """

    block = 1 << 16  # rows scanned at a time, so the temporaries stay in cache

    def __init__(self, ids, bits):
        self.ids = np.asarray(ids, dtype=np.int64)
        self.bits = np.ascontiguousarray(np.asarray(bits, dtype=np.uint64).T)

    @staticmethod
    def sign_bits(vectors):
        """One bit per dimension (set when positive), packed into rows of uint64 words."""
        vectors = np.atleast_2d(np.asarray(vectors))
        packed = np.packbits(vectors > 0, axis=1, bitorder="little")
        pad = -packed.shape[1] % 8
        if pad:
            packed = np.pad(packed, ((0, 0), (0, pad)))
        return np.ascontiguousarray(packed).view(np.uint64)

    @classmethod
    def from_embeddings(cls, conn, collection="chunks", batch=2048):
        """The index of a collection's vectors in llm's ``embeddings`` table."""
        cursor = conn.execute(
            "select cast(id as integer), embedding from embeddings where collection_id = "
            "(select id from collections where name = ?) and id glob '[0-9]*'",
            [collection],
        )
        ids, bits = [], []
        while rows := cursor.fetchmany(batch):
            ids.append(np.array([row[0] for row in rows], dtype=np.int64))
            floats = np.frombuffer(b"".join(row[1] for row in rows), dtype="<f4")
            bits.append(cls.sign_bits(floats.reshape(len(rows), -1)))
        if not ids:
            return cls(np.zeros(0, dtype=np.int64), np.zeros((0, 1), dtype=np.uint64))
        return cls(np.concatenate(ids), np.concatenate(bits))

    def __len__(self):
        return len(self.ids)

    def distances(self, vector):
        """Hamming distance from ``vector``'s sign bits to every row, as uint16."""
        query = self.sign_bits(vector)[0]
        words, rows = self.bits.shape
        out = np.empty(rows, dtype=np.uint16)
        size = min(self.block, rows)
        xor = np.empty(size, dtype=np.uint64)
        count = np.empty(size, dtype=np.uint8)
        for start in range(0, rows, size):
            stop = min(start + size, rows)
            n = stop - start
            total = out[start:stop]
            total[:] = 0
            for word in range(words):
                np.bitwise_xor(self.bits[word, start:stop], query[word], out=xor[:n])
                np.bitwise_count(xor[:n], out=count[:n])
                total += count[:n]
        return out

    def candidates(self, vector, n):
        """Ids of the ``n`` rows nearest ``vector`` in Hamming distance; ties go to the
        rows indexed first."""
        if n >= len(self.ids):
            return self.ids.tolist()
        if n < 1:
            return []
        distances = self.distances(vector)
        # distances are small integers: the n-th smallest from a histogram, no sort
        cutoff = int(np.searchsorted(np.cumsum(np.bincount(distances)), n))
        below = np.flatnonzero(distances < cutoff)
        ties = np.flatnonzero(distances == cutoff)[: n - len(below)]
        return self.ids[np.concatenate([below, ties])].tolist()

    def search(self, conn, vector, k, candidates):
        """``[(id, cosine distance)]`` of the ``k`` nearest of the best ``candidates``."""
        ids = self.candidates(vector, candidates)
        if not ids:
            return []
        rows = conn.execute(
            _RESCORE, [np.asarray(vector, dtype="<f4").tobytes(), json.dumps([str(i) for i in ids])]
        ).fetchall()
        return sorted(rows, key=lambda row: (row[1], row[0]))[:k]


class _Entry:
    def __init__(self, stamp, count):
        self.stamp = stamp
        self.count = count
        self.index = None


class BitIndexCache:
    """The chunk ``BitIndex`` of recently queried databases, per database file.

    An entry is valid while ``retrieval_log.database_stamp`` is unchanged: any commit to the
    file makes the next search count and, when needed, build again. Thread-safe: one
    build per file at a time, other files unaffected.
    """

    def __init__(self, size=4):
        self.size = size
        self._entries = collections.OrderedDict()  # file -> _Entry
        self._locks = {}  # file -> lock held while checking or building its entry
        self._lock = threading.Lock()

    def get(self, conn, min_chunks):
        """The index of ``conn``'s chunk vectors if there are at least ``min_chunks``."""
        from .retrieval_log import database_stamp

        if min_chunks is None or getattr(conn, "in_transaction", False):
            return None  # uncommitted writes would not be in a cached index
        stamp = database_stamp(conn)
        if stamp is None:  # in-memory: no way to tell when it changes
            return None
        file = stamp[0]
        with self._lock:
            lock = self._locks.setdefault(file, threading.Lock())
        with lock:
            with self._lock:
                entry = self._entries.get(file)
            if entry is None or entry.stamp != stamp:
                entry = _Entry(stamp, _count_chunk_vectors(conn))
            if entry.count >= min_chunks and entry.index is None:
                entry.index = BitIndex.from_embeddings(conn)
                entry.count = len(entry.index)
            with self._lock:
                self._entries[file] = entry
                self._entries.move_to_end(file)
                while len(self._entries) > self.size:
                    self._entries.popitem(last=False)
        return entry.index if entry.count >= min_chunks else None

    def clear(self):
        with self._lock:
            self._entries.clear()


def _count_chunk_vectors(conn):
    return conn.execute(
        "select count(*) from embeddings where collection_id = "
        "(select id from collections where name = 'chunks') and id glob '[0-9]*'"
    ).fetchone()[0]


BIT_INDEXES = BitIndexCache()


def chunk_bit_index(db, min_chunks):
    """The cached bit index of ``db``'s chunk vectors, or None below ``min_chunks``."""
    return BIT_INDEXES.get(getattr(db, "conn", db), min_chunks)
