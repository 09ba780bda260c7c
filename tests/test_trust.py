"""Trustworthy storage: routine commands keep the graph, bad values are 400s, CSRF."""

import json
import pathlib
import shutil
import types

import datasette.plugins
import pytest
import pytest_asyncio
from click.testing import CliRunner
from datasette import hookimpl as datasette_hookimpl
from datasette.app import Datasette

from llm_graphrag.cli import graphrag as graphrag_cli
from llm_graphrag.db import open_database
from llm_graphrag.ingest import ingest_docs
from llm_graphrag.tools import call_tool

SAMPLE_CORPUS = pathlib.Path(__file__).parent.parent / "sample-corpus"


def graph_snapshot(path):
    """Every graph table as sorted rows, ids replaced by what they name."""
    db = open_database(path, create=False)
    try:
        q = lambda sql: sorted((tuple(r) for r in db.execute(sql).fetchall()), key=repr)  # noqa: E731
        return {
            "docs": q("select path, title, hash, extracted_hash from docs"),
            "chunks": q(
                "select d.path, c.seq, c.content, c.prelude, c.section, c.hash, c.meta "
                "from chunks c join docs d on d.id = c.doc_id"
            ),
            "entities": q(
                "select type, name, norm, aliases, description, popularity, meta, status "
                "from entities"
            ),
            "mentions": q(
                "select d.path, c.seq, m.span_start, m.span_end, m.surface, m.type, m.score, "
                "m.link_score, m.features, m.snippet, m.meta, e.type, e.name "
                "from mentions m join chunks c on c.id = m.chunk_id join docs d on d.id = m.doc_id "
                "left join entities e on e.id = m.entity_id"
            ),
            "relations": q(
                "select s.name, r.rel, o.name, r.weight, r.confidence, r.fact, c.hash, "
                "r.evidence_count, r.meta from relations r join entities s on s.id = r.src_id "
                "join entities o on o.id = r.dst_id left join chunks c on c.id = r.chunk_id"
            ),
            "relation_evidence": q(
                "select s.name, r.rel, o.name, d.path, c.seq, v.sentence, v.confidence, "
                "v.extractor from relation_evidence v join relations r on r.id = v.relation_id "
                "join entities s on s.id = r.src_id join entities o on o.id = r.dst_id "
                "join chunks c on c.id = v.chunk_id join docs d on d.id = v.doc_id"
            ),
            "embeddings": q(
                "select c.name, e.content_hash, count(*) from embeddings e "
                "join collections c on c.id = e.collection_id group by 1, 2"
            ),
            "gazetteer_terms": q(
                "select d.path, g.norm, g.term, g.type from gazetteer_terms g "
                "join docs d on d.id = g.doc_id"
            ),
            "vectors": q(
                "select 'chunk_vec', count(*) from chunk_vec union all "
                "select 'entity_vec', count(*) from entity_vec union all "
                "select 'fact_vec', count(*) from fact_vec"
            ),
        }
    finally:
        db.close()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """A part of the sample corpus: enough for relations, quick to ingest."""
    folder = tmp_path_factory.mktemp("trust") / "corpus"
    for sub in ("services", "runbooks"):
        shutil.copytree(SAMPLE_CORPUS / sub, folder / sub)
    return folder


@pytest.fixture(scope="module")
def clean(corpus, tmp_path_factory):
    """A clean ingest of ``corpus`` and its snapshot."""
    path = tmp_path_factory.mktemp("clean") / "g.db"
    db = open_database(path)
    assert ingest_docs(db, [str(corpus)]).errors == []
    db.close()
    snapshot = graph_snapshot(path)
    for table in ("entities", "mentions", "relations", "relation_evidence"):
        assert snapshot[table], table
    return path, snapshot


def test_ingest_force_keeps_the_graph(clean, corpus, tmp_path, user_path):
    path = tmp_path / "g.db"
    shutil.copy(clean[0], path)
    result = CliRunner().invoke(
        graphrag_cli, ["ingest", str(corpus), "-d", str(path), "--force", "--json"],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    assert graph_snapshot(path) == clean[1]


def test_skip_if_seen_false_over_the_engine_keeps_the_graph(clean, corpus, tmp_path):
    path = tmp_path / "g.db"
    shutil.copy(clean[0], path)
    db = open_database(path)
    # Twice: the second run starts from a graph the first rewrote.
    for _ in range(2):
        ingest_docs(db, [str(corpus)], skip_if_seen=False)
    db.close()
    assert graph_snapshot(path) == clean[1]


def test_prune_leaves_no_entity_without_mentions(corpus, tmp_path):
    folder = tmp_path / "corpus"
    shutil.copytree(corpus, folder)
    db = open_database(tmp_path / "g.db")
    ingest_docs(db, [str(folder)])
    only_heron = [
        name for (name,) in db.execute(
            "select e.name from entities e join mentions m on m.entity_id = e.id "
            "join docs d on d.id = m.doc_id group by e.id "
            "having max(d.path not like '%/heron.html') = 0"
        )
    ]
    assert only_heron
    (folder / "services" / "heron.html").unlink()
    assert ingest_docs(db, [str(folder)], prune=True).pruned == 1
    orphans = db.execute(
        "select name from entities where id not in "
        "(select entity_id from mentions where entity_id is not null)"
    ).fetchall()
    assert orphans == []
    assert db.execute("select count(*) from entities where popularity <= 0").fetchone()[0] == 0
    # What only the deleted file mentioned cannot be found either.
    for name in only_heron:
        found = call_tool(db, "entity_lookup", {"q": name})["entities"]
        assert name not in [e["name"] for e in found], name
    db.close()


def test_re_extraction_keeps_the_graph(clean, tmp_path, user_path):
    path = tmp_path / "g.db"
    shutil.copy(clean[0], path)
    result = CliRunner().invoke(
        graphrag_cli, ["extract", "-d", str(path), "--force", "--json"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    assert graph_snapshot(path) == clean[1]


# ---------------------------------------------------------------------------------------
# CSRF: write tools over HTTP refuse cross-origin requests that carry a user's cookie


TOKENS = {"s3cret-token": {"id": "editor"}}


@datasette_hookimpl
def actor_from_request(datasette, request):
    """A plugin as datasette-auth-tokens is: a bearer token names an actor."""
    authorization = request.headers.get("authorization", "")
    if authorization.startswith("Bearer "):
        return TOKENS.get(authorization[len("Bearer "):])


@pytest_asyncio.fixture
async def served(tmp_path):
    """A Datasette on a new graphrag database; a folder under its ingest root."""
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    (allowed / "note.md").write_text("# Note\n\nHeron uses the Basin API.\n")
    path = tmp_path / "graphrag.db"
    open_database(path).close()
    plugin = types.ModuleType("test_bearer_tokens")
    plugin.actor_from_request = actor_from_request
    datasette.plugins.pm.register(plugin, name="test-bearer-tokens")
    try:
        ds = Datasette(
            [str(path)],
            metadata={"plugins": {"datasette-graphrag": {"ingest_roots": [str(allowed)]}}},
        )
        await ds.invoke_startup()
        yield ds, allowed, path
    finally:
        datasette.plugins.pm.unregister(plugin)


def editor_cookie(ds):
    return "ds_actor=" + ds.sign({"a": {"id": "editor"}}, "actor")


def docs_count(path):
    db = open_database(path, create=False)
    try:
        return db["docs"].count
    finally:
        db.close()


INGEST = "/graphrag/-/graphrag/ingest_docs"


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "headers, status, message",
    [
        (
            {"content-type": "text/plain", "origin": "http://evil.example"},
            403,
            "Cross-origin request from http://evil.example refused: tool calls with cookies "
            "must come from this server's own pages; other clients send a token instead",
        ),
        (
            {"content-type": "application/json", "origin": "http://evil.example"},
            403,
            "Cross-origin request from http://evil.example refused: tool calls with cookies "
            "must come from this server's own pages; other clients send a token instead",
        ),
        (
            {"content-type": "application/json", "origin": "null"},
            403,
            "Cross-origin request from null refused: tool calls with cookies "
            "must come from this server's own pages; other clients send a token instead",
        ),
        (
            {"content-type": "text/plain", "sec-fetch-site": "cross-site"},
            403,
            "Cross-site request refused: tool calls with cookies must come from this "
            "server's own pages; other clients send a token instead",
        ),
        (
            {"content-type": "text/plain", "origin": "http://localhost"},
            415,
            "Send the request body as JSON with 'Content-Type: application/json' "
            "(got 'text/plain')",
        ),
        (
            {"content-type": "application/x-www-form-urlencoded"},
            415,
            "Send the request body as JSON with 'Content-Type: application/json' "
            "(got 'application/x-www-form-urlencoded')",
        ),
    ],
)
async def test_cookie_carrying_forgeries_are_refused(served, headers, status, message):
    ds, allowed, path = served
    body = json.dumps({"paths": [str(allowed)]})
    response = await ds.client.post(
        INGEST, content=body, headers=dict(headers, cookie=editor_cookie(ds))
    )
    assert response.status_code == status, response.text
    assert response.json()["error"] == message
    assert docs_count(path) == 0


@pytest.mark.asyncio
async def test_same_origin_json_with_a_cookie_ingests(served):
    ds, allowed, path = served
    response = await ds.client.post(
        INGEST,
        content=json.dumps({"paths": [str(allowed)]}),
        headers={
            "content-type": "application/json; charset=utf-8",
            "origin": "http://localhost",
            "sec-fetch-site": "same-origin",
            "cookie": editor_cookie(ds),
        },
    )
    assert response.status_code == 200, response.text
    assert response.json()["ingested"] == 1
    assert docs_count(path) == 1


@pytest.mark.asyncio
async def test_token_clients_still_work(served):
    ds, allowed, path = served
    # A token client from anywhere: no cookie, so no browser acts for a signed-in user.
    response = await ds.client.post(
        INGEST,
        json={"paths": [str(allowed)]},
        headers={"authorization": "Bearer s3cret-token", "origin": "http://tools.example"},
    )
    assert response.status_code == 200, response.text
    assert response.json()["ingested"] == 1
    # Without the token the same request is anonymous, and refused.
    response = await ds.client.post(
        "/graphrag/-/graphrag/extract_and_link", json={},
    )
    assert response.status_code == 403
    # A token client must still send JSON as JSON.
    response = await ds.client.post(
        "/graphrag/-/graphrag/extract_and_link", content="{}",
        headers={"authorization": "Bearer s3cret-token", "content-type": "text/plain"},
    )
    assert response.status_code == 415
    assert docs_count(path) == 1


# ---------------------------------------------------------------------------------------
# Values JSON Schema accepts that the engine cannot use: 400 naming the field, not 500

BIG = 10**23
OUT_OF_RANGE = (
    f"{BIG} is out of range: integers must lie between -9223372036854775808 and "
    "9223372036854775807"
)


@pytest_asyncio.fixture
async def ingested(served):
    ds, allowed, path = served
    response = await ds.client.post(
        INGEST, json={"paths": [str(allowed)]}, headers={"authorization": "Bearer s3cret-token"}
    )
    assert response.status_code == 200, response.text
    return ds, allowed, path


@pytest.mark.asyncio
async def test_whole_floats_count_as_the_integers_they_are(ingested):
    ds = ingested[0]
    for tool, whole, written in [
        ("hybrid_query", {"q": "Heron Basin", "k": 5.0, "hops": 1.0}, {"q": "Heron Basin", "k": 5, "hops": 1}),
        ("topn", {"limit": 3.0}, {"limit": 3}),
        ("explain_entity", {"entity_id": 1.0}, {"entity_id": 1}),
    ]:
        as_float = await ds.client.post(f"/graphrag/-/graphrag/{tool}", json=whole)
        as_int = await ds.client.post(f"/graphrag/-/graphrag/{tool}", json=written)
        assert as_float.status_code == 200, as_float.text
        assert as_float.json() == as_int.json()
    response = await ds.client.post("/graphrag/-/graphrag/hybrid_query", json={"q": "x", "k": 5.5})
    assert response.status_code == 400
    assert response.json()["field"] == "k"


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "tool, arguments, field, message",
    [
        ("explain_entity", {"entity_id": BIG}, "entity_id", OUT_OF_RANGE),
        ("subgraph", {"doc_id": BIG}, "doc_id", OUT_OF_RANGE),
        ("hybrid_query", {"q": "Heron\x00Basin"}, "q", "contains a NUL byte (\\x00): remove it"),
        ("entity_lookup", {"q": "Heron\x00"}, "q", "contains a NUL byte (\\x00): remove it"),
        ("ingest_docs", {"paths": ["{allowed}/note\x00.md"]}, "paths.0", "contains a NUL byte (\\x00): remove it"),
        ("subgraph", {"doc_id": "{allowed}/note.md\x00"}, "doc_id", "contains a NUL byte (\\x00): remove it"),
    ],
)
async def test_unusable_values_are_400s_naming_the_field(ingested, tool, arguments, field, message):
    ds, allowed, path = ingested
    arguments = json.loads(json.dumps(arguments).replace("{allowed}", str(allowed)))
    response = await ds.client.post(
        f"/graphrag/-/graphrag/{tool}", json=arguments,
        headers={"authorization": "Bearer s3cret-token"},
    )
    assert response.status_code == 400, response.text
    assert response.json()["field"] == field
    assert response.json()["error"] == f"{tool}: {field}: {message}"


@pytest.mark.asyncio
async def test_unusable_values_in_a_query_string_are_400s(ingested):
    ds = ingested[0]
    response = await ds.client.get("/graphrag/-/graphrag/explain_entity", params={"entity_id": str(BIG)})
    assert response.status_code == 400
    assert response.json()["error"] == f"explain_entity: entity_id: {OUT_OF_RANGE}"
    response = await ds.client.get("/graphrag/-/graphrag/hybrid_query", params={"q": "a\x00b"})
    assert response.status_code == 400
    assert response.json()["field"] == "q"
