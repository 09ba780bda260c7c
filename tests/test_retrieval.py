"""hybrid_query over a small graph written by hand into a real graphrag database."""

import json

import jsonschema
import numpy as np
import pytest

from llm_graphrag.db import open_database
from llm_graphrag.embeddings import embedder_for, write_embeddings
from llm_graphrag.fulltext import fts_match, query_words
from llm_graphrag.retrieval import (
    RESCORE_FEATURES,
    BitIndex,
    RetrievalOptions,
    chunk_bit_index,
    hybrid_query,
    list_peak,
    vector_search,
)

TEXTS = [
    "Damming a river can cause a lake to form.",
    "Other lakes formed throughout the region caused by stream blockages.",
    "Rivers flow downhill to the sea.",
    "Beavers build dams from branches and mud.",
    "A reservoir stores water for cities.",
    "Mountains are formed by moving tectonic plates.",
]
# entity id -> (name, norm, chunk ids mentioning it)
ENTITIES = {
    1: ("dam", "dam", [1, 4]),
    2: ("river", "river", [1, 3]),
    3: ("lake", "lake", [1, 2]),
    4: ("stream blockage", "streamblockage", [2]),
    5: ("region", "region", [2]),
    6: ("sea", "sea", [3]),
    7: ("beaver", "beaver", [4]),
    8: ("reservoir", "reservoir", [5]),
    9: ("water", "water", [5]),
    10: ("mountain", "mountain", [6]),
}
# a reservoir is a lake: the 2-hop path from the seed's "lake" to chunk 5
RELATIONS = [(8, 3, "is_a", 0.9), (2, 6, "related_to", 0.3)]
QUESTION = "What can damming a river cause?"


@pytest.fixture
def db(tmp_path, user_path):
    db = open_database(tmp_path / "graph.db")
    with db.atomic():
        for i, text in enumerate(TEXTS, start=1):
            db["docs"].insert({"id": i, "path": f"/facts/{i}.txt", "title": f"Fact {i}"})
            db["chunks"].insert(
                {"id": i, "doc_id": i, "seq": 0, "content": text, "section": "Facts"}
            )
        write_embeddings(db, "chunks", range(1, 7), embedder_for(db).encode(TEXTS), TEXTS)
        for entity_id, (name, norm, chunk_ids) in ENTITIES.items():
            db["entities"].insert(
                {"id": entity_id, "type": "concept", "name": name, "norm": norm,
                 "popularity": len(chunk_ids)}
            )
            for chunk_id in chunk_ids:
                db["mentions"].insert(
                    {"entity_id": entity_id, "doc_id": chunk_id, "chunk_id": chunk_id, "surface": name}
                )
        for src, dst, rel, weight in RELATIONS:
            db["relations"].insert({"src_id": src, "dst_id": dst, "rel": rel, "weight": weight})
    return db


def ids(result):
    return [chunk["id"] for chunk in result["chunks"]]


def test_query_words_and_fts_match():
    assert query_words("What can damming a river cause?") == ["damming", "river", "cause"]
    assert query_words("what is it") == ["what", "is", "it"]
    assert fts_match(['say "hi"', "x"]) == '"say hi" OR "x"'


def test_bm25_mode(db):
    result = hybrid_query(db, QUESTION, RetrievalOptions(mode="bm25", k=3))
    # porter stems: damming and dams meet at "dam", river and rivers at "river"
    assert ids(result) == [1, 3, 4]
    assert result["explanations"] == [
        "Selected by keyword match (BM25 rank 1)",
        "Selected by keyword match (BM25 rank 2)",
        "Selected by keyword match (BM25 rank 3)",
    ]
    assert result["edges"] == []
    assert result["entities"] == []
    assert [set(chunk) for chunk in result["chunks"]] == [
        {"id", "doc_id", "path", "section", "snippet", "score", "relevance", "bm25", "signals", "hop"}
    ] * 3
    assert [chunk["signals"]["bm25"]["rank"] for chunk in result["chunks"]] == [1, 2, 3]
    assert [chunk["signals"]["bm25"]["score"] for chunk in result["chunks"]] == [
        chunk["bm25"] for chunk in result["chunks"]
    ]
    assert result["fusion"] == {"keyword": 1.0}
    first = result["chunks"][0]
    assert (first["id"], first["doc_id"], first["path"], first["section"], first["snippet"]) == (
        1,
        1,
        "/facts/1.txt",
        "Facts",
        "Damming a river can cause a lake to form.",
    )
    assert first["score"] == first["relevance"] == 1.0


def test_vector_mode_ranks_by_cosine(db):
    result = hybrid_query(db, QUESTION, RetrievalOptions(mode="vector", k=6))
    semantic = [chunk["semantic"] for chunk in result["chunks"]]
    assert len(semantic) == 6
    assert semantic == sorted(semantic, reverse=True)
    assert ids(result)[0] == 1
    assert all(e.startswith("Selected by semantic match (") for e in result["explanations"])


def test_hybrid_mode_has_no_graph(db):
    result = hybrid_query(db, QUESTION, RetrievalOptions(mode="hybrid", k=6))
    assert sorted(ids(result)) == [1, 2, 3, 4, 5, 6]
    assert ids(result)[0] == 1
    assert result["chunks"][0]["relevance"] == 1.0
    assert all("via" not in chunk for chunk in result["chunks"])
    assert result["edges"] == []
    assert set(result) == {"chunks", "entities", "edges", "explanations", "mode", "fusion"}


# The bridging arithmetic with round numbers: unweighted fusion, full graph weight, one
# seed, every candidate kept, only the seed's place kept.
PLAIN = dict(
    weights={"graph": 1.0}, seed_sharpness=4.0, bridge_decay=0.8, vector_weight=1.0,
    peak_boost=0.0, rrf_k=3, seeds=1, bridge_pool=20, keep_top=1, keep_relevance=1.01,
)


def test_graph_mode_bridges_from_the_seed(db):
    result = hybrid_query(db, QUESTION, RetrievalOptions(mode="graph", k=6, **PLAIN))
    # the seed (first in both lists) keeps the top; what it reaches follows it
    assert ids(result) == [1, 2, 6, 3, 4, 5]
    summary = [
        (chunk["id"], chunk["score"], chunk["relevance"], chunk.get("bridge"), chunk["hop"], chunk.get("via"))
        for chunk in result["chunks"]
    ]
    assert summary == [
        (1, 1.0, 1.0, None, 0, None),
        # bridge 1.0 = seed confidence 1.0 x decay 0.8 ** 0: ranked just below the seed
        (2, 0.999999, 0.685714, 1.0, 1,
         {"kind": "entity", "seed": 1, "entity": 3, "rel": "MENTIONED_IN", "hops": 1}),
        (6, 0.999998, 0.222222, 0.8, 1,
         {"kind": "term", "seed": 1, "rel": "shares_term", "terms": ["lake", "form"], "hops": 1}),
        (3, 0.733333, 0.733333, None, 0, None),
        (4, 0.619048, 0.619048, None, 0, None),
        # 0.219429 = 0.8 ** 2 (third candidate) x hop 0.4 / 0.7 x default relation weight 0.6
        (5, 0.469429, 0.25, 0.219429, 2,
         {"kind": "relation", "seed": 1, "entity": 3, "target": 8, "rel": "is_a", "hops": 2}),
    ]
    assert result["explanations"][1:3] == [
        "Selected by semantic match (0.41) + keyword match (BM25 rank 4) + "
        "1-hop via shared entity 'lake' from chunk 1",
        "Selected by semantic match (0.16) + 1-hop via shared terms 'lake, form' from chunk 1",
    ]
    assert result["explanations"][5].endswith(
        "+ 2-hop via shared entity 'lake' and relation 'reservoir is_a lake' from chunk 1"
    )
    assert result["entities"] == [
        {"id": 1, "name": "dam", "type": "concept", "role": "query"},
        {"id": 2, "name": "river", "type": "concept", "role": "query"},
        {"id": 3, "name": "lake", "type": "concept", "role": "bridge"},
        {"id": 8, "name": "reservoir", "type": "concept", "role": "bridge"},
    ]
    assert result["edges"] == [
        {"src": 3, "dst": 1, "rel": "MENTIONED_IN", "kind": "mention"},
        {"src": 3, "dst": 2, "rel": "MENTIONED_IN", "kind": "mention"},
        {"src": 8, "dst": 3, "rel": "is_a", "weight": 0.9, "kind": "typed"},
        {"src": 8, "dst": 5, "rel": "MENTIONED_IN", "kind": "mention"},
    ]


def test_graph_mode_rels_filter_and_hops(db):
    only_uses = hybrid_query(db, QUESTION, RetrievalOptions(k=6, rels=["uses"]))
    # No "uses" relation: nothing is reached through the graph, and no edge is returned.
    assert all("via" not in chunk for chunk in only_uses["chunks"])
    assert only_uses["edges"] == []
    # rels filters the traversal (only is_a paths bridge, no shared-entity ones) and the
    # edges returned (only is_a ones).
    only_is_a = hybrid_query(db, QUESTION, RetrievalOptions(k=6, rels=["is_a"]))
    assert [chunk["via"]["kind"] for chunk in only_is_a["chunks"] if "via" in chunk] == ["relation"]
    assert only_is_a["edges"] == [{"src": 8, "dst": 3, "rel": "is_a", "weight": 0.9, "kind": "typed"}]
    with_mentions = hybrid_query(db, QUESTION, RetrievalOptions(k=6, rels=["is_a", "MENTIONED_IN"]))
    assert {edge["rel"] for edge in with_mentions["edges"]} == {"is_a", "MENTIONED_IN"}
    one_hop = hybrid_query(db, QUESTION, RetrievalOptions(k=6, hops=1))
    assert all(chunk.get("via", {}).get("hops", 1) == 1 for chunk in one_hop["chunks"])
    no_graph = hybrid_query(db, QUESTION, RetrievalOptions(k=6, hops=0))
    assert ids(no_graph) == ids(hybrid_query(db, QUESTION, RetrievalOptions(k=6, mode="hybrid")))


def test_strong_fused_matches_keep_their_places(db):
    hybrid = ids(hybrid_query(db, QUESTION, RetrievalOptions(k=6, mode="hybrid", **PLAIN)))
    assert hybrid == [1, 3, 2, 4, 5, 6]
    # only the seed's place kept: what it reaches through the graph follows it
    assert ids(hybrid_query(db, QUESTION, RetrievalOptions(k=6, **PLAIN))) == [1, 2, 6, 3, 4, 5]
    # the first two keep their places: chunk 3 (second in the fusion) is not displaced
    kept = hybrid_query(db, QUESTION, RetrievalOptions(k=6, **dict(PLAIN, keep_top=2)))
    assert ids(kept) == [1, 3, 2, 6, 4, 5]
    # a kept chunk scores its relevance alone, and carries no graph path
    assert [(c["id"], c["score"], c["hop"]) for c in kept["chunks"][:3]] == [
        (1, 1.0, 0), (3, 0.733333, 0), (2, 0.733332, 1)
    ]
    # so does every chunk at least keep_relevance relevant (3: 0.733, 2: 0.686, 4: 0.619):
    # chunk 6, which the graph lifted above 3 and 4, now follows them
    by_relevance = hybrid_query(db, QUESTION, RetrievalOptions(k=6, **dict(PLAIN, keep_relevance=0.6)))
    assert ids(by_relevance) == [1, 3, 2, 4, 6, 5]
    assert [c["hop"] for c in by_relevance["chunks"]] == [0, 0, 0, 0, 1, 2]


def test_only_a_confident_seed_expands(db):
    # the seed is first in both lists (relevance 1.0): it expands unless asked for more
    assert hybrid_query(db, QUESTION, RetrievalOptions(k=6))["chunks"][0]["relevance"] == 1.0
    doubtful = hybrid_query(db, QUESTION, RetrievalOptions(k=6, seed_min_relevance=1.01))
    assert ids(doubtful) == ids(hybrid_query(db, QUESTION, RetrievalOptions(k=6, mode="hybrid")))
    assert doubtful["edges"] == [] and all("graph" not in c["signals"] for c in doubtful["chunks"])


def test_cooccurrence_bridges_only_when_asked_for(db):
    # lake related_to mountain (named in one sentence somewhere): no specific evidence
    db["relations"].insert({"src_id": 3, "dst_id": 10, "rel": "related_to", "weight": 0.9})
    options = dict(PLAIN, bridge_via=("relations",))
    typed = hybrid_query(db, QUESTION, RetrievalOptions(k=6, **options))
    assert [(c["id"], c["via"]["rel"]) for c in typed["chunks"] if "via" in c] == [(5, "is_a")]
    asked = hybrid_query(db, QUESTION, RetrievalOptions(k=6, rels=["related_to"], **options))
    assert [(c["id"], c["via"]["rel"]) for c in asked["chunks"] if "via" in c] == [(6, "related_to")]
    assert asked["edges"] == [{"src": 3, "dst": 10, "rel": "related_to", "weight": 0.9, "kind": "cooccurrence"}]


def test_a_stated_edge_bridges_only_when_asked_for_and_says_its_kind(db):
    # lake stated mountain (a clause joins the two with a verb phrase of its own): no
    # named relation, so it bridges as co-occurrence does, only when ``rels`` names it
    db["relations"].insert({"src_id": 3, "dst_id": 10, "rel": "stated", "weight": 0.9})
    options = dict(PLAIN, bridge_via=("relations",))
    typed = hybrid_query(db, QUESTION, RetrievalOptions(k=6, **options))
    assert [(c["id"], c["via"]["rel"]) for c in typed["chunks"] if "via" in c] == [(5, "is_a")]
    asked = hybrid_query(db, QUESTION, RetrievalOptions(k=6, rels=["stated"], **options))
    assert [(c["id"], c["via"]["rel"]) for c in asked["chunks"] if "via" in c] == [(6, "stated")]
    assert asked["edges"] == [{"src": 3, "dst": 10, "rel": "stated", "weight": 0.9, "kind": "stated"}]


def test_graph_weight_zero_is_hybrid(db):
    graph = hybrid_query(db, QUESTION, RetrievalOptions(k=6, weights={"graph": 0.0}))
    assert ids(graph) == ids(hybrid_query(db, QUESTION, RetrievalOptions(k=6, mode="hybrid")))
    assert graph["edges"] == []


def test_weights_from_config(db):
    db["graphrag_settings"].upsert(
        {"key": "retrieval", "value": json.dumps({"weights": {"graph": 0.0}})}, pk="key"
    )
    result = hybrid_query(db, QUESTION, RetrievalOptions(k=6))
    assert result["edges"] == []
    assert all("via" not in chunk for chunk in result["chunks"])


def test_k_limits_results(db):
    result = hybrid_query(db, QUESTION, RetrievalOptions(k=2))
    # the fused ranking's first two keep their places: the graph's chunk 2 comes third
    assert ids(result) == [1, 3]
    assert ids(hybrid_query(db, QUESTION, RetrievalOptions(k=2, mode="hybrid"))) == [1, 3]
    assert len(result["explanations"]) == 2
    assert result["edges"] == []
    assert ids(hybrid_query(db, QUESTION, RetrievalOptions(k=3))) == [1, 3, 2]


def test_no_match_returns_empty_lists(db):
    result = hybrid_query(db, "zzzz qqqq", RetrievalOptions(mode="bm25"))
    assert result == {
        "chunks": [], "entities": [], "edges": [], "explanations": [], "mode": "bm25", "fusion": {}
    }


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"mode": "magic"}, "mode must be one of bm25, vector, hybrid, graph, not 'magic'"),
        ({"bridge_via": ("entities", "telepathy")}, "bridge_via: unknown bridge 'telepathy'"),
        ({"k": 0}, "k must be at least 1"),
        ({"keep_top": -1}, "keep_top and bridge_pool must be at least 0"),
    ],
)
def test_options_are_checked(kwargs, message):
    with pytest.raises(ValueError) as ex:
        RetrievalOptions(**kwargs)
    assert str(ex.value) == message


def test_tool_contract(db):
    from llm_graphrag.tools import TOOLS

    tool = TOOLS["hybrid_query"]
    result = tool(db, {"q": QUESTION, "k": 3})
    jsonschema.validate(result, tool.output_schema)
    # the fused ranking's first three keep their places (keep_top 3)
    assert ids(result) == [1, 3, 2]


DIM = 256


def unit_vectors(count, seed):
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((count, DIM)).astype("<f4")
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def add_chunks(db, start, vectors):
    ids = list(range(start, start + len(vectors)))
    with db.conn:
        for i in ids:
            db.conn.execute("insert into docs (id, path) values (?, ?)", [i, f"/random/{i}"])
            db.conn.execute(
                "insert into chunks (id, doc_id, seq, content) values (?, ?, 0, ?)",
                [i, i, f"chunk {i}"],
            )
        write_embeddings(db, "chunks", ids, vectors)


@pytest.fixture
def vector_db(tmp_path, user_path):
    """300 chunks with random unit vectors written through ``write_embeddings``."""
    db = open_database(tmp_path / "vectors.db")
    add_chunks(db, 1, unit_vectors(300, seed=7))
    return db


EXACT = RetrievalOptions(bit_index_min_chunks=None)


def test_bit_index_returns_the_exact_top_k(vector_db):
    vectors = unit_vectors(300, seed=7)
    bits = RetrievalOptions(bit_index_min_chunks=0, bit_candidates=150)
    for chunk_id in (1, 42, 300):
        exact = vector_search(vector_db, vectors[chunk_id - 1], 10, EXACT)
        found = vector_search(vector_db, vectors[chunk_id - 1], 10, bits)
        assert found == exact
        assert found[0] == (chunk_id, 0.0)
    assert len(chunk_bit_index(vector_db, 0)) == 300


def test_vector_mode_with_bit_index_matches_exact_scan(db):
    options = RetrievalOptions(mode="vector", k=6, bit_index_min_chunks=0)
    forced = hybrid_query(db, QUESTION, options)
    assert chunk_bit_index(db, 0) is not None
    assert forced == hybrid_query(db, QUESTION, RetrievalOptions(mode="vector", k=6))
    assert [(chunk["id"], chunk["semantic"]) for chunk in forced["chunks"]] == [
        (1, 0.867393), (2, 0.407589), (3, 0.398548), (4, 0.364286), (5, 0.244071), (6, 0.16059)
    ]


def test_bit_index_cache_follows_writes(vector_db):
    new = unit_vectors(1, seed=8)[0]
    options = RetrievalOptions(bit_index_min_chunks=0)
    before = vector_search(vector_db, new, 3, options)
    assert before == vector_search(vector_db, new, 3, EXACT)
    assert before[0][0] != 301
    index = chunk_bit_index(vector_db, 0)
    assert chunk_bit_index(vector_db, 0) is index  # nothing written: cached
    add_chunks(vector_db, 301, [new])
    after = vector_search(vector_db, new, 3, options)
    assert after == [(301, 0.0)] + before[:2]
    assert chunk_bit_index(vector_db, 0) is not index
    assert len(chunk_bit_index(vector_db, 0)) == 301


def test_threshold_switches_between_exact_scan_and_bit_index(vector_db):
    query = unit_vectors(1, seed=9)[0]
    exact = vector_search(vector_db, query, 10, EXACT)
    # only 10 candidates by Hamming distance: not the exact top 10 for a random query
    approximate = chunk_bit_index(vector_db, 300).search(vector_db.conn, query, 10, 10)
    assert approximate != exact
    assert [row[0] for row in approximate] != [row[0] for row in exact]
    below = RetrievalOptions(bit_index_min_chunks=301, bit_candidates=10)
    assert chunk_bit_index(vector_db, 301) is None
    assert vector_search(vector_db, query, 10, below) == exact
    at = RetrievalOptions(bit_index_min_chunks=300, bit_candidates=10)
    assert vector_search(vector_db, query, 10, at) == approximate
    # default threshold (100,000 chunks): a 300-chunk database keeps the exact scan
    assert vector_search(vector_db, query, 10, RetrievalOptions(bit_candidates=10)) == exact


def test_no_bit_index_inside_a_transaction_or_in_memory(vector_db, user_path):
    with vector_db.conn:
        vector_db.conn.execute("update chunks set content = 'changed' where id = 1")
        assert chunk_bit_index(vector_db, 0) is None
    assert chunk_bit_index(vector_db, 0) is not None
    assert chunk_bit_index(open_database(":memory:"), 0) is None


def test_bit_index_sign_bits_and_hamming_distances(tmp_path):
    from llm_graphrag.db import connect

    conn = connect(tmp_path / "bits.db")
    vectors = unit_vectors(40, seed=3)
    quantized = [
        conn.execute("select vec_quantize_binary(?)", [v.tobytes()]).fetchone()[0] for v in vectors
    ]
    assert BitIndex.sign_bits(vectors).tobytes() == b"".join(quantized)
    # 72 dimensions: nine bytes, padded with zeros to two words
    assert BitIndex.sign_bits(np.ones(72)).tolist() == [[2**64 - 1, 255]]
    index = BitIndex(range(101, 141), BitIndex.sign_bits(vectors))
    assert index.bits.shape == (4, 40)
    expected = [
        sum(bin(a ^ b).count("1") for a, b in zip(quantized[5], row)) for row in quantized
    ]
    assert index.distances(vectors[5]).tolist() == expected
    by_distance = sorted(range(40), key=lambda i: (expected[i], i))
    assert sorted(index.candidates(vectors[5], 7)) == sorted(101 + i for i in by_distance[:7])
    assert index.candidates(vectors[5], 40) == list(range(101, 141))
    assert index.candidates(vectors[5], 0) == []


def test_bit_options_are_checked():
    with pytest.raises(ValueError) as ex:
        RetrievalOptions(bit_candidates=0)
    assert str(ex.value) == "bit_candidates must be at least 1"
    with pytest.raises(ValueError) as ex:
        RetrievalOptions(bit_index_min_chunks=-1)
    assert str(ex.value) == "bit_index_min_chunks must be None or at least 0"


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(page_depth=0), "page_depth must be at least 1"),
        (dict(rescore_depth=0), "rescore_depth must be None (every place) or at least 1"),
        (
            dict(rescore={"bm25": 0.3, "title": 0.2}),
            "rescore: unknown feature 'title'; the features are " + ", ".join(RESCORE_FEATURES),
        ),
        (dict(rescore={"bm25": "high"}), "rescore: each feature's weight must be a number"),
    ],
)
def test_document_and_rescore_options_are_checked(options, message):
    with pytest.raises(ValueError) as ex:
        RetrievalOptions(**options)
    assert str(ex.value) == message
    # A good dict of weights is taken as it is
    assert RetrievalOptions(rescore={"bm25": 0.3}).rescore == {"bm25": 0.3}


def test_default_fusion_weighs_each_list_by_its_peak(db):
    result = hybrid_query(db, QUESTION, RetrievalOptions(mode="hybrid", k=6))
    chunks = result["chunks"]
    # every chunk is in the vector list; the peaks are measured on the lists' own scores
    semantic = sorted((c["signals"]["semantic"]["score"] for c in chunks), reverse=True)
    keyword = sorted(
        (c["signals"]["bm25"]["score"] for c in chunks if "bm25" in c["signals"]), reverse=True
    )
    assert len(semantic) == 6 and len(keyword) == 4
    peaks = {
        "keyword": (keyword[0] - np.mean(keyword)) / np.std(keyword) / 5,
        "vector": (semantic[0] - np.mean(semantic)) / np.std(semantic) / 5,
    }
    # the best of four scores, three at 1.0 and one at 4.0: sqrt(3) deviations above the mean
    assert list_peak({1: (0, 4.0), 2: (1, 1.0), 3: (2, 1.0), 4: (3, 1.0)}, 29) == pytest.approx(
        3**0.5 / 5
    )
    assert list_peak({1: (0, 4.0), 2: (1, 1.0), 3: (2, 1.0), 4: (3, 1.0)}, 1) == pytest.approx(0.2)
    assert list_peak({1: (0, 4.0)}, 29) == list_peak({1: (0, 2.0), 2: (1, 2.0)}, 29) == 0.0
    weights = {
        "keyword": 1.0 * (1 + peaks["keyword"]), "vector": 0.6 * (1 + peaks["vector"])
    }
    assert result["fusion"] == pytest.approx(weights, abs=1e-5)
    # relevance: each list's weight / (rrf_k + rank), over the score of a chunk first in both
    for chunk in chunks:
        expected = sum(
            weights[name] / (4 + chunk["signals"][signal]["rank"])
            for name, signal in (("keyword", "bm25"), ("vector", "semantic"))
            if signal in chunk["signals"]
        ) / (sum(weights.values()) / 5)
        assert chunk["relevance"] == pytest.approx(expected, abs=1e-5)
        assert chunk["signals"]["relevance"] == chunk["relevance"]


def test_graph_signals_say_what_the_graph_added(db):
    result = hybrid_query(db, QUESTION, RetrievalOptions(k=6))
    bridged = [c for c in result["chunks"] if "via" in c]
    assert bridged, "the default mode bridges through the graph"
    for chunk in bridged:
        graph = chunk["signals"]["graph"]
        assert graph["bridge"] == chunk["bridge"]
        assert graph["weight"] == 0.5
        assert graph["seed_rank"] >= 1 and graph["fit"] > 0
        assert chunk["score"] <= chunk["relevance"] + 0.5 * chunk["bridge"] + 1e-5
    plain = [c for c in result["chunks"] if "via" not in c]
    assert all("graph" not in c["signals"] for c in plain)


def test_a_seeds_nth_candidate_counts_0_88_to_the_n(db):
    # by default the seed's n-th candidate counts 0.88 ** n (times its path's factor):
    # calibrated so it ranks among fused chunks about as often gold as it is
    result = hybrid_query(db, QUESTION, RetrievalOptions(k=6, seeds=1, keep_top=1, keep_relevance=1.01))
    assert [(c["id"], c.get("bridge"), c["signals"].get("graph", {}).get("seed_rank")) for c in result["chunks"]] == [
        (1, None, None),
        (2, 1.0, 1),
        (3, None, None),
        (4, None, None),
        (6, 0.88, 2),
        # 0.88 ** 2 x hop 0.4 / 0.7 x default relation weight 0.6
        (5, 0.265509, 3),
    ]
    # a bridged chunk scores relevance + 0.5 x bridge (chunk 2 just below its seed)
    assert [c["score"] for c in result["chunks"]] == [1.0, 0.999999, 0.78735, 0.679798, 0.633132, 0.347345]


def test_less_relevant_seeds_lift_fused_chunks_they_reach(db):
    options = dict(k=6, keep_top=1, keep_relevance=1.01)
    one = hybrid_query(db, QUESTION, RetrievalOptions(seeds=1, **options))
    three = hybrid_query(db, QUESTION, RetrievalOptions(**options))
    relevance = {c["id"]: c["relevance"] for c in three["chunks"]}
    bridge = {c["id"]: c.get("bridge") for c in three["chunks"]}
    # chunk 2 (fused second, relevance 0.705: a seed, confidence 0.705 ** 4) reaches chunk 1
    # through 'lake' and then chunk 5 through 'reservoir is_a lake' (hop 0.4 / 0.7 x 0.6):
    # chunk 5's bridge is the first seed's 0.88 ** 2 x factor plus 0.705 ** 4 x 0.88 x factor
    factor = 0.4 / 0.7 * 0.6
    assert relevance[2] == 0.705472
    assert {c["id"]: c.get("bridge") for c in one["chunks"]}[5] == 0.265509
    assert bridge[5] == round(0.88**2 * factor + 0.705472**4 * 0.88 * factor, 6) == 0.340242
    assert ids(three) == ids(one) == [1, 2, 3, 4, 6, 5]
    # chunk 5 keeps the first seed's path in its explanation; chunk 3's fourth power of
    # relevance 0.787 reaches nothing (its entities are the question's or in one chunk)
    assert three["chunks"][5]["via"]["seed"] == 1
    assert bridge[3] is None


def test_a_seed_below_seed_new_relevance_brings_no_new_chunk(db):
    from llm_graphrag.retrieval import _Query

    state = _Query(db.conn, QUESTION, RetrievalOptions(vector_candidates=3, fts_candidates=3))
    state.keyword_search()
    state.vector_search()
    state.fuse()
    state.query_entities = state._match_query_entities()
    assert sorted(state.relevance) == [1, 2, 3, 4]  # neither search found chunks 5 and 6
    # a confident seed reaches (besides itself) 2 (lake), 5 (reservoir is_a lake) and 6
    # (shared words)
    assert sorted(state._candidates(1)[0]) == [1, 2, 5, 6]
    # a less relevant one: only fused chunks, through entities and relations, no term search
    candidates, term_scores = state._candidates(1, fused_only=True)
    assert (sorted(candidates), term_scores) == ([1, 2], {})
    assert candidates[2]["kind"] == "entity"


def test_pair_coverage_scales_a_candidates_gain_by_what_it_supplies(db):
    # off by default (no coverage signal); on, a candidate's gain is times
    # coverage_base + coverage_slope x its share of the question words its seed lacks
    question = "What can damming a river cause in the region?"
    options = dict(k=6, seeds=1, keep_top=1, keep_relevance=1.01, rescore=False)
    plain = hybrid_query(db, question, RetrievalOptions(**options))
    assert all("coverage" not in c["signals"].get("graph", {}) for c in plain["chunks"])
    covered = hybrid_query(
        db, question, RetrievalOptions(coverage_base=0.5, coverage_slope=1.0, **options)
    )
    before = {c["id"]: c.get("bridge") for c in plain["chunks"]}
    bridged = [c for c in covered["chunks"] if "via" in c]
    assert bridged
    for chunk in bridged:
        share = chunk["signals"]["graph"]["coverage"]
        assert 0.0 <= share <= 1.0
        # one seed: the bridge is the plain one times 0.5 + 1.0 x share
        assert chunk["bridge"] == pytest.approx(before[chunk["id"]] * (0.5 + share), abs=1e-5)
    shares = {c["id"]: c["signals"]["graph"]["coverage"] for c in bridged}
    # the seed, chunk 2 (fused first: it holds 'cause' and 'region'), lacks 'damming' and
    # 'river': chunk 1 holds both, the others neither
    assert covered["chunks"][0]["id"] == 2
    assert shares[1] == 1.0
    assert all(share == 0.0 for chunk_id, share in shares.items() if chunk_id != 1)


def test_a_candidates_fit_counts_the_question_words_its_seed_lacks(db):
    # fit["coverage"] (default 0.5) adds, times the path's factor, the idf weight of the
    # question words the seed lacks that the candidate holds (a partner supplies them), to
    # the seed's first 2 x bridge_pool candidates by the rest of the fit
    from llm_graphrag.retrieval import _Query

    question = "What can damming a river cause in the region?"

    def fits(**options):
        state = _Query(db.conn, question, RetrievalOptions(**options))
        state.keyword_search()
        state.vector_search()
        state.fuse()
        state.query_entities = state._match_query_entities()
        # chunk 2 holds 'cause' and 'region' but not 'damming' and 'river'
        candidates, term_scores = state._candidates(2)
        candidates.pop(2, None)
        ranked = state._rank_candidates(2, candidates, term_scores)
        return state, {c: (p["fit"], p["factor"]) for c, p in ranked}

    assert RetrievalOptions().fit["coverage"] == 0.5
    plain = dict(RetrievalOptions().fit, coverage=0.0)
    _, before = fits(fit=plain)
    state, after = fits()
    held, total = state._missing_weight(2, sorted(after))
    # chunk 1 holds both missing words, the others neither
    assert held == {1: pytest.approx(total)} and total > 0
    assert sorted(after) == [1, 5, 6]
    for chunk_id, (fit, factor) in after.items():
        assert fit == pytest.approx(before[chunk_id][0] + 0.5 * held.get(chunk_id, 0.0) * factor)
    assert after[1][0] > before[1][0]
    # ranked last by the rest of the fit (each part weighed negative), chunk 1 is outside
    # the first 2 x 1 and gains nothing
    reverse = dict(plain, bm25=-1.0, cosine=-3.0, entities=-0.5)
    _, last = fits(fit=reverse, bridge_pool=1)
    _, last_covered = fits(fit=dict(reverse, coverage=0.5), bridge_pool=1)
    assert min(last, key=lambda c: last[c][0]) == 1
    assert last_covered == last


@pytest.fixture
def pages_db(tmp_path, user_path):
    """Three documentation pages: a module page of two chunks whose title names JSON, a
    changelog of twelve chunks, two of which mention it, and a tutorial page of one."""
    pages = [
        ("library/json.html", "json — JSON encoder and decoder", [
            ("json — JSON encoder and decoder", "Use dumps to encode objects as text with an indent."),
            ("Basic Usage", "## Basic Usage\n\nloads decodes a JSON document into objects."),
        ]),
        ("whatsnew/3.2.html", "Changes in release 3.2", [
            (f"Improved Modules {i}", f"Module m{i} gained a faster decode step for JSON text."
             if i < 2 else f"Module m{i} gained a new option.")
            for i in range(12)
        ]),
        ("tutorial/inputoutput.html", "Input and Output", [
            ("Reading and Writing Files", "Decode the text read from files into objects."),
        ]),
    ]
    db = open_database(tmp_path / "pages.db")
    texts, chunk_id = [], 0
    with db.atomic():
        for doc_id, (path, title, chunks) in enumerate(pages, start=1):
            db["docs"].insert({"id": doc_id, "path": f"/html/{path}", "title": title})
            for seq, (section, text) in enumerate(chunks):
                chunk_id += 1
                texts.append(text)
                db["chunks"].insert({
                    "id": chunk_id, "doc_id": doc_id, "seq": seq, "content": text,
                    "section": section, "meta": json.dumps({"headings": [title, section]}),
                })
        write_embeddings(db, "chunks", range(1, chunk_id + 1), embedder_for(db).encode(texts), texts)
    return db


QUESTION_JSON = "How do I decode JSON text?"


def test_document_evidence_is_in_each_chunks_signals(pages_db):
    from llm_graphrag.retrieval import _Query

    # the hand-set weights (the learned re-scorer and page grouping off: their own tests)
    options = RetrievalOptions(k=15, rescore=False, group_pages=0)
    result = hybrid_query(pages_db, QUESTION_JSON, options)
    state = _Query(pages_db.conn, QUESTION_JSON, RetrievalOptions())
    assert state.words == ["decode", "json", "text"]
    weights = {w: state._word_idf(w) for w in state.words}
    for chunk in result["chunks"]:
        signals = chunk["signals"]
        document = signals["document"]
        # relevance: the fused one, plus 0.1 x the page's next two fused chunks, minus
        # 0.05 x log(chunks in the page), plus 0.3 x the heading share
        expected = (
            signals["fused"] + 0.1 * document["page_support"]
            - 0.05 * np.log(document["page_chunks"]) + 0.3 * document["heading"]
        )
        assert signals["relevance"] == pytest.approx(max(expected, 0.0), abs=1e-5)
        assert document["page_chunks"] == {1: 2, 2: 12, 3: 1}[chunk["doc_id"]]
    by_id = {c["id"]: c["signals"]["document"] for c in result["chunks"]}
    # the json page's title holds 'json' (its idf's share of the question's); no other
    # title or heading holds a question word ('decoder' is not 'decode')
    share = weights["json"] / sum(weights.values())
    assert by_id[1]["heading"] == by_id[2]["heading"] == pytest.approx(share, abs=1e-5)
    assert all(by_id[c]["heading"] == 0.0 for c in range(3, 16))
    # a page's support: the relevance of its next best fused chunks, two at most
    fused = {c["id"]: c["signals"]["fused"] for c in result["chunks"]}
    assert by_id[1]["page_support"] == pytest.approx(fused[2], abs=1e-5)
    assert by_id[15]["page_support"] == 0.0
    changelog = sorted((fused[c] for c in range(3, 15)), reverse=True)
    assert by_id[3]["page_support"] == pytest.approx(sum(changelog[:3]) - fused[3], abs=1e-5)
    # the module page whose title names the question's rarest word comes first, above the
    # changelog chunk both searches ranked higher; the explanation says why
    hybrid = hybrid_query(pages_db, QUESTION_JSON, RetrievalOptions(mode="hybrid", k=15))
    assert [c["id"] for c in hybrid["chunks"][:2]] == [3, 1]
    assert [c["id"] for c in result["chunks"][:3]] == [1, 3, 2]
    assert "its title and headings hold 35% of the question" in result["explanations"][0]
    assert "its page's other matches" in result["explanations"][0]


def test_document_evidence_only_in_graph_mode_and_off_when_zero(pages_db):
    hybrid = hybrid_query(pages_db, QUESTION_JSON, RetrievalOptions(mode="hybrid", k=15))
    assert all("document" not in c["signals"] for c in hybrid["chunks"])
    off = RetrievalOptions(k=15, page_support=0, page_size=0, heading_weight=0, rescore=False)
    graph = hybrid_query(pages_db, QUESTION_JSON, off)
    relevance = {c["id"]: c["relevance"] for c in hybrid["chunks"]}
    assert all(c["relevance"] == relevance[c["id"]] for c in graph["chunks"])
    assert all("document" not in c["signals"] for c in graph["chunks"])
    # each one alone moves the relevance its own way
    for name, sign in (("page_support", 1), ("page_size", -1), ("heading_weight", 1)):
        alone = {"page_support": 0, "page_size": 0, "heading_weight": 0, name: 0.2}
        options = RetrievalOptions(k=15, rescore=False, **alone)
        found = hybrid_query(pages_db, QUESTION_JSON, options)
        changed = {c["id"]: c["relevance"] - relevance[c["id"]] for c in found["chunks"]}
        assert any(abs(delta) > 1e-6 for delta in changed.values()), name
        assert all(sign * delta >= -1e-9 for delta in changed.values()), name


def test_learned_rescore_orders_the_first_places_and_shows_its_parts(pages_db):
    from llm_graphrag.retrieval import RESCORE_FEATURES, RESCORE_WEIGHTS

    hand = hybrid_query(pages_db, QUESTION_JSON, RetrievalOptions(k=15, rescore=False))
    assert all("learned" not in c["signals"] for c in hand["chunks"])
    learned = hybrid_query(pages_db, QUESTION_JSON, RetrievalOptions(k=15))
    # the first rescore_depth fused chunks show the learned score's parts, no other
    with_parts = [c for c in learned["chunks"] if "learned" in c["signals"]]
    assert len(with_parts) == RetrievalOptions().rescore_depth == 10
    for chunk in with_parts:
        parts = chunk["signals"]["learned"]
        # the score is the fused relevance plus weight x feature, each part shown
        assert set(parts) - {"fused", "score"} <= set(RESCORE_FEATURES)
        assert parts["fused"] == chunk["signals"]["fused"]
        total = sum(v for name, v in parts.items() if name != "score")
        assert parts["score"] == pytest.approx(total, abs=1e-5)
    # the first rescore_depth places: the learned score's order, each with the relevance
    # the hand-set ranking gave that place; the graph-free places below are unchanged
    from llm_graphrag.retrieval import _Query

    def fused(**options):
        state = _Query(pages_db.conn, QUESTION_JSON, RetrievalOptions(**options))
        state.keyword_search()
        state.vector_search()
        state.fuse()
        return state

    before, after = fused(rescore=False), fused(rescore_depth=4)
    first = before.order[:4]
    assert sorted(after.order[:4]) == sorted(first) and after.order[4:] == before.order[4:]
    assert [after.relevance[c] for c in after.order] == [before.relevance[c] for c in before.order]
    scores = [after.learned[c]["score"] for c in after.order[:4]]
    assert scores == sorted(scores, reverse=True)
    assert after.order[:4] != first  # on this page set the learned order differs
    # weights given as a dict: a large BM25 weight puts the best BM25 chunk first
    bm25_first = max(learned["chunks"], key=lambda c: c.get("bm25", -1))["id"]
    heavy = dict(RESCORE_WEIGHTS, bm25=50.0)
    assert hybrid_query(pages_db, QUESTION_JSON, RetrievalOptions(k=15, rescore=heavy))[
        "chunks"
    ][0]["id"] == bm25_first
    # rescore_depth 1: the first place keeps the hand-set ranking's chunk
    options = RetrievalOptions(k=15, rescore=heavy, rescore_depth=1)
    one = hybrid_query(pages_db, QUESTION_JSON, options)
    assert one["chunks"][0]["id"] == hand["chunks"][0]["id"]


def test_fit_rescorer_learns_the_sign_of_a_feature_that_marks_the_gold():
    import pathlib
    import sys

    sys.path.insert(0, str(pathlib.Path(__file__).parent.parent / "bench"))
    import fit_rescorer

    from llm_graphrag.retrieval import RESCORE_FEATURES

    rng = np.random.default_rng(0)
    groups = []
    bm25 = RESCORE_FEATURES.index("bm25")
    heading = RESCORE_FEATURES.index("heading")
    for _ in range(60):
        fused = rng.uniform(0, 1, 12)
        x = rng.uniform(0, 1, (12, len(RESCORE_FEATURES)))
        gold = np.zeros(12, dtype=bool)
        # the fused relevance and bm25 help, heading hurts
        gold[int(np.argmax(2 * fused + x[:, bm25] - x[:, heading]))] = True
        groups.append((fused, x, gold, 1 / 60))
    a, w = fit_rescorer.fit(groups, 0.01, steps=300)
    assert w[bm25] / a > 0.2 and w[heading] / a < -0.2
    # a feature held fixed keeps the weight given
    a, w = fit_rescorer.fit(groups, 0.01, {"code": 0.3}, steps=300)
    assert a > 0 and w[RESCORE_FEATURES.index("code")] == 0.0 and w[bm25] / a > 0.2


def test_single_chunk_documents_without_matching_titles_keep_their_fused_relevance(db):
    # one chunk a document, titles that hold no question word: QASC-like corpora are
    # ranked exactly as without document evidence
    result = hybrid_query(db, QUESTION, RetrievalOptions(k=6))
    fused = [c for c in result["chunks"] if "document" in c["signals"]]
    assert fused
    for chunk in fused:
        assert chunk["signals"]["document"] == {"page_support": 0.0, "page_chunks": 1, "heading": 0.0}
        assert chunk["signals"]["relevance"] == chunk["signals"]["fused"]
    off = RetrievalOptions(k=6, page_support=0, page_size=0, heading_weight=0)
    assert ids(hybrid_query(db, QUESTION, off)) == ids(result)


def test_code_like_tokens():
    from llm_graphrag.retrieval import _CODE_TOKEN

    text = (
        "Should I call Py_DECREF, os.path.join, getLogger or len() on `QuerySet` here, "
        "e.g. in Python 3.11 as PyPI says?"
    )
    assert [a or b for a, b in _CODE_TOKEN.findall(text)] == [
        "Py_DECREF", "os.path.join", "getLogger", "len", "QuerySet"
    ]


def test_a_code_entity_the_question_names_brings_its_describing_chunk(pages_db):
    # json.loads: described at home in a chunk of the json page that shares no word with
    # the question (neither search keeps it in its first 3), mentioned in a changelog
    # chunk with a weaker description
    db = pages_db
    text = "Deserialize s to a Python object."
    with db.atomic():
        db["chunks"].insert({"id": 16, "doc_id": 1, "seq": 2, "content": text, "section": "Basic Usage"})
        write_embeddings(db, "chunks", [16], embedder_for(db).encode([text]), [text])
        db["entities"].insert(
            {"id": 1, "type": "code", "name": "json.loads", "norm": "jsonloads", "popularity": 2}
        )
        for chunk_id, doc_id, rank in ((16, 1, 6), (3, 2, 1)):
            db["mentions"].insert({
                "entity_id": 1, "doc_id": doc_id, "chunk_id": chunk_id, "surface": "json.loads",
                "meta": json.dumps({"describes": [rank, 0, 10]}),
            })
        # the same name as a concept: no code entity, no link
        db["entities"].insert(
            {"id": 2, "type": "concept", "name": "decode text", "norm": "decodetext", "popularity": 1}
        )
    question = "What does json.loads do with JSON text?"
    small = {"fts_candidates": 3, "vector_candidates": 3, "k": 16, "hops": 0}  # no expansion
    off = hybrid_query(db, question, RetrievalOptions(code_link_weight=0, **small))
    assert 16 not in ids(off)
    found = hybrid_query(db, question, RetrievalOptions(**small))
    by_id = {c["id"]: c for c in found["chunks"]}
    named = by_id[16]["signals"]
    assert named["fused"] == 0.0 and "bm25" not in named and "semantic" not in named
    assert named["document"]["names"] == "json.loads"
    document = named["document"]
    expected = (
        0.1 * document["page_support"] - 0.05 * np.log(document["page_chunks"])
        + 0.3 * document["heading"] + 0.3
    )
    assert named["relevance"] == pytest.approx(expected, abs=1e-5)
    assert all("names" not in c["signals"].get("document", {}) for c in found["chunks"] if c["id"] != 16)
    position = ids(found).index(16)
    assert "the question names 'json.loads', which it describes" in found["explanations"][position]
    # the changelog chunk's weaker description (rank 1 against 6) brings nothing
    assert "names" not in by_id[3]["signals"]["document"]
    # no code-like token, no link
    plain = hybrid_query(db, "What does loads do with JSON text?", RetrievalOptions(**small))
    assert 16 not in ids(plain)


def test_group_pages_moves_the_first_documents_chunks_up_and_keeps_document_order():
    from llm_graphrag.retrieval import _gather_pages

    ranked = [1, 2, 3, 4, 5, 6]
    docs = {1: "a", 2: "b", 3: "a", 4: "c", 5: "b", 6: "a"}
    assert _gather_pages(ranked, docs, 1) == [1, 3, 6, 2, 4, 5]
    assert _gather_pages(ranked, docs, 2) == [1, 3, 6, 2, 5, 4]
    assert _gather_pages(ranked, docs, 0) == ranked
    # the documents keep the order in which each first appears
    for pages in (1, 2, 3):
        order = list(dict.fromkeys(docs[c] for c in _gather_pages(ranked, docs, pages)))
        assert order == ["a", "b", "c"]


def test_graph_mode_returns_the_first_pages_chunks_together(pages_db):
    def pages(result):
        return [c["doc_id"] for c in result["chunks"]]

    grouped = hybrid_query(pages_db, QUESTION_JSON, RetrievalOptions(k=15))
    plain = hybrid_query(pages_db, QUESTION_JSON, RetrievalOptions(k=15, group_pages=0))
    assert sorted(c["id"] for c in grouped["chunks"]) == sorted(c["id"] for c in plain["chunks"])
    assert list(dict.fromkeys(pages(grouped))) == list(dict.fromkeys(pages(plain)))
    first = pages(grouped)[0]
    held = pages(grouped).count(first)
    assert held > 1 and pages(grouped)[:held] == [first] * held
    assert pages(plain)[:held] != [first] * held  # on this page set grouping moves chunks
    # a moved chunk takes its place's score, its own stays in its signals
    scores = [c["score"] for c in grouped["chunks"]]
    assert scores == sorted(scores, reverse=True)
    assert sorted(scores) == sorted(c["score"] for c in plain["chunks"])
    own = {c["id"]: c["score"] for c in plain["chunks"]}
    moved = [c for c in grouped["chunks"] if "page" in c["signals"]]
    assert moved and all(c["signals"]["page"]["own_score"] == own[c["id"]] for c in moved)
    assert all(c["score"] == own[c["id"]] for c in grouped["chunks"] if "page" not in c["signals"])
    for bad in (dict(group_pages=-1), dict(page_fill=-1)):
        with pytest.raises(ValueError, match="group_pages and page_fill must be at least 0"):
            RetrievalOptions(**bad)


def test_the_first_pages_chunks_below_k_take_the_places_of_repeated_documents(pages_db):
    from llm_graphrag.retrieval import _Query

    def grouped(order, k, page_fill=5):
        state = _Query(pages_db.conn, QUESTION_JSON, RetrievalOptions(k=k, page_fill=page_fill))
        return state._group_pages(order, order[:k])

    # chunks 1, 2: the json page (doc 1); 3, 4: the changelog (doc 2); 15: the tutorial
    # chunk 2 (the first page's, below k) takes the place of chunk 4 (the changelog's second)
    assert grouped([1, 3, 4, 2, 15], 3) == [1, 2, 3]
    assert grouped([1, 3, 4, 2, 15], 3, page_fill=1) == [1, 3, 4]  # it has one: enough
    # no document is returned twice: none gives its place, the documents stay the same
    assert grouped([1, 3, 15, 2], 3) == [1, 3, 15]
    # the first page's chunks among the first k come first, the rest keep their order
    assert grouped([1, 3, 2, 15, 4], 4) == [1, 2, 3, 15]
    assert grouped([], 3) == []


# A story in numbered files, one sentence each, as ``llm graphrag eval`` writes an ordered
# corpus; the last file is one document of three chunks.
STORY = [
    "Marta Lindqvist founded the Harbour Choir in Tromsø.",
    "She later moved to Bergen to teach composition.",
    "The Harbour Choir sings in the old cathedral.",
    "Ferries leave the harbour every hour.",
]
PAGE = [
    "The tide tables list the ferry times for each pier.",
    "They are printed every spring by the port office.",
    "Pier four was rebuilt in 2019.",
]


@pytest.fixture
def story(tmp_path, user_path):
    db = open_database(tmp_path / "story.db")
    texts = STORY + PAGE
    with db.atomic():
        for i, text in enumerate(STORY, start=1):
            db["docs"].insert({"id": i, "path": f"/corpus/{i - 1:05d}.txt", "title": f"{i - 1:05d}"})
            db["chunks"].insert({"id": i, "doc_id": i, "seq": 0, "content": text})
        db["docs"].insert({"id": 5, "path": "/site/tides.md", "title": "Tides"})
        for seq, text in enumerate(PAGE):
            db["chunks"].insert({"id": 5 + seq, "doc_id": 5, "seq": seq, "content": text})
        write_embeddings(db, "chunks", range(1, 8), embedder_for(db).encode(texts), texts)
    return db


def test_a_neighbour_whose_first_sentence_refers_back_is_read_with_its_seed(story):
    options = RetrievalOptions(mode="graph", k=4, **PLAIN)
    result = hybrid_query(story, "Who founded the Harbour Choir in Tromsø?", options)
    found = {chunk["id"]: chunk for chunk in result["chunks"]}
    assert ids(result)[0] == 1
    # "She later moved ..." (the next file) refers back to the seed; the file after it
    # ("The Harbour Choir sings ...") names the choir but refers back to nothing
    assert found[2]["via"] == {"kind": "adjacent", "seed": 1, "rel": "NEXT_CHUNK", "hops": 1}
    assert found[2]["signals"]["graph"]["seed_rank"] == 1
    assert result["explanations"][ids(result).index(2)].endswith(
        "next to chunk 1, read with it (a pronoun refers back)"
    )
    assert {"src": 1, "dst": 2, "rel": "NEXT_CHUNK", "kind": "adjacent"} in result["edges"]
    assert found.get(3, {}).get("via", {}).get("kind") != "adjacent"


def test_a_seed_that_refers_back_brings_the_chunk_before_it_in_its_document(story):
    options = RetrievalOptions(mode="graph", k=4, **PLAIN)
    result = hybrid_query(story, "When are they printed by the port office?", options)
    assert ids(result)[0] == 6
    found = {chunk["id"]: chunk for chunk in result["chunks"]}
    assert found[5]["via"]["kind"] == "adjacent"  # the tide tables "they" refers to
    # the chunk after the seed refers back to nothing
    assert found.get(7, {}).get("via", {}).get("kind") != "adjacent"


def test_the_adjacent_bridge_can_be_switched_off_and_rels_filters_it(story):
    question = "Who founded the Harbour Choir in Tromsø?"
    for options in (
        RetrievalOptions(mode="graph", k=4, **dict(PLAIN, bridge_via=("entities", "terms", "relations"))),
        RetrievalOptions(mode="graph", k=4, rels=["is_a"], **PLAIN),
    ):
        result = hybrid_query(story, question, options)
        assert all(chunk.get("via", {}).get("kind") != "adjacent" for chunk in result["chunks"])
        assert all(edge["rel"] != "NEXT_CHUNK" for edge in result["edges"])


def test_series_neighbours_and_back_references():
    from llm_graphrag.retrieval import _refers_back, _series_neighbours

    assert _series_neighbours("/c/00041.txt") == ("/c/00040.txt", "/c/00042.txt")
    assert _series_neighbours("/c/00000.txt") == (None, "/c/00001.txt")
    assert _series_neighbours("/c/notes.txt") == (None, None)
    assert _refers_back("He resigned in 1998. Then the board met.")
    assert not _refers_back("The board met. He resigned.")


def test_the_query_command_names_chunk_ends_as_chunks(story):
    from click.testing import CliRunner
    from llm.cli import cli

    path = story.execute("select file from pragma_database_list where name = 'main'").fetchone()[0]
    result = CliRunner().invoke(cli, ["graphrag", "query", "Who founded the Harbour Choir in Tromsø?", "-d", path])
    assert result.exit_code == 0, result.output
    assert "  chunk 1 --NEXT_CHUNK--> chunk 2\n" in result.output


def test_the_query_command_names_a_mentions_chunk_as_a_chunk(db):
    from click.testing import CliRunner
    from llm.cli import cli

    path = db.execute("select file from pragma_database_list where name = 'main'").fetchone()[0]
    result = CliRunner().invoke(cli, ["graphrag", "query", QUESTION, "-d", path])
    assert result.exit_code == 0, result.output
    edges = result.output.split("Edges:\n")[1].splitlines()
    # chunk 5, not entity 5 ("region"): a mention's far end is a chunk
    assert edges == ["  lake --MENTIONED_IN--> chunk 1", "  reservoir --is_a--> lake",
                     "  reservoir --MENTIONED_IN--> chunk 5"]
