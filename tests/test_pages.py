"""The entity page, the graph explorer and the row-page links, in Datasette and in Chromium."""

import contextlib
import json
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.parse

import pytest
import pytest_asyncio
import sqlite_utils
import uvicorn
from datasette.app import Datasette
from datasette.version import __version__ as datasette_version
from datasette.database import Database
from markupsafe import Markup
from playwright.sync_api import sync_playwright

import datasette_graphrag
from datasette_graphrag.links import render_link
from datasette_graphrag.pages import entity_page, explore_page
from llm_graphrag.db import open_database
from llm_graphrag.db import sqlite3 as graphrag_sqlite3
from llm_graphrag.extraction import normalize

SAMPLE_CORPUS = pathlib.Path(__file__).parent.parent / "sample-corpus"

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

DEFINITION = "The largest lake in Western Europe, shared by Switzerland and France."
CHUNK_1 = "Lake Geneva is a lake on the Rhône river between Switzerland and France."
CHUNK_2 = "The Rhône flows out of Lake Geneva at Geneva."
CHUNK_3 = "The Grande Dixence dam in Switzerland stores water for hydropower."


def build_graph_database(path):
    """Two documents, three chunks, five entities, their mentions and four relations."""
    db = open_database(path)
    db["docs"].insert_all(
        [
            {"id": 1, "path": "/corpus/lakes.md", "title": "Lakes", "mtime_ms": 1700000000000, "meta": "{}"},
            {"id": 2, "path": "/corpus/dams.md", "title": "Dams", "mtime_ms": 1700000500000, "meta": "{}"},
        ]
    )
    db["chunks"].insert_all(
        [
            {"id": 1, "doc_id": 1, "seq": 0, "section": "Lakes", "content": CHUNK_1},
            {"id": 2, "doc_id": 1, "seq": 1, "section": "Rivers", "content": CHUNK_2},
            {"id": 3, "doc_id": 2, "seq": 0, "section": "Dams", "content": CHUNK_3},
        ]
    )
    entities = [
        (1, "Lake Geneva", "place", ["Lac Léman", "Lake Leman"], DEFINITION, 3),
        (2, "Rhône", "river", ["Rhone"], None, 2),
        (3, "Switzerland", "country", [], None, 2),
        (4, "Geneva", "city", [], None, 1),
        (5, "Grande Dixence", "dam", [], None, 1),
    ]
    db["entities"].insert_all(
        {
            "id": id,
            "name": name,
            "norm": normalize(name),
            "type": type,
            "aliases": json.dumps(aliases, ensure_ascii=False),
            "description": description,
            "popularity": popularity,
        }
        for id, name, type, aliases, description, popularity in entities
    )
    mentions = [
        (1, 1, 1, "Lake Geneva", 0.97, "Lake Geneva is a lake on the Rhône river"),
        (1, 1, 2, "Lake Geneva", 0.88, None),
        (2, 1, 1, "Rhône", 0.9, None),
        (2, 1, 2, "Rhône", 0.93, None),
        (3, 1, 1, "Switzerland", 0.95, None),
        (4, 1, 2, "Geneva", 0.8, None),
        (5, 2, 3, "Grande Dixence", 0.99, None),
        (3, 2, 3, "Switzerland", 0.9, None),
    ]
    db["mentions"].insert_all(
        {"entity_id": e, "doc_id": d, "chunk_id": c, "surface": s, "link_score": l, "snippet": snippet}
        for e, d, c, s, l, snippet in mentions
    )
    relations = [
        (1, 2, 1, "FLOWS_THROUGH", 1.0, 0.9, "The Rhône flows through Lake Geneva.", 2),
        (2, 1, 3, "LOCATED_IN", 1.0, 0.8, "Lake Geneva lies partly in Switzerland.", 1),
        (3, 4, 1, "ON_SHORE_OF", 0.5, 0.7, "Geneva lies on Lake Geneva.", 2),
        (4, 5, 3, "LOCATED_IN", 1.0, 0.95, "Grande Dixence is in Switzerland.", 3),
    ]
    db["relations"].insert_all(
        {"id": id, "src_id": s, "dst_id": d, "rel": rel, "weight": w, "confidence": c, "fact": fact, "chunk_id": chunk}
        for id, s, d, rel, w, c, fact, chunk in relations
    )
    db.close()
    return path


@pytest.fixture
def lakes_db(tmp_path):
    return build_graph_database(tmp_path / "lakes.db")


@pytest_asyncio.fixture
async def ds(lakes_db):
    datasette = Datasette([str(lakes_db)])
    await datasette.invoke_startup()
    return datasette


def error_message(html):
    """The message in Datasette's error page."""
    match = re.search(r'<div style="padding: 1em; margin: 1em 0; border: 3px solid red;">(.*?)</div>', html, re.S)
    return match.group(1) if match else None


def page_config(html):
    match = re.search(r'<script type="application/json" id="graphrag-config">(.*?)</script>', html, re.S)
    return json.loads(match.group(1))


LINKS = {
    "entity": "/lakes/-/graphrag/entity/",
    "explore": "/lakes/-/graphrag/explore",
    "api": "/lakes/-/graphrag/",
    "rows": {"docs": "/lakes/docs/", "chunks": "/lakes/chunks/", "entities": "/lakes/entities/"},
    "database": "lakes",
}


# Through Datasette's test client ------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "path,title",
    [
        ("/lakes/-/graphrag/entity/1", "<title>Lake Geneva (place): lakes</title>"),
        ("/lakes/-/graphrag/explore", "<title>Graph explorer: lakes</title>"),
    ],
)
async def test_pages_render(ds, path, title):
    response = await ds.client.get(path)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert title in response.text


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "path,message",
    [
        ("/lakes/-/graphrag/entity/99", "No entity with id 99: use entity_lookup to find ids"),
        ("/nope/-/graphrag/entity/1", "Database &#39;nope&#39; not found"),
        ("/nope/-/graphrag/explore", "Database &#39;nope&#39; not found"),
        ("/lakes/-/graphrag/explore?entity=99", "Entity 99 not found"),
        ("/lakes/-/graphrag/explore?chunk=99", "Chunk 99 not found"),
        ("/lakes/-/graphrag/explore?doc=99", "Document 99 not found"),
    ],
)
async def test_missing_things_are_404_pages(ds, path, message):
    response = await ds.client.get(path)
    assert response.status_code == 404
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert error_message(response.text) == message


@pytest.fixture
def contain_metadata_leaks():
    yield
    # The plugin caches its metadata; drop the cache so a leak cannot reach other tests
    datasette_graphrag.graphrag_metadata.cache_clear()


@pytest.mark.asyncio
@pytest.mark.parametrize("path", ["/{}/-/graphrag/entity/1", "/{}/-/graphrag/explore"])
async def test_pages_obey_database_permissions(lakes_db, tmp_path, path, contain_metadata_leaks):
    other = tmp_path / "other.db"
    other.write_bytes(lakes_db.read_bytes())
    metadata = {"databases": {"lakes": {"allow": {"id": "root"}}}}
    datasette = Datasette([str(lakes_db), str(other)], metadata=metadata)
    await datasette.invoke_startup()
    response = await datasette.client.get(path.format("lakes"))
    assert response.status_code == 403
    assert error_message(response.text) == "Not allowed to view database &#39;lakes&#39;"
    cookies = {"ds_actor": datasette.sign({"a": {"id": "root"}}, "actor")}
    assert (await datasette.client.get(path.format("lakes"), cookies=cookies)).status_code == 200
    # Neither another database nor another Datasette inherits the restriction
    assert (await datasette.client.get(path.format("other"))).status_code == 200
    unrestricted = Datasette([str(lakes_db)])
    await unrestricted.invoke_startup()
    assert (await unrestricted.client.get(path.format("lakes"))).status_code == 200


@pytest.mark.asyncio
@pytest.mark.parametrize("path", ["/lakes/-/graphrag/entity/1", "/lakes/-/graphrag/explore"])
async def test_pages_obey_instance_permissions(lakes_db, path):
    datasette = Datasette([str(lakes_db)], metadata={"allow": {"id": "root"}})
    await datasette.invoke_startup()
    response = await datasette.client.get(path)
    assert response.status_code == 403
    assert error_message(response.text) == "You do not have permission to view this instance"
    cookies = {"ds_actor": datasette.sign({"a": {"id": "root"}}, "actor")}
    assert (await datasette.client.get(path, cookies=cookies)).status_code == 200


@pytest.mark.asyncio
async def test_explorer_search_box_shows_the_preselected_name(ds):
    response = await ds.client.get("/lakes/-/graphrag/explore?entity=1")
    assert response.status_code == 200
    assert 'id="graphrag-search" name="entity" value="Lake Geneva"' in response.text


@pytest.mark.asyncio
async def test_explorer_is_404_for_a_database_without_graphrag(ds, tmp_path):
    sqlite_utils.Database(tmp_path / "plain.db")["t"].insert({"id": 1})
    ds.add_database(Database(ds, path=str(tmp_path / "plain.db")), name="plain")
    response = await ds.client.get("/plain/-/graphrag/explore")
    assert response.status_code == 404
    assert error_message(response.text) == (
        "Database &#39;plain&#39; is not a graphrag database: create one with &#39;llm graphrag init&#39;"
    )


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "query,seed,notice",
    [
        ("", None, ""),
        ("?entity=3", {"kind": "entity", "entity": {"id": 3, "name": "Switzerland", "type": "country"}}, ""),
        ("?entity=lake+geneva", {"kind": "entity", "entity": {"id": 1, "name": "Lake Geneva", "type": "place"}}, ""),
        ("?entity=zzzz", None, "No entity matches &#34;zzzz&#34;"),
        ("?doc=2", {"kind": "doc", "doc": {"id": 2, "title": "Dams", "path": "/corpus/dams.md"}}, ""),
        (
            "?chunk=2",
            {
                "kind": "chunk",
                "chunk": {
                    "id": 2, "seq": 1, "section": "Rivers", "snippet": CHUNK_2,
                    "doc_id": 1, "title": "Lakes", "path": "/corpus/lakes.md",
                },
                "entities": [
                    {"id": 1, "name": "Lake Geneva", "type": "place", "mentions": 1},
                    {"id": 2, "name": "Rhône", "type": "river", "mentions": 1},
                    {"id": 4, "name": "Geneva", "type": "city", "mentions": 1},
                ],
            },
            "",
        ),
    ],
)
async def test_explorer_preselects_from_the_query_string(ds, query, seed, notice):
    response = await ds.client.get("/lakes/-/graphrag/explore" + query)
    assert response.status_code == 200
    assert page_config(response.text) == dict(LINKS, seed=seed)
    status = re.search(r'<p id="graphrag-status"[^>]*>(.*?)</p>', response.text).group(1)
    assert status == notice


@pytest.mark.asyncio
async def test_links_honour_base_url(lakes_db):
    datasette = Datasette([str(lakes_db)], settings={"base_url": "/prefix/"})
    await datasette.invoke_startup()
    html = (await datasette.client.get("/lakes/-/graphrag/explore")).text
    assert page_config(html) == {
        "entity": "/prefix/lakes/-/graphrag/entity/",
        "explore": "/prefix/lakes/-/graphrag/explore",
        "api": "/prefix/lakes/-/graphrag/",
        "rows": {"docs": "/prefix/lakes/docs/", "chunks": "/prefix/lakes/chunks/", "entities": "/prefix/lakes/entities/"},
        "database": "lakes",
        "seed": None,
    }
    assert '<script src="/prefix/-/static-plugins/datasette_graphrag/graphrag-explorer.js" defer>' in html
    assert render_link(datasette, "lakes", "docs", "id", 2, None) == Markup(
        '2 · <a class="graphrag-link" href="/prefix/lakes/-/graphrag/explore?doc=2">explore graph</a>'
    )


def test_plugin_routes_reach_the_pages():
    # Datasette takes the first matching route: the pages must precede /-/graphrag/<tool>
    for path, view in (
        ("/lakes/-/graphrag/explore", explore_page),
        ("/lakes/-/graphrag/entity/1", entity_page),
    ):
        first = next(v for regex, v in datasette_graphrag.register_routes() if re.match(regex, path))
        assert first is view, path


@pytest.mark.asyncio
async def test_explorer_assets_are_served(ds):
    html = (await ds.client.get("/lakes/-/graphrag/explore")).text
    for name, kind in (("graphrag-explorer.js", "text/javascript"), ("graphrag-explorer.css", "text/css")):
        url = f"/-/static-plugins/datasette_graphrag/{name}"
        assert url in html
        response = await ds.client.get(url)
        assert response.status_code == 200
        assert response.headers["content-type"].split(";")[0] == kind


@pytest.mark.asyncio
async def test_render_link_for_graphrag_columns(ds):
    def link(table, column, value):
        return render_link(ds, "lakes", table, column, value, None)

    entity = '<a class="graphrag-link" href="/lakes/-/graphrag/entity/{0}" title="GraphRAG entity page">{1}</a>'
    labelled = '{0} · <a class="graphrag-link" href="/lakes/-/graphrag/{1}">{2}</a>'
    assert link("entities", "id", 1) == Markup(labelled.format(1, "entity/1", "entity page"))
    assert link("mentions", "entity_id", 4) == Markup(entity.format(4, 4))
    assert link("relations", "src_id", {"value": 2, "label": "Rhône"}) == Markup(
        entity.format(2, "Rhône") + "&nbsp;<em>2</em>"
    )
    assert link("relations", "dst_id", {"value": 5, "label": "<b>"}) == Markup(
        entity.format(5, "&lt;b&gt;") + "&nbsp;<em>5</em>"
    )
    assert link("chunks", "id", 2) == Markup(labelled.format(2, "explore?chunk=2", "explore graph"))
    assert link("docs", "id", 1) == Markup(labelled.format(1, "explore?doc=1", "explore graph"))
    assert link("mentions", "entity_id", None) is None
    assert link("chunks", "content", "text") is None
    assert link("entities", "name", "Geneva") is None
    assert render_link(ds, "other", "entities", "id", 1, None) is None


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "path,cell",
    [
        (
            "/lakes/entities/1",
            '<td class="col-id type-int">1 · <a class="graphrag-link" href="/lakes/-/graphrag/entity/1">'
            "entity page</a></td>",
        ),
        (
            "/lakes/chunks/2",
            '<td class="col-id type-int">2 · <a class="graphrag-link" href="/lakes/-/graphrag/explore?chunk=2">'
            "explore graph</a></td>",
        ),
        (
            "/lakes/docs/1",
            '<td class="col-id type-int">1 · <a class="graphrag-link" href="/lakes/-/graphrag/explore?doc=1">'
            "explore graph</a></td>",
        ),
        (
            "/lakes/relations/4",
            '<td class="col-src_id type-int"><a class="graphrag-link" href="/lakes/-/graphrag/entity/5" '
            'title="GraphRAG entity page">5</a></td>'
            if datasette_version.startswith("0.")
            # Datasette 1.0 labels foreign keys on row pages too
            else '<td class="col-src_id type-dict"><a class="graphrag-link" href="/lakes/-/graphrag/entity/5" '
            'title="GraphRAG entity page">Grande Dixence</a>&nbsp;<em>5</em></td>',
        ),
        (
            "/lakes/relations?id=4",
            '<td class="col-src_id type-dict"><a class="graphrag-link" href="/lakes/-/graphrag/entity/5" '
            'title="GraphRAG entity page">Grande Dixence</a>&nbsp;<em>5</em></td>',
        ),
    ],
)
async def test_datasette_pages_link_to_graphrag_pages(ds, path, cell):
    response = await ds.client.get(path)
    assert response.status_code == 200
    # Datasette 1.0 puts a row page's primary key in <strong>
    cells = re.findall(r"<td class=.*?</td>", response.text.replace("<strong>", "").replace("</strong>", ""), re.S)
    assert cell in cells


# In Chromium against a served Datasette --------------------------------------------


@contextlib.contextmanager
def serve_in_thread(path):
    """Datasette serving ``path`` on a free 127.0.0.1 port, by uvicorn in a thread."""
    datasette = Datasette([str(path)])
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    uvicorn_server = uvicorn.Server(
        uvicorn.Config(datasette.app(), log_level="warning", lifespan="on")
    )
    thread = threading.Thread(target=uvicorn_server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not uvicorn_server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "Datasette did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        uvicorn_server.should_exit = True
        thread.join(10)
        sock.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    path = build_graph_database(tmp_path_factory.mktemp("served") / "lakes.db")
    with serve_in_thread(path) as url:
        yield url


@pytest.fixture(scope="module")
def sample_server(sample_db, tmp_path_factory):
    """The sample corpus's database (a copy) served: the graph a new user sees."""
    path = tmp_path_factory.mktemp("sample-served") / "graphrag.db"
    shutil.copy(sample_db, path)
    with serve_in_thread(path) as url:
        yield url, path


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    context.close()
    assert errors == []


def table_rows(page, selector):
    return [
        [cell.inner_text() for cell in row.locator("td").all()]
        for row in page.locator(f"{selector} tbody tr").all()
    ]


def node_labels(page):
    return sorted(page.locator("#graphrag-graph .graphrag-node").evaluate_all("ns => ns.map(n => n.getAttribute('aria-label'))"))


def wait_for_nodes(page, count):
    page.wait_for_function(f"document.querySelectorAll('#graphrag-graph .graphrag-node').length === {count}")


def test_entity_page_in_chromium(server, page):
    page.goto(f"{server}/lakes/-/graphrag/entity/1")
    assert page.title() == "Lake Geneva (place): lakes"
    assert page.locator("h1").inner_text() == "Lake Geneva place"
    assert page.locator(".graphrag-definition").inner_text() == DEFINITION
    assert page.locator(".graphrag-aliases li").all_inner_texts() == ["Lac Léman", "Lake Leman"]
    assert table_rows(page, ".graphrag-relations") == [
        ["Rhône", "FLOWS_THROUGH", "Lake Geneva", "The Rhône flows through Lake Geneva.", "0.90", "1.00"],
        ["Lake Geneva", "LOCATED_IN", "Switzerland", "Lake Geneva lies partly in Switzerland.", "0.80", "1.00"],
        ["Geneva", "ON_SHORE_OF", "Lake Geneva", "Geneva lies on Lake Geneva.", "0.70", "0.50"],
    ]
    assert table_rows(page, ".graphrag-sources") == [
        ["/corpus/lakes.md", "chunk 1", "Lake Geneva is a lake on the Rhône river", "0.97", "1"],
        ["/corpus/lakes.md", "chunk 2", CHUNK_2, "0.88", "1"],
    ]
    # A related entity links to its own page, a source to Datasette's chunk row
    page.locator(".graphrag-relations a", has_text="Switzerland").click()
    page.wait_for_url(f"{server}/lakes/-/graphrag/entity/3")
    assert table_rows(page, ".graphrag-relations") == [
        ["Grande Dixence", "LOCATED_IN", "Switzerland", "Grande Dixence is in Switzerland.", "0.95", "1.00"],
        ["Lake Geneva", "LOCATED_IN", "Switzerland", "Lake Geneva lies partly in Switzerland.", "0.80", "1.00"],
    ]
    assert page.locator(".graphrag-definition").inner_text() == CHUNK_1
    assert page.locator(".graphrag-aliases").count() == 0
    page.locator(".graphrag-sources a", has_text="chunk 3").click()
    page.wait_for_url(f"{server}/lakes/chunks/3")
    assert page.locator("h1").inner_text() == "chunks: 3"
    assert page.locator("td.col-content").inner_text() == CHUNK_3


def test_explorer_search_expand_and_follow_a_chunk(server, page):
    page.goto(f"{server}/lakes/-/graphrag/explore")
    assert node_labels(page) == []
    page.locator("#graphrag-search").fill("lake gen")
    page.wait_for_selector(".graphrag-result")
    assert page.locator(".graphrag-result").evaluate_all(
        "bs => bs.map(b => [b.dataset.entityId, b.textContent])"
    ) == [["1", "Lake Geneva place"], ["4", "Geneva city"]]
    page.locator('.graphrag-result[data-entity-id="1"]').click()

    # Its neighbours become SVG nodes, typed through subgraph, joined by typed edges
    wait_for_nodes(page, 4)
    page.wait_for_selector('.graphrag-node[data-entity-id="3"][data-type="country"]')
    assert node_labels(page) == ["Geneva", "Lake Geneva", "Rhône", "Switzerland"]
    assert page.locator(".graphrag-node.graphrag-selected").get_attribute("aria-label") == "Lake Geneva"
    assert sorted(
        page.locator(".graphrag-edge").evaluate_all(
            "es => es.map(e => [e.dataset.source, e.dataset.type, e.dataset.target])"
        )
    ) == [
        ["entity:1", "LOCATED_IN", "entity:3"],
        ["entity:2", "FLOWS_THROUGH", "entity:1"],
        ["entity:4", "ON_SHORE_OF", "entity:1"],
    ]
    assert page.locator("#graphrag-panel h2").inner_text() == "Lake Geneva place"
    assert page.locator("#graphrag-panel .graphrag-definition").inner_text() == DEFINITION
    assert page.locator(".graphrag-aliases-line").inner_text() == "Also known as: Lac Léman, Lake Leman"
    assert page.locator(".graphrag-panel-relations li").all_inner_texts() == [
        "Rhône FLOWS_THROUGH Lake Geneva 0.90\nThe Rhône flows through Lake Geneva.",
        "Lake Geneva LOCATED_IN Switzerland 0.80\nLake Geneva lies partly in Switzerland.",
        "Geneva ON_SHORE_OF Lake Geneva 0.70\nGeneva lies on Lake Geneva.",
    ]
    assert page.url == f"{server}/lakes/-/graphrag/explore?entity=1"

    # Clicking a neighbour node expands it and updates the side panel
    page.locator('.graphrag-node[data-entity-id="3"] circle').click()
    page.wait_for_function("document.querySelector('#graphrag-panel h2')?.textContent === 'Switzerland country'")
    wait_for_nodes(page, 5)
    assert node_labels(page) == ["Geneva", "Grande Dixence", "Lake Geneva", "Rhône", "Switzerland"]
    assert page.locator(".graphrag-node.graphrag-selected").get_attribute("aria-label") == "Switzerland"
    assert page.locator(".graphrag-panel-relations li").all_inner_texts() == [
        "Grande Dixence LOCATED_IN Switzerland 0.95\nGrande Dixence is in Switzerland.",
        "Lake Geneva LOCATED_IN Switzerland 0.80\nLake Geneva lies partly in Switzerland.",
    ]
    assert page.locator(".graphrag-panel-sources li").all_inner_texts() == [
        f"/corpus/lakes.md · chunk 1 · 0.95\n{CHUNK_1}",
        f"/corpus/dams.md · chunk 3 · 0.90\n{CHUNK_3}",
    ]
    assert page.locator(".graphrag-panel-sources a").evaluate_all(
        "as => as.map(a => a.getAttribute('href'))"
    ) == ["/lakes/docs/1", "/lakes/chunks/1", "/lakes/docs/2", "/lakes/chunks/3"]

    # A relation's entity in the panel selects that node too
    page.locator(".graphrag-panel-relations .graphrag-entity-button", has_text="Grande Dixence").click()
    page.wait_for_function("document.querySelector('#graphrag-panel h2')?.textContent === 'Grande Dixence dam'")
    assert page.locator(".graphrag-node.graphrag-selected").get_attribute("aria-label") == "Grande Dixence"

    # The source chunk link opens Datasette's row page for the chunk
    page.locator(".graphrag-panel-sources a.graphrag-chunk-link").click()
    page.wait_for_url(f"{server}/lakes/chunks/3")
    assert page.locator("h1").inner_text() == "chunks: 3"
    assert page.locator("td.col-content").inner_text() == CHUNK_3


def test_explorer_from_datasette_row_pages(server, page):
    # The chunk row page links to the explorer preselecting the chunk
    page.goto(f"{server}/lakes/chunks/2")
    page.locator("td.col-id a.graphrag-link").click()
    page.wait_for_url(f"{server}/lakes/-/graphrag/explore?chunk=2")
    wait_for_nodes(page, 5)
    assert node_labels(page) == ["Geneva", "Lake Geneva", "Lakes", "Rhône", "chunk 2"]
    assert page.locator("#graphrag-panel h2").inner_text() == "chunk 2"
    assert page.locator("#graphrag-panel .graphrag-snippet").inner_text() == CHUNK_2
    assert page.locator(".graphrag-panel-entities li").all_inner_texts() == [
        "Lake Geneva place",
        "Rhône river",
        "Geneva city",
    ]
    page.locator(".graphrag-panel-entities .graphrag-entity-button", has_text="Rhône").click()
    page.wait_for_function("document.querySelector('#graphrag-panel h2')?.textContent === 'Rhône river'")
    assert page.locator(".graphrag-panel-relations li").all_inner_texts() == [
        "Rhône FLOWS_THROUGH Lake Geneva 0.90\nThe Rhône flows through Lake Geneva."
    ]

    # The document row page opens the document's subgraph
    page.goto(f"{server}/lakes/docs/1")
    page.locator("td.col-id a.graphrag-link").click()
    page.wait_for_url(f"{server}/lakes/-/graphrag/explore?doc=1")
    wait_for_nodes(page, 5)
    assert node_labels(page) == ["Geneva", "Lake Geneva", "Lakes", "Rhône", "Switzerland"]
    assert page.locator("#graphrag-panel h2").inner_text() == "Lakes"
    assert page.locator(".graphrag-edge[data-type='MENTIONS']").count() == 4

    # The entity row page links to the entity page
    page.goto(f"{server}/lakes/entities/4")
    page.locator("td.col-id a.graphrag-link").click()
    page.wait_for_url(f"{server}/lakes/-/graphrag/entity/4")
    assert page.locator("h1").inner_text() == "Geneva city"


def test_explorer_keyboard_and_clear(server, page):
    page.goto(f"{server}/lakes/-/graphrag/explore?entity=zzzz")
    assert page.locator("#graphrag-status").inner_text() == 'No entity matches "zzzz"'
    assert page.locator("#graphrag-search").input_value() == "zzzz"
    page.locator("#graphrag-search").fill("switz")
    page.locator("#graphrag-search").press("Enter")
    page.wait_for_function("document.querySelector('#graphrag-panel h2')?.textContent === 'Switzerland country'")
    wait_for_nodes(page, 3)
    assert node_labels(page) == ["Grande Dixence", "Lake Geneva", "Switzerland"]
    assert page.locator("#graphrag-search").input_value() == "Switzerland"
    # Nodes are keyboard-operable buttons
    page.locator('.graphrag-node[data-entity-id="5"]').focus()
    page.keyboard.press("Enter")
    page.wait_for_function("document.querySelector('#graphrag-panel h2')?.textContent === 'Grande Dixence dam'")
    page.locator("#graphrag-reset").click()
    assert node_labels(page) == []
    assert page.locator("#graphrag-panel").inner_text() == "Search for an entity, then click nodes to explore."
    assert page.url == f"{server}/lakes/-/graphrag/explore"


# The explorer on a real graph, and every page while an ingest writes ------------------


def wait_for_layout(page):
    page.wait_for_function(
        "window.graphragExplorer && !window.graphragExplorer.layout.running"
        " && !document.querySelector('#graphrag-panel .graphrag-loading')",
        timeout=30000,
    )


def expand_tidepool_and_a_neighbour(page, base):
    page.goto(f"{base}/graphrag/-/graphrag/explore?entity=tidepool")
    wait_for_layout(page)
    selected = page.locator(".graphrag-node.graphrag-selected").get_attribute("data-key")
    # Then the neighbour with the most edges, as a user exploring would
    neighbour = page.evaluate(
        """(selected) => {
            const counts = {};
            document.querySelectorAll('.graphrag-edge').forEach(e => {
                for (const key of [e.dataset.source, e.dataset.target]) counts[key] = (counts[key] || 0) + 1;
            });
            return Object.keys(counts).filter(k => k !== selected && k.startsWith('entity:'))
                .sort((a, b) => counts[b] - counts[a])[0];
        }""",
        selected,
    )
    page.locator(f'.graphrag-node[data-key="{neighbour}"]').focus()
    page.keyboard.press("Enter")
    page.wait_for_function(
        f"document.querySelector('.graphrag-node.graphrag-selected')?.dataset.key === '{neighbour}'"
    )
    wait_for_layout(page)
    page.mouse.move(1, 1)  # a hovered node shows its label even where it has no room


def explore_an_entity_with_cooccurrence(page, base, path):
    """The explorer on the entity of the served graph that has a co-occurrence edge and,
    among those, relations of the most types: what its legend and edge styles show. Read
    with the server's own SQLite module: another library's close in this process would drop
    the file locks of the server's connections (sqlite.org/howtocorrupt.html, 2.2)."""
    conn = graphrag_sqlite3.connect(path)
    (name,) = conn.execute(
        "select e.name from entities e join relations r on e.id in (r.src_id, r.dst_id) "
        "group by e.id having sum(r.rel = 'related_to') > 0 "
        "order by count(distinct r.rel) desc, e.id limit 1"
    ).fetchone()
    conn.close()
    page.goto(f"{base}/graphrag/-/graphrag/explore?" + urllib.parse.urlencode({"entity": name}))
    wait_for_layout(page)
    page.mouse.move(1, 1)


VISIBLE_LABELS = """() => [...document.querySelectorAll('#graphrag-graph text')]
    .filter(t => getComputedStyle(t).display !== 'none' && getComputedStyle(t).visibility === 'visible')
    .map(t => { const r = t.getBoundingClientRect();
                return {text: t.textContent, left: r.left, right: r.right, top: r.top, bottom: r.bottom}; })"""


def test_explorer_labels_do_not_overlap_after_expansion(sample_server, page):
    base, _ = sample_server
    expand_tidepool_and_a_neighbour(page, base)
    labels = page.evaluate(VISIBLE_LABELS)
    nodes = page.locator(".graphrag-node").count()
    # The refined sample graph (significant co-occurrence only) gives about 19 nodes here
    assert nodes >= 15 and len(labels) > nodes // 2
    overlapping = [
        (a["text"], b["text"])
        for i, a in enumerate(labels)
        for b in labels[i + 1:]
        if a["left"] < b["right"] and b["left"] < a["right"] and a["top"] < b["bottom"] and b["top"] < a["bottom"]
    ]
    assert overlapping == []
    canvas = page.locator("#graphrag-graph").bounding_box()
    for label in labels:
        assert canvas["x"] <= label["left"] and label["right"] <= canvas["x"] + canvas["width"], label


def test_explorer_legend_names_entity_and_relation_types(sample_server, page):
    base, path = sample_server
    explore_an_entity_with_cooccurrence(page, base, path)
    node_types = page.locator(".graphrag-node-entity").evaluate_all(
        "ns => ns.map(n => n.dataset.type || 'untyped')"
    )
    legend_types = page.locator(".graphrag-legend-types li").evaluate_all("ls => ls.map(l => l.dataset.type)")
    assert legend_types == sorted(set(node_types))
    # The swatch of each type is the colour of its nodes
    colours = page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll('.graphrag-node-entity')].map(n =>
            [n.dataset.type || 'untyped', getComputedStyle(n.querySelector('circle')).fill]))"""
    )
    swatches = page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll('.graphrag-legend-types li')].map(l =>
            [l.dataset.type, getComputedStyle(l.querySelector('.graphrag-swatch')).backgroundColor]))"""
    )
    assert swatches == colours
    edge_types = page.locator(".graphrag-edge").evaluate_all("es => es.map(e => e.dataset.type)")
    legend_relations = page.locator(".graphrag-legend-relations li").evaluate_all(
        "ls => ls.map(l => [l.dataset.rel, l.textContent])"
    )
    assert [rel for rel, _ in legend_relations] == sorted(set(edge_types))
    assert "related_to" in edge_types and len(set(edge_types)) > 3
    assert dict(legend_relations)["related_to"] == "related_to (co-occurrence)"


def test_explorer_draws_cooccurrence_edges_dashed(sample_server, page):
    base, path = sample_server
    explore_an_entity_with_cooccurrence(page, base, path)
    dashes = page.locator(".graphrag-edge").evaluate_all(
        "es => es.map(e => [e.dataset.type, getComputedStyle(e.querySelector('line')).strokeDasharray])"
    )
    assert {dash for rel, dash in dashes if rel == "related_to"} == {"5px, 4px"}
    assert {dash for rel, dash in dashes if rel != "related_to"} == {"none"}
    legend = page.locator(".graphrag-legend-relations li").evaluate_all(
        "ls => ls.map(l => [l.dataset.rel, getComputedStyle(l.querySelector('line')).strokeDasharray])"
    )
    assert {dash for rel, dash in legend if rel == "related_to"} == {"5px, 4px"}
    assert {dash for rel, dash in legend if rel != "related_to"} == {"none"}


def test_explorer_uses_the_canvas(sample_server, page):
    base, _ = sample_server
    expand_tidepool_and_a_neighbour(page, base)
    canvas = page.locator("#graphrag-graph").bounding_box()
    # The canvas takes the height of the window below the header, not a fixed strip
    assert canvas["height"] > 0.65 * 900
    boxes = page.locator(".graphrag-node circle, .graphrag-node rect").evaluate_all(
        "ns => ns.map(n => n.getBoundingClientRect()).map(r => [r.left, r.top, r.right, r.bottom])"
    )
    left = min(b[0] for b in boxes) - canvas["x"]
    top = min(b[1] for b in boxes) - canvas["y"]
    right = max(b[2] for b in boxes) - canvas["x"]
    bottom = max(b[3] for b in boxes) - canvas["y"]
    assert 0 <= left and right <= canvas["width"] and 0 <= top and bottom <= canvas["height"]
    spans = ((right - left) / canvas["width"], (bottom - top) / canvas["height"])
    # Fitted to the canvas: it fills three quarters of it one way, or is at the zoom the fit
    # stops at (1.4: a small graph is not blown up), and is never a thin strip.
    zoom = float(page.locator(".graphrag-viewport").get_attribute("transform").split("scale(")[1].rstrip(")"))
    assert (max(spans) >= 0.75 or zoom == pytest.approx(1.4)) and min(spans) >= 0.45, (spans, zoom)


def check_pages_for_tidepool(page, base, vanished):
    """Open the home, entity, canned-query and explorer pages for 'tidepool'; return False
    when the entity is absent for the moment (a forced re-ingest takes a document's
    extraction back before extracting it again), True when every page was checked. An
    entity page that answered 404 because its entity had just gone is added to ``vanished``."""
    page.goto(f"{base}/graphrag")
    assert page.locator("h1").inner_text() == "GraphRAG knowledge base"
    assert page.locator("a.graphrag-explore-link").count() == 1
    page.goto(f"{base}/graphrag/hybrid_search?q=tidepool+compaction")
    assert page.locator("h1").count() == 1
    entities = page.evaluate(
        "() => fetch('/graphrag/-/graphrag/entity_lookup?q=tidepool').then(r => r.json())"
        ".then(d => d.entities)"
    )
    if not entities:
        return False
    url = f"{base}/graphrag/-/graphrag/entity/{entities[0]['id']}"
    if page.goto(url).status == 404:
        # Taken back between the lookup and this page: a 404 that names it, not an error
        vanished.append(url)
        return False
    assert page.locator("h1").inner_text().startswith("tidepool")
    page.goto(f"{base}/graphrag/-/graphrag/explore?entity=tidepool")
    wait_for_layout(page)
    if page.locator("#graphrag-status").inner_text() == 'No entity matches "tidepool"':
        return False
    assert page.locator("#graphrag-panel h2 a").first.inner_text() == "tidepool"
    assert page.locator("#graphrag-status").inner_text() == ""
    return True


def test_pages_in_chromium_while_an_ingest_writes(sample_server, page, tmp_path):
    base, path = sample_server
    errors = []
    page.on("response", lambda r: errors.append((r.status, r.url)) if r.status >= 400 else None)
    # Another process re-ingests the whole corpus (every file, with extraction) meanwhile
    ingest = subprocess.Popen(
        [sys.executable, "-m", "llm", "graphrag", "ingest", str(SAMPLE_CORPUS), "--force", "-d", str(path)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    during, vanished = [], []
    try:
        while ingest.poll() is None:
            # Every page answers without an error while the ingest writes; 'tidepool' may be
            # absent for a moment, and then its own pages are not asked for in that round
            during.append(check_pages_for_tidepool(page, base, vanished))
    finally:
        output = ingest.communicate(timeout=300)[0].decode()
    assert ingest.returncode == 0, output
    assert "Ingested 36 files" in output
    assert during, "the ingest ended before a page was opened: nothing overlapped"
    # Once the ingest is done, every page of the entity is there again
    assert check_pages_for_tidepool(page, base, vanished)
    assert [(status, url) for status, url in errors if (status, url) not in [(404, v) for v in vanished]] == []
