"""The Datasette face: SQL functions, metadata, JSON endpoints, OpenAPI and MCP."""

import json

import jsonschema
import pytest
import pytest_asyncio
from datasette.app import Datasette

from llm_graphrag.db import open_database
from llm_graphrag.tools import TOOLS


@pytest_asyncio.fixture
async def ds(sample_db, tmp_path):
    (tmp_path / "allowed").mkdir()
    (tmp_path / "allowed" / "note.md").write_text("# Note\n\nHeron uses the Basin API.\n")
    datasette = Datasette(
        [str(sample_db)],
        metadata={
            "plugins": {
                "datasette-graphrag": {"ingest_roots": [str(tmp_path / "allowed")]}
            }
        },
    )
    await datasette.invoke_startup()
    datasette._allowed_dir = tmp_path / "allowed"
    return datasette


async def sql(ds, query, **params):
    response = await ds.client.get(
        "/graphrag.json", params={"sql": query, "_shape": "array", **params}
    )
    assert response.status_code == 200, response.text
    return response.json()


@pytest.mark.asyncio
async def test_database_with_vec0_opens_and_has_metadata(ds):
    response = await ds.client.get("/graphrag.json")
    assert response.status_code == 200
    tables = {t["name"] for t in response.json()["tables"]}
    assert {"docs", "chunks", "entities", "mentions", "relations", "chunk_vec"} <= tables
    assert ds.metadata("title", database="graphrag") == "GraphRAG knowledge base"
    assert ds.metadata("description", database="graphrag", table="entities") == (
        "Canonical entities that mentions link to."
    )
    queries = await ds.get_canned_queries("graphrag", None)
    assert sorted(queries) == [
        "documents_mentioning_entity",
        "entity_neighbourhood",
        "hybrid_query_tool",
        "hybrid_search",
        "orphan_entities",
        "path_between_entities",
        "review_links",
    ]


@pytest.mark.asyncio
async def test_every_table_and_column_has_a_description(ds, sample_db):
    db = open_database(sample_db)
    tables = ds.metadata("tables", database="graphrag")
    shadow = ("_fts", "_vec", "_data", "_idx", "_docsize", "_config", "_info", "_chunks", "_rowids")
    ours = [
        t for t in db.table_names() + db.view_names()
        if not any(part in t for part in shadow) and not t.startswith(("_", "sqlite_"))
    ]
    for table in ours:
        assert tables[table]["title"] and tables[table]["description"], table
    for table in ("docs", "chunks", "entities", "mentions", "relations", "relation_evidence",
                  "ingest_runs", "gazetteer_terms"):
        assert set(db[table].columns_dict) == set(tables[table]["columns"]), table
    for vec in ("chunk_vec", "entity_vec", "fact_vec"):
        assert tables[vec]["description"]


@pytest.mark.asyncio
async def test_graphrag_embed_feeds_vec0_match(ds):
    rows = await sql(
        ds,
        "select chunk_id from chunk_vec where embedding match graphrag_embed(:q) and k = 3 "
        "order by distance",
        q="How do dams create reservoirs?",
    )
    assert len(rows) == 3
    paths = await sql(
        ds,
        "select docs.path from chunks join docs on docs.id = chunks.doc_id where chunks.id = :id",
        id=rows[0]["chunk_id"],
    )
    assert paths[0]["path"].endswith("science/dams-and-reservoirs.md")


@pytest.mark.asyncio
async def test_graphrag_hybrid_with_json_each(ds):
    rows = await sql(
        ds,
        "select json_extract(value, '$.path') as path from json_each(graphrag_hybrid(:q, 5), '$.chunks')",
        q="reservoir dam sediment",
    )
    assert len(rows) == 5
    assert any(r["path"].endswith("dams-and-reservoirs.md") for r in rows)


@pytest.mark.asyncio
async def test_canned_hybrid_search_runs(ds):
    response = await ds.client.get(
        "/graphrag/hybrid_search.json", params={"q": "certificate rotation", "_shape": "array"}
    )
    assert response.status_code == 200, response.text
    rows = response.json()
    assert rows and rows[0]["path"].endswith("runbooks/rotate-certificates.md")


@pytest.mark.asyncio
async def test_tool_endpoints_follow_contracts(ds):
    for path, params in (
        ("/graphrag/-/graphrag/status", {}),
        ("/-/graphrag/status", {}),
        ("/graphrag/-/graphrag/hybrid_query", {"q": "tidepool compaction", "k": "5"}),
        ("/graphrag/-/graphrag/entity_lookup", {"q": "tidepool"}),
        ("/graphrag/-/graphrag/topn", {"entity_names": "tidepool"}),
    ):
        response = await ds.client.get(path, params=params)
        assert response.status_code == 200, (path, response.text)
        name = path.rsplit("/", 1)[1]
        jsonschema.validate(response.json(), TOOLS[name].output_schema)
    post = await ds.client.post(
        "/graphrag/-/graphrag/hybrid_query", json={"q": "tidepool compaction", "k": 3}
    )
    assert post.status_code == 200
    assert len(post.json()["chunks"]) == 3


@pytest.mark.asyncio
async def test_validation_errors_name_the_field(ds):
    response = await ds.client.post("/graphrag/-/graphrag/hybrid_query", json={"k": 3})
    assert response.status_code == 400
    assert response.json()["field"] == "q"
    response = await ds.client.get("/graphrag/-/graphrag/hybrid_query", params={"q": "x", "k": "lots"})
    assert response.status_code == 400
    assert response.json()["field"] == "k"
    response = await ds.client.post("/graphrag/-/graphrag/hybrid_query", json={"q": "x", "k": 0})
    assert (response.status_code, response.json()["field"]) == (400, "k")
    response = await ds.client.get("/nope/-/graphrag/status")
    assert response.status_code == 404
    response = await ds.client.get("/graphrag/-/graphrag/explain_entity", params={"entity_id": "999999"})
    assert response.status_code == 404


@pytest.mark.asyncio
async def test_write_tools_need_permission_and_allowed_roots(ds):
    allowed = ds._allowed_dir
    response = await ds.client.post(
        "/graphrag/-/graphrag/ingest_docs", json={"paths": [str(allowed)]}
    )
    assert response.status_code == 403
    assert "graphrag-write" in response.json()["error"]
    cookies = {"ds_actor": ds.sign({"a": {"id": "editor"}}, "actor")}
    response = await ds.client.post(
        "/graphrag/-/graphrag/ingest_docs", json={"paths": ["/etc"]}, cookies=cookies
    )
    assert (response.status_code, response.json()["field"]) == (403, "paths")
    response = await ds.client.post(
        "/graphrag/-/graphrag/ingest_docs",
        json={"paths": [str(allowed / ".." / "..")]},
        cookies=cookies,
    )
    assert response.status_code == 403
    response = await ds.client.get("/graphrag/-/graphrag/ingest_docs", cookies=cookies)
    assert response.status_code == 405


@pytest.mark.asyncio
async def test_openapi_document(ds):
    response = await ds.client.get("/-/graphrag/openapi.json")
    assert response.status_code == 200
    document = response.json()
    assert document["openapi"] == "3.1.0"
    assert sorted(document["paths"]) == sorted(
        [f"/-/graphrag/{name}" for name in TOOLS]
        + [f"/{{database}}/-/graphrag/{name}" for name in TOOLS]
    )
    from openapi_spec_validator import validate

    validate(document)


@pytest.mark.asyncio
async def test_permitted_actor_ingests_under_allowed_root(sample_db, tmp_path, monkeypatch):
    import shutil

    path = tmp_path / "graphrag.db"
    shutil.copy(sample_db, path)
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    (allowed / "note.md").write_text("# Kestrel\n\nKestrel depends on tidepool for storage.\n")
    datasette = Datasette(
        [str(path)],
        metadata={
            "plugins": {
                "datasette-graphrag": {
                    "ingest_roots": [str(allowed)],
                    "write_allow": {"id": "editor"},
                }
            }
        },
    )
    await datasette.invoke_startup()
    editor = {"ds_actor": datasette.sign({"a": {"id": "editor"}}, "actor")}
    other = {"ds_actor": datasette.sign({"a": {"id": "someone"}}, "actor")}
    response = await datasette.client.post(
        "/graphrag/-/graphrag/ingest_docs", json={"paths": [str(allowed)]}, cookies=other
    )
    assert response.status_code == 403
    response = await datasette.client.post(
        "/graphrag/-/graphrag/ingest_docs", json={"paths": [str(allowed)]}, cookies=editor
    )
    assert response.status_code == 200, response.text
    data = response.json()
    assert (data["ingested"], data["skipped"], data["errors"]) == (1, 0, [])
    assert data["extraction"]["mentions"] > 0
    rows = await datasette.client.get(
        "/graphrag.json",
        params={"sql": "select title from docs where path like '%note.md'", "_shape": "array"},
    )
    assert rows.json() == [{"title": "Kestrel"}]
    response = await datasette.client.post(
        "/graphrag/-/graphrag/extract_and_link", json={}, cookies=editor
    )
    assert response.json() == {"mentions": 0, "entities_new": 0, "relations": 0}

    # Rows deleted by another process while extracting: a conflict to retry, not a crash.
    from llm_graphrag import extract
    from llm_graphrag.db import ChangedMeanwhile

    def changed(db, **kwargs):
        raise ChangedMeanwhile("1 of the docs that extraction results refer to were deleted")

    monkeypatch.setattr(extract, "extract_and_link", changed)
    response = await datasette.client.post(
        "/graphrag/-/graphrag/extract_and_link", json={}, cookies=editor
    )
    assert response.status_code == 409
    assert "were deleted" in response.json()["error"]


@pytest.mark.asyncio
async def test_sql_functions_answer_bad_arguments_with_json_errors(ds):
    rows = await sql(
        ds,
        "select graphrag_hybrid('dams', 0) as k0, graphrag_explain(987654) as missing, "
        "graphrag_fts_query('How do the dams work?') as fts",
    )
    assert json.loads(rows[0]["k0"]) == {
        "error": "hybrid_query: k: 0 is less than the minimum of 1"
    }
    assert json.loads(rows[0]["missing"]) == {
        "error": "No entity with id 987654: use entity_lookup to find ids"
    }
    assert rows[0]["fts"] == '"dams" OR "work"'
