"""The Datasette face: SQL functions, metadata, JSON endpoints, OpenAPI, on 0.65 and 1.0."""

import contextlib
import json
import pathlib
import re
import shutil
import subprocess
import sys

import httpx
import jsonschema
import pytest
import pytest_asyncio
import yaml
from click.testing import CliRunner
from datasette.app import Datasette
from datasette.version import __version__ as datasette_version

import datasette_graphrag
from llm_graphrag.cli import graphrag as graphrag_cli
from llm_graphrag.db import connect, open_database
from llm_graphrag.db import sqlite3 as graphrag_sqlite3
from llm_graphrag.tools import TOOLS

ROOT = pathlib.Path(__file__).parent.parent
DATASETTE_1 = not datasette_version.startswith("0.")
QUERIES = [
    "documents_mentioning_entity",
    "entity_neighbourhood",
    "hybrid_query_tool",
    "hybrid_search",
    "orphan_entities",
    "path_between_entities",
    "review_links",
]
# The tables the database page lists; the rest are sqlite-vec and FTS5 internals
VISIBLE_TABLES = [
    "chunk_vec",
    "chunks",
    "collections",
    "docs",
    "dropped_heads",
    "dropped_words",
    "embeddings",
    "entities",
    "entity_vec",
    "fact_vec",
    "gazetteer_terms",
    "graphrag_settings",
    "held_evidence",
    "ingest_runs",
    "mentions",
    "relation_evidence",
    "relations",
]


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
    # 1.0 answers SQL at /<database>/-/query.json and redirects /<database>.json?sql= there
    response = await ds.client.get(
        "/graphrag.json",
        params={"sql": query, "_shape": "array", **params},
        follow_redirects=True,
    )
    assert response.status_code == 200, response.text
    return response.json()


async def database_metadata(ds, database="graphrag"):
    """Title and description of ``database``, as each Datasette version keeps them."""
    if DATASETTE_1:
        return await ds.get_database_metadata(database)
    return {key: ds.metadata(key, database=database) for key in ("title", "description")}


async def table_metadata(ds, table, database="graphrag"):
    """``{"title", "description", "columns": {name: description}}`` of a table."""
    if DATASETTE_1:
        metadata = await ds.get_resource_metadata(database, table)
        internal = ds.get_internal_database()
        rows = await internal.execute(
            "select column_name, value from metadata_columns where database_name = ? "
            "and resource_name = ? and key = 'description'",
            [database, table],
        )
        return dict(metadata, columns={r["column_name"]: r["value"] for r in rows.rows})
    tables = ds.metadata("tables", database=database) or {}
    return {k: v for k, v in tables.get(table, {}).items() if k != "hidden"}


async def canned_queries(ds, database="graphrag"):
    """``{name: {"sql", "title"}}`` of the canned (1.0: stored) queries of ``database``."""
    if DATASETTE_1:
        page = await ds.list_queries(database, limit=100)
        return {q.name: {"sql": q.sql, "title": q.title} for q in page.queries}
    queries = await ds.get_canned_queries(database, None)
    return {name: {"sql": q["sql"], "title": q["title"]} for name, q in queries.items()}


def metadata_file():
    return yaml.safe_load((ROOT / "metadata.yml").read_text())


@pytest.mark.asyncio
async def test_database_with_vec0_opens_and_has_metadata(ds):
    response = await ds.client.get("/graphrag.json")
    assert response.status_code == 200
    tables = {t["name"] for t in response.json()["tables"]}
    assert {"docs", "chunks", "entities", "mentions", "relations", "chunk_vec"} <= tables
    assert (await database_metadata(ds))["title"] == "GraphRAG knowledge base"
    assert (await table_metadata(ds, "entities"))["description"] == (
        "Canonical entities that mentions link to."
    )
    expected = metadata_file()["databases"]["graphrag"]["queries"]
    assert await canned_queries(ds) == {
        name: {"sql": expected[name]["sql"], "title": expected[name]["title"]} for name in QUERIES
    }


@pytest.mark.asyncio
async def test_every_table_and_column_has_a_description(ds, sample_db):
    db = open_database(sample_db)
    hidden = {
        t for t, m in metadata_file()["databases"]["graphrag"]["tables"].items() if m.get("hidden")
    }
    fts = ("_fts", "_fts_config", "_fts_data", "_fts_docsize", "_fts_idx")
    ours = [
        t for t in db.table_names() + db.view_names()
        if t not in hidden and not t.endswith(fts)
    ]
    for table in ours:
        metadata = await table_metadata(ds, table)
        assert metadata["title"] and metadata["description"], table
    for table in ("docs", "chunks", "entities", "mentions", "relations", "relation_evidence",
                  "ingest_runs", "gazetteer_terms"):
        assert set(db[table].columns_dict) == set((await table_metadata(ds, table))["columns"]), table


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
    rows = await sql(datasette, "select title from docs where path like '%note.md'")
    assert rows == [{"title": "Kestrel"}]
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


def error_shape(message, status, field=None):
    """The JSON error body of the Datasette version under test."""
    if DATASETTE_1:  # 1.0a36 added "errors" and dropped "title"
        body = {"ok": False, "error": message, "errors": [message], "status": status}
    else:
        body = {"ok": False, "error": message, "status": status, "title": None}
    return dict(body, field=field) if field else body


@pytest.mark.asyncio
async def test_errors_have_the_json_shape_of_the_datasette_version(ds):
    response = await ds.client.get(
        "/graphrag/-/graphrag/hybrid_query", params={"q": "x", "k": "lots"}
    )
    assert response.status_code == 400
    assert response.json() == error_shape("hybrid_query: k: expected integer, got 'lots'", 400, "k")
    response = await ds.client.post("/graphrag/-/graphrag/ingest_docs", json={"paths": ["/x"]})
    assert response.status_code == 403
    assert response.json() == error_shape("ingest_docs needs the graphrag-write permission", 403)
    response = await ds.client.get("/nope/-/graphrag/status")
    assert response.json() == error_shape("Database 'nope' not found", 404, "database")


def copy_db(sample_db, tmp_path):
    path = tmp_path / "graphrag.db"
    shutil.copy(sample_db, path)
    return path


@pytest.mark.asyncio
async def test_pages_work_after_cli_writes(sample_db, tmp_path):
    # Item 1: Datasette refreshes its schema bookkeeping after any write to the file; with
    # foreign keys on in its internal database that refresh failed with an HTTP 500.
    path = copy_db(sample_db, tmp_path)
    datasette = Datasette([str(path)])
    await datasette.invoke_startup()
    assert (await datasette.client.get("/graphrag")).status_code == 200
    runner = CliRunner()
    result = runner.invoke(
        graphrag_cli, ["settings", "retrieval_log", "null", "-d", str(path)], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    # an entity that is there: the first id depends on the extractors installed (spaCy's NER)
    with contextlib.closing(graphrag_sqlite3.connect(str(path))) as conn:
        entity_id = conn.execute("select min(id) from entities").fetchone()[0]
    for page in ("/graphrag", "/graphrag/docs", "/", f"/graphrag/entities/{entity_id}"):
        response = await datasette.client.get(page)
        assert response.status_code == 200, (page, response.text[:500])
    result = runner.invoke(
        graphrag_cli, ["ingest", str(ROOT / "sample-corpus"), "-d", str(path)], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    for page in ("/graphrag", "/graphrag/relations", "/graphrag/-/graphrag/explore"):
        response = await datasette.client.get(page)
        assert response.status_code == 200, (page, response.text[:500])
    # Foreign keys still hold on Datasette's connections to the graphrag file
    db = datasette.get_database("graphrag")
    assert (await db.execute("pragma foreign_keys")).rows[0][0] == 1
    assert await db.execute_write_fn(lambda conn: conn.execute("pragma foreign_keys").fetchone()[0]) == 1


@pytest.mark.asyncio
async def test_vec0_tables_are_counted_without_sql_errors(sample_db, tmp_path, capsys):
    # Item 1: counting a vec0 table by scanning it ran out of Datasette's time limit and
    # sqlite-vec reported "SQL logic error", logged for every page view.
    path = copy_db(sample_db, tmp_path)
    conn = connect(path)
    with conn:
        conn.executemany(
            "insert into fact_vec(rowid, embedding) values (?, ?)",
            [(1_000_000 + i, bytes(256 * 4)) for i in range(30_000)],
        )
    expected = {
        table: conn.execute(f"select count(*) from [{table}_rowids]").fetchone()[0]
        for table in ("chunk_vec", "entity_vec", "fact_vec")
    }
    conn.execute("pragma wal_checkpoint(truncate)")
    conn.close()
    datasette = Datasette([str(path)], settings={"facet_suggest_time_limit_ms": 1})
    await datasette.invoke_startup()
    db = datasette.get_database("graphrag")
    # Under a 1 ms limit: scanning fact_vec takes about 7 ms however often it is asked,
    # counting its rowids about 0.1 ms, but up to 3 ms on a connection's first read of
    # the pages; so a count missed once, on a busy machine, is asked once more
    counts = await db.table_counts(1)
    if any(counts[table] is None for table in expected):
        counts = await db.table_counts(1)
    assert {table: counts[table] for table in expected} == expected
    assert expected["fact_vec"] > 30_000
    response = await datasette.client.get("/graphrag.json")
    listed = {t["name"]: t["count"] for t in response.json()["tables"]}
    assert {table: listed[table] for table in expected} == expected
    # A vec0 table's page: facet suggestions over 30,000 vectors run out of their 1 ms
    for page in ("/graphrag/fact_vec", "/graphrag/fact_vec.json", "/graphrag/entity_vec"):
        response = await datasette.client.get(page)
        assert response.status_code == 200, (page, response.text[-500:])
    # A KNN search does its work inside sqlite-vec, which reports the time limit's
    # interruption as "SQL logic error": Datasette hears "interrupted"
    from datasette.database import QueryInterrupted

    with pytest.raises(QueryInterrupted):
        await datasette.get_database("graphrag").execute(
            "select relation_id from fact_vec where embedding match :v and k = 10",
            {"v": bytes(range(256)) * 4},
            custom_time_limit=1,
        )
    assert "SQL logic error" not in capsys.readouterr().err


@pytest.mark.asyncio
async def test_database_page_hides_index_internals_and_links_the_explorer(ds):
    # Item 3
    tables = (await ds.client.get("/graphrag.json")).json()["tables"]
    assert sorted(t["name"] for t in tables if not t["hidden"]) == VISIBLE_TABLES
    assert {"_sqlite_migrations", "chunk_vec_rowids", "entity_vec_info"} <= {
        t["name"] for t in tables if t["hidden"]
    }
    html = (await ds.client.get("/graphrag")).text
    explorer = '<a class="graphrag-explore-link" href="/graphrag/-/graphrag/explore">'
    assert explorer in html
    assert '<a href="/graphrag/_sqlite_migrations"' not in html
    home = (await ds.client.get("/")).text
    assert 'href="/graphrag/-/graphrag/explore"' in home
    assert "Graph explorer: graphrag" in home


@pytest.mark.asyncio
async def test_mermaid_of_a_query_draws_chunks_as_chunk_nodes(ds):
    # Item 5: mention edges end at chunks, which were drawn as "Entity｜<chunk id>"
    rows = await sql(
        ds,
        "select graphrag_hybrid(:q, 4) as result, graphrag_mermaid(graphrag_hybrid(:q, 4)) as graph",
        q="tidepool compaction",  # the fourth is reached through a shared entity: mention edges
    )
    result, graph = json.loads(rows[0]["result"]), rows[0]["graph"]
    mentions = [e for e in result["edges"] if e["rel"] == "MENTIONED_IN"]
    assert mentions
    lines = graph.splitlines()
    drawn = [line for line in lines if " -- MENTIONED_IN --> " in line]
    assert [re.search(r"--> (chunk_\d+)", line).group(1) for line in drawn] == [
        f"chunk_{e['dst']}" for e in mentions
    ]
    assert not re.search(r'Entity｜\d+"', graph)
    chunk_ids = {str(e["dst"]) for e in mentions} | {str(c["id"]) for c in result["chunks"]}
    for chunk_id in chunk_ids:
        assert f'chunk_{chunk_id}["Chunk#{chunk_id}"]' in graph
    assert not any(f"entity_{chunk_id}[" in graph for chunk_id in chunk_ids if int(chunk_id) not in {e["id"] for e in result["entities"]})


def test_hybrid_search_fits_the_time_limit_on_first_use(sample_db, tmp_path, serve):
    # Item 2: the first hybrid_search loaded the embedding model inside the query, which
    # took longer than the SQL time limit. A fresh server, a tight limit, first request.
    path = copy_db(sample_db, tmp_path)
    with serve(path, "--setting", "sql_time_limit_ms", "400") as url:
        response = httpx.get(
            url + "/graphrag/hybrid_search.json",
            params={"q": "certificate rotation", "_shape": "array"},
            timeout=60,
        )
    assert response.status_code == 200, response.text
    assert response.json()[0]["path"].endswith("runbooks/rotate-certificates.md")


def test_metadata_yml_is_the_packaged_metadata():
    # Item 9: one source; the packaged copy is what plain `datasette serve` applies
    assert (ROOT / "metadata.yml").read_text() == datasette_graphrag.METADATA_FILE.read_text()
    assert datasette_graphrag.graphrag_metadata() == metadata_file()["databases"]["graphrag"]


@pytest.mark.parametrize("flags", [[], ["-m", str(ROOT / "metadata.yml")]])
def test_datasette_serve_applies_the_metadata(sample_db, tmp_path, flags, serve):
    # Item 9: `datasette serve graphrag.db`, with and without -m metadata.yml
    path = copy_db(sample_db, tmp_path)
    with serve(path, *flags) as url:
        database = httpx.get(url + "/graphrag.json").json()
        page = httpx.get(url + "/graphrag").text
        table = httpx.get(url + "/graphrag/entities").text
        query = httpx.get(url + "/graphrag/orphan_entities").text
    assert sorted(t["name"] for t in database["tables"] if not t["hidden"]) == VISIBLE_TABLES
    assert "<h1>GraphRAG knowledge base</h1>" in page
    assert "Canonical entities that mentions link to." in table
    assert "Orphan entities" in query


def test_readme_datasette_commands_run_on_this_datasette(sample_db, tmp_path):
    # Item 6: every `datasette ...` line of the README's Datasette section uses flags the
    # installed Datasette has (0.65 has no -c or -s)
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## In Datasette", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"^(datasette serve [^\n#]*?)\s*(?:#.*)?$", section, re.M)
    assert len(commands) >= 2, commands
    path = copy_db(sample_db, tmp_path)
    (tmp_path / "metadata.yml").write_text((ROOT / "metadata.yml").read_text())
    plugins = re.search(r"```yaml\n(plugins:.*?)```", section, re.S).group(1)
    (tmp_path / "plugins.yml").write_text(plugins)
    for command in commands:
        args = command.split()[2:]
        result = subprocess.run(
            [sys.executable, "-m", "datasette", "serve", *args, "--get", "/graphrag.json"],
            cwd=tmp_path, capture_output=True, text=True, timeout=120,
        )
        assert result.returncode == 0, (command, result.stderr[-2000:])
        assert json.loads(result.stdout)["database"] == "graphrag", command
    assert ["-m", "plugins.yml"] in [c.split()[3:5] for c in commands]


@pytest.mark.asyncio
async def test_graphrag_write_through_each_versions_permission_api(ds):
    editor, anonymous = {"id": "editor"}, None
    if DATASETTE_1:
        from datasette.resources import DatabaseResource

        assert ds.actions["graphrag-write"].resource_class is DatabaseResource

        async def allowed(actor):
            return await ds.allowed(
                action="graphrag-write", resource=DatabaseResource(database="graphrag"), actor=actor
            )
    else:

        async def allowed(actor):
            return await ds.permission_allowed(actor, "graphrag-write", "graphrag", default=False)

    assert (await allowed(editor), await allowed(anonymous)) == (True, False)


def test_concurrent_clients_during_an_ingest_get_no_errors(sample_db, tmp_path, serve):
    # Item 1: 8 clients browsing while another process ingests (2 of 2,004 requests failed)
    import concurrent.futures

    path = copy_db(sample_db, tmp_path)
    pages = ["/", "/graphrag", "/graphrag/entities", "/graphrag/relations?_size=5",
             "/graphrag/-/graphrag/status", "/graphrag/entity_vec"]
    log = tmp_path / "serve.log"
    with serve(path, log=log) as url:
        ingest = subprocess.Popen(
            [sys.executable, "-m", "llm", "graphrag", "ingest", str(ROOT / "sample-corpus"),
             "--force", "-d", str(path)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )

        def client(number):
            statuses = []
            with httpx.Client(base_url=url, timeout=60) as http:
                while ingest.poll() is None or len(statuses) < len(pages):
                    page = pages[(number + len(statuses)) % len(pages)]
                    statuses.append((http.get(page).status_code, page))
            return statuses

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            results = [s for statuses in pool.map(client, range(8)) for s in statuses]
        output = ingest.communicate(timeout=300)[0].decode()
    assert ingest.returncode == 0, output
    assert [r for r in results if r[0] != 200] == [], log.read_text()[-4000:]  # the server's traceback
    assert len(results) > 8 * len(pages)
    text = log.read_text()
    assert "Traceback" not in text and "SQL logic error" not in text, text[-3000:]
