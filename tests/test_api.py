"""The Python API: ``GraphRAG`` methods return what the CLI and tools return, and show
themselves in Jupyter as escaped HTML tables and SVG pictures."""

import json
import math
import re
import shutil
import sys
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner
from llm.cli import cli

import llm_graphrag
from llm_graphrag import GraphRAG, evaluate_retrieval
from llm_graphrag.api import ToolUnavailable
from llm_graphrag.evaluate import run_eval
from llm_graphrag.results import GraphPath, QueryResult, Subgraph, Table
from llm_graphrag.tools import TOOLS, ToolInputError, ToolNotFound, call_tool

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def db_path(sample_db, tmp_path_factory):
    """A private copy of the sample database (queries write a log beside it)."""
    path = tmp_path_factory.mktemp("api") / "graphrag.db"
    shutil.copy(sample_db, path)
    return path


@pytest.fixture(scope="module")
def g(db_path):
    with GraphRAG(db_path, create=False) as g:
        yield g


def test_exported_from_the_package():
    assert "GraphRAG" in llm_graphrag.__all__
    assert "evaluate_retrieval" in llm_graphrag.__all__
    assert llm_graphrag.GraphRAG is GraphRAG


CALLS = [
    (
        lambda g: g.query("How do dams create reservoirs?", k=4),
        "hybrid_query", {"q": "How do dams create reservoirs?", "k": 4},
        ["query", "How do dams create reservoirs?", "-k", "4"],
    ),
    (
        lambda g: g.query("certificate rotation", k=3, mode="hybrid", rels="uses, depends_on"),
        "hybrid_query", {"q": "certificate rotation", "k": 3, "mode": "hybrid", "rels": ["uses", "depends_on"]},
        ["query", "certificate rotation", "-k", "3", "--mode", "hybrid", "--rels", "uses,depends_on"],
    ),
    (lambda g: g.lookup("tidepool"), "entity_lookup", {"q": "tidepool"}, ["lookup", "tidepool"]),
    (lambda g: g.lookup("tidepool", type="code", limit=2), "entity_lookup",
     {"q": "tidepool", "type": "code", "limit": 2}, ["lookup", "tidepool", "--type", "code", "-n", "2"]),
    (lambda g: g.explain("tidepool", hops=2), "explain_entity", None, ["explain", "tidepool", "--hops", "2"]),
    (lambda g: g.subgraph("tidepool", "Basin", hops=1), "subgraph",
     {"entity_names": ["tidepool", "Basin"], "max_hops": 1}, ["subgraph", "-e", "tidepool", "-e", "Basin", "--hops", "1"]),
    (lambda g: g.subgraph(doc="services/basin.md", limit=10), "subgraph",
     {"doc_id": "services/basin.md", "limit": 10}, ["subgraph", "--doc", "services/basin.md", "-n", "10"]),
    (lambda g: g.path("ingest-gateway", "Heron"), "path",
     {"source_entity": "ingest-gateway", "target_entity": "Heron"}, ["path", "ingest-gateway", "Heron"]),
    (lambda g: g.topn("tidepool", category="runbooks"), "topn",
     {"entity_names": ["tidepool"], "category": "runbooks"}, ["topn", "-e", "tidepool", "--category", "runbooks"]),
    (lambda g: g.status(), "status", {}, ["status"]),
]


@pytest.mark.parametrize("method,tool,arguments,cli_args", CALLS)
def test_methods_return_what_the_tool_and_the_cli_return(g, db_path, method, tool, arguments, cli_args):
    result = method(g)
    assert isinstance(result, dict)
    if arguments is None:  # explain by name: the CLI's lookup, then the tool by id
        entity_id = call_tool(g.db, "entity_lookup", {"q": "tidepool", "limit": 1})["entities"][0]["id"]
        arguments = {"entity_id": entity_id, "hops": 2}
    assert result == call_tool(g.db, tool, arguments)
    output = CliRunner().invoke(cli, ["graphrag", *cli_args, "-d", str(db_path), "--json"])
    assert output.exit_code == 0, output.output
    assert json.loads(output.output) == json.loads(json.dumps(result))


def test_explain_by_id_and_by_name_agree(g):
    by_name = g.explain("tidepool")
    assert by_name["entity"]["name"] == "tidepool"
    assert g.explain(by_name["entity"]["id"]) == by_name
    assert g.explain(str(by_name["entity"]["id"])) == by_name


def test_table_html_is_escaped_exactly():
    table = Table(["name", "score"], [["<b>A & B</b>", 0.123456], [None, ["x", "y"]]], caption="<cap>")
    assert table._repr_html_() == (
        "<table><caption>&lt;cap&gt;</caption>"
        "<thead><tr><th>name</th><th>score</th></tr></thead><tbody>"
        "<tr><td>&lt;b&gt;A &amp; B&lt;/b&gt;</td><td>0.1235</td></tr>"
        "<tr><td></td><td>x, y</td></tr>"
        "</tbody></table>"
    )
    assert table.to_dicts() == [
        {"name": "<b>A & B</b>", "score": 0.123456},
        {"name": None, "score": ["x", "y"]},
    ]


def test_query_table_and_frame(g):
    result = g.query("How do dams create reservoirs?", k=3)
    table = result.table()
    assert table.columns == ["rank", "score", "path", "section", "snippet", "why"]
    assert [row[0] for row in table.rows] == [1, 2, 3]
    assert [row[2] for row in table.rows] == [c["path"] for c in result["chunks"]]
    assert [row[5] for row in table.rows] == result["explanations"]
    assert table.rows[0][2].endswith("science/dams-and-reservoirs.md")
    html = result._repr_html_()
    assert html.count("<tr>") == 4  # header and three chunks
    assert "<script" not in html
    frame = result.to_pandas()
    assert frame["id"].tolist() == [c["id"] for c in result["chunks"]]
    assert frame["explanation"].tolist() == result["explanations"]


def test_other_tables(g):
    entities = g.lookup("tidepool", limit=3)
    assert entities.table().to_dicts() == [
        {k: e[k] for k in ("id", "name", "type", "aliases", "popularity", "score")}
        for e in entities["entities"]
    ]
    assert entities.to_pandas()["name"].tolist() == [e["name"] for e in entities["entities"]]
    top = g.topn("tidepool")
    assert [row["path"] for row in top.table().to_dicts()] == [i["path"] for i in top["items"]]
    status = g.status()
    assert dict(status.table().rows) == status["counts"]
    assert status["embedding_model"] in status._repr_html_()
    explanation = g.explain("tidepool")
    html = explanation._repr_html_()
    assert html.startswith("<h4>tidepool</h4>")
    assert "<caption>Relations</caption>" in html and "<caption>Sources</caption>" in html
    assert explanation.to_pandas()["rel"].tolist() == [r["rel"] for r in explanation["relations"]]


def test_an_open_database_works_too(db_path):
    from llm_graphrag.db import open_database

    db = open_database(db_path, create=False)
    g = GraphRAG(db)
    assert g.db is db
    assert repr(g).startswith("<GraphRAG <Database")
    assert g.status() == call_tool(db, "status")


def test_status_shows_the_last_error(tmp_path):
    with GraphRAG(tmp_path / "status.db") as g:
        g.ingest(tmp_path / "missing-<b>.md")
        html = g.status()._repr_html_()
    assert f"<td>last error</td><td>{tmp_path}/missing-&lt;b&gt;.md: no such file or directory</td>" in html


def test_sql(g):
    table = g.sql("select name, type from entities where id = ?", [g.lookup("tidepool")["entities"][0]["id"]])
    assert table.columns == ["name", "type"]
    assert table.rows == [["tidepool", "code"]]


def _svg(text):
    return ET.fromstring(text)


def test_path_svg_exactly():
    path = GraphPath(
        {
            "path": [
                {"id": "Entity:a<b", "label": "Entity", "type": "concept", "entity_id": 1},
                {"id": "Entity:c#2", "label": "Entity", "type": "ORG", "entity_id": 2},
            ],
            "edges": [{"source": "Entity:a<b", "target": "Entity:c#2", "type": "uses", "weight": 0.5, "fact": "a uses c"}],
            "meta": {"length": 1, "max_length": 4, "source_id": 1, "target_id": 2},
        }
    )
    assert path._repr_svg_() == "\n".join(
        [
            '<svg xmlns="http://www.w3.org/2000/svg" width="340" height="120" viewBox="0 0 340 120" font-family="sans-serif" font-size="11">',
            '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#888"/></marker></defs>',
            '<rect width="340" height="120" fill="white"/>',
            '<line x1="70" y1="60" x2="268" y2="60" stroke="#999" stroke-width="1.2" marker-end="url(#arrow)"><title>uses (0.50)</title></line>',
            '<text x="170" y="57" text-anchor="middle" fill="#666" font-size="9" stroke="white" stroke-width="3" paint-order="stroke">uses (0.50)</text>',
            '<g class="node"><title>a&lt;b (concept, entity 1)</title><circle cx="60" cy="60" r="10" fill="#4e79a7" stroke="white"/><text x="60" y="82" text-anchor="middle" stroke="white" stroke-width="3" paint-order="stroke">a&lt;b</text></g>',
            '<g class="node"><title>c (ORG, entity 2)</title><circle cx="280" cy="60" r="10" fill="#f28e2b" stroke="white"/><text x="280" y="82" text-anchor="middle" stroke="white" stroke-width="3" paint-order="stroke">c</text></g>',
            '<g class="legend"><circle cx="12" cy="14" r="5" fill="#4e79a7"/><text x="22" y="18" fill="#444">concept</text>'
            '<circle cx="12" cy="30" r="5" fill="#f28e2b"/><text x="22" y="34" fill="#444">ORG</text></g>',
            "</svg>",
        ]
    )
    assert path._repr_html_ is None  # Jupyter shows the picture
    assert path.to_pandas().to_dict("records") == [
        {"source": "Entity:a<b", "type": "uses", "target": "Entity:c#2", "weight": 0.5, "fact": "a uses c"}
    ]


def test_no_path_says_so():
    empty = GraphPath({"path": [], "edges": [], "meta": {"length": None, "max_length": 3, "source_id": 1, "target_id": 9}})
    root = _svg(empty.svg())
    assert [t.text for t in root.iter(SVG + "text")] == ["No path within 3 hops"]


def test_subgraph_picture(g):
    subgraph = g.subgraph("tidepool", "Basin", hops=1)
    text = subgraph._repr_svg_()
    assert text == g.subgraph("tidepool", "Basin", hops=1).svg()  # the same picture every time
    root = _svg(text)
    width, height = int(root.get("width")), int(root.get("height"))
    groups = root.findall(SVG + "g[@class='node']")
    assert [grp.find(SVG + "title").text.split(" (")[0] for grp in groups] == [
        # the name (an id adds "#<entity id>" when two entities share a name)
        re.sub(r"#\d+$", "", n["id"].split(":", 1)[1]) for n in subgraph["nodes"]
    ]
    centres = [(float(c.get("cx")), float(c.get("cy"))) for c in (grp.find(SVG + "circle") for grp in groups)]
    assert all(0 < x < width and 0 < y < height for x, y in centres)
    nearest = min(math.dist(a, b) for i, a in enumerate(centres) for b in centres[i + 1:])
    assert nearest > 20  # no node drawn on top of another
    pairs = {frozenset((e["source"], e["target"])) for e in subgraph["edges"]}
    assert len(root.findall(SVG + "line")) == len(pairs)
    kinds = list(dict.fromkeys(n["type"] for n in subgraph["nodes"]))
    legend = [t.text for t in root.find(SVG + "g[@class='legend']").findall(SVG + "text")]
    assert legend == kinds
    assert subgraph.to_pandas()["type"].tolist() == [e["type"] for e in subgraph["edges"]]
    assert subgraph.mermaid().startswith("graph LR\n")


def test_subgraph_labels_are_escaped():
    subgraph = Subgraph(
        {
            "nodes": [
                {"id": "Doc:1", "label": "Doc", "title": "<script>alert(1)</script>", "path": "/x", "updated_at": None},
                {"id": "Entity:\"q\" & <r>", "label": "Entity", "type": "<t>", "entity_id": 5, "salience": 1.0},
            ],
            "edges": [{"source": "Doc:1", "target": "Entity:\"q\" & <r>", "type": "<MENTIONS>", "weight": 1}],
            "constraints": {}, "query": {},
        }
    )
    text = subgraph.svg()
    assert "<script" not in text and "<t>" not in text and "<MENTIONS>" not in text
    root = _svg(text)
    labels = [t.text for grp in root.findall(SVG + "g[@class='node']") for t in grp.findall(SVG + "text")]
    assert labels == ["<script>alert(1)</scrip…", '"q" & <r>']  # long labels are cut
    titles = [grp.find(SVG + "title").text for grp in root.findall(SVG + "g[@class='node']")]
    assert titles == ["<script>alert(1)</script> (Doc:1)", '"q" & <r> (<t>, entity 5)']


def test_errors_name_the_problem(g, tmp_path):
    with pytest.raises(FileNotFoundError, match="llm graphrag init"):
        GraphRAG(tmp_path / "missing.db", create=False)
    with pytest.raises(ToolNotFound, match="No entity matches 'zzqqxx'"):
        g.explain("zzqqxx")
    with pytest.raises(ToolInputError, match="mode") as ex:
        g.query("dams", mode="fuzzy")
    assert ex.value.field == "mode"
    with pytest.raises(ValueError, match="entity name or doc="):
        g.subgraph()
    with pytest.raises(ValueError, match="at least one file"):
        g.ingest()


def test_research(g):
    if "deep_research" in TOOLS:
        result = g.research("How does tidepool depend on Basin?")
        assert result["query"] == "How does tidepool depend on Basin?"
        assert result.table().columns[:2] == ["score", "name"]
    else:
        with pytest.raises(ToolUnavailable, match="deep_research tool"):
            g.research("How does tidepool depend on Basin?")


def test_ingest(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Alder\n\nAlder Creek feeds the Orrin reservoir.\n")
    (docs / "b.txt").write_text("The Orrin reservoir stores water for the valley.\n")
    with GraphRAG(tmp_path / "new.db") as g:
        first = g.ingest(docs, tmp_path / "nowhere")
        assert {k: first[k] for k in ("ingested", "skipped", "pruned", "errors")} == {
            "ingested": 2, "skipped": 0, "pruned": 0,
            "errors": [{"path": str(tmp_path / "nowhere"), "error": "no such file or directory"}],
        }
        assert first["chunks"] == g.status()["counts"]["chunks"] == 2
        assert first["extraction"]["mentions"] == g.status()["counts"]["mentions"]
        assert "<caption>Errors</caption>" in first._repr_html_()
        again = g.ingest(docs)
        assert (again["ingested"], again["skipped"], again["errors"]) == (0, 2, [])


def test_to_pandas_without_pandas(g, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match=r"datasette-graphrag\[notebook\]"):
        g.status().to_pandas()


TINY = {
    "corpus": [
        "Damming a river can cause a lake to form.",
        "Other lakes formed throughout the region caused by stream blockages.",
        "Earthquakes cause the ground to shake.",
        "Many buildings in the city were damaged in the earthquake.",
        "Copper is a good conductor of electricity.",
        "Electric wires are often made of copper.",
    ],
    "queries": [
        {"question": "What can damming a river cause?", "gold": [0, 1]},
        {"question": "How do earthquakes damage buildings?", "gold": [2, 3]},
        {"question": "What are electric wires made of?", "gold": [5]},
    ],
}


def test_evaluate_retrieval_on_the_first_questions(tmp_path):
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(TINY))
    first_two = tmp_path / "first-two.json"
    first_two.write_text(json.dumps(dict(TINY, queries=TINY["queries"][:2])))
    report = evaluate_retrieval(path, ks=(1, 2), questions=2, database=tmp_path / "eval.db")
    expected = run_eval(first_two, ks=(1, 2))
    assert (report["file"], report["queries"], report["corpus"]) == (str(path), 2, 6)
    assert {m: r["recall"] for m, r in report["modes"].items()} == {
        m: r["recall"] for m, r in expected["modes"].items()
    }
    assert report.recall_rows() == [
        {"mode": m, "k": k, "any": expected["modes"][m]["recall"][str(k)]["any"],
         "both": expected["modes"][m]["recall"][str(k)]["both"]}
        for m in ("bm25", "vector", "hybrid", "graph") for k in (1, 2)
    ]
    assert report.table().columns == [
        "mode", "R@1 any", "R@1 both", "R@2 any", "R@2 both", "p50 ms", "p95 ms"
    ]
    assert len(report.to_pandas()) == 8
    import matplotlib

    matplotlib.use("Agg")
    axes = report.plot()
    assert [len(ax.get_lines()) for ax in axes] == [4, 4]
    assert [line.get_label() for line in axes[0].get_lines()] == ["bm25", "vector", "hybrid", "graph"]
    assert list(axes[1].get_lines()[0].get_xdata()) == [1, 2]
    with pytest.raises(ValueError, match="questions must be at least 1"):
        evaluate_retrieval(path, questions=0)


def test_result_is_the_tool_json_unchanged(g):
    result = g.query("tidepool compaction", k=2)
    assert type(result) is QueryResult
    assert json.loads(json.dumps(result)) == json.loads(json.dumps(dict(result)))
