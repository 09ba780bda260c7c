"""hybrid_query over a small graph written by hand into a real graphrag database."""

import json

import jsonschema
import pytest

from llm_graphrag.db import open_database
from llm_graphrag.embeddings import embedder_for, write_embeddings
from llm_graphrag.retrieval import (
    RetrievalOptions,
    fts_match,
    hybrid_query,
    query_words,
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
        {"id", "doc_id", "path", "section", "snippet", "score", "relevance", "bm25", "hop"}
    ] * 3
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
    assert set(result) == {"chunks", "entities", "edges", "explanations", "mode"}


def test_graph_mode_bridges_from_the_seed(db):
    result = hybrid_query(db, QUESTION, RetrievalOptions(mode="graph", k=6))
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
        {"src": 8, "dst": 3, "rel": "is_a", "weight": 0.9, "kind": "relation"},
        {"src": 8, "dst": 5, "rel": "MENTIONED_IN", "kind": "mention"},
    ]


def test_graph_mode_rels_filter_and_hops(db):
    only_uses = hybrid_query(db, QUESTION, RetrievalOptions(k=6, rels=["uses"]))
    assert all(chunk.get("via", {}).get("kind") != "relation" for chunk in only_uses["chunks"])
    one_hop = hybrid_query(db, QUESTION, RetrievalOptions(k=6, hops=1))
    assert all(chunk.get("via", {}).get("hops", 1) == 1 for chunk in one_hop["chunks"])
    no_graph = hybrid_query(db, QUESTION, RetrievalOptions(k=6, hops=0))
    assert ids(no_graph) == ids(hybrid_query(db, QUESTION, RetrievalOptions(k=6, mode="hybrid")))


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
    assert ids(result) == [1, 2]
    assert len(result["explanations"]) == 2
    assert result["edges"] == [
        {"src": 3, "dst": 1, "rel": "MENTIONED_IN", "kind": "mention"},
        {"src": 3, "dst": 2, "rel": "MENTIONED_IN", "kind": "mention"},
    ]


def test_no_match_returns_empty_lists(db):
    result = hybrid_query(db, "zzzz qqqq", RetrievalOptions(mode="bm25"))
    assert result == {"chunks": [], "entities": [], "edges": [], "explanations": [], "mode": "bm25"}


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"mode": "magic"}, "mode must be one of bm25, vector, hybrid, graph, not 'magic'"),
        ({"bridge_via": ("entities", "telepathy")}, "bridge_via: unknown bridge 'telepathy'"),
        ({"k": 0}, "k must be at least 1"),
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
    assert ids(result) == [1, 2, 6]


def test_bit_index_rescoring(tmp_path):
    import numpy as np

    from llm_graphrag.db import connect
    from llm_graphrag.retrieval import BitIndex

    conn = connect(tmp_path / "bits.db")
    conn.execute("create table vectors (id integer primary key, embedding blob)")
    conn.execute("create table bits (id integer primary key, bits blob)")
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((64, 128)).astype("<f4")
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    for i, vector in enumerate(vectors, start=1):
        conn.execute("insert into vectors values (?, ?)", [i, vector.tobytes()])
        conn.execute("insert into bits values (?, vec_quantize_binary(?))", [i, vector.tobytes()])
    index = BitIndex(conn, "bits")
    assert len(index) == 64
    assert index.bits.shape == (64, 2)
    query = vectors[9]
    # Hamming distance 0 to itself: always among the candidates
    assert 10 in index.candidates(query, 1)
    rescore = (
        "select id, vec_distance_cosine(embedding, ?) from vectors "
        "where id in (select value from json_each(?))"
    )
    exact = np.argsort(-(vectors @ query))[:5] + 1
    # with every row as a candidate the rescoring is exact search
    found = index.search(query, 5, 64, rescore)
    assert [row[0] for row in found] == exact.tolist()
    assert found[0][1] == pytest.approx(0.0, abs=1e-6)
