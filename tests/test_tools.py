"""The tool contracts through the CLI, and the evidence output (mermaid, context.md, log, cache)."""

import json
import shutil

import jsonschema
import pytest
import sqlite_utils
from click.testing import CliRunner
from llm.cli import cli

from llm_graphrag.db import open_database
from llm_graphrag.evidence import mermaid
from llm_graphrag.retrieval_log import cache, retrieval_log_path
from llm_graphrag.tools import TOOLS, ToolInputError, call_tool


@pytest.fixture
def db_path(sample_db, tmp_path):
    """A private copy of the sample database, so tests may write to it."""
    path = tmp_path / "graphrag.db"
    shutil.copy(sample_db, path)
    return path


def graphrag(*args):
    return CliRunner().invoke(cli, ["graphrag", *args], catch_exceptions=False)


def test_every_schema_is_valid_and_every_tool_has_both():
    assert sorted(TOOLS) == sorted(
        ["ingest_docs", "extract_and_link", "entity_lookup", "hybrid_query", "explain_entity",
         "status", "subgraph", "path", "topn", "deep_research"]
    )
    for tool in TOOLS.values():
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
        jsonschema.Draft202012Validator.check_schema(tool.output_schema)
        assert tool.description


@pytest.mark.parametrize(
    "args,tool",
    [
        (["query", "How do dams create reservoirs?", "-k", "4"], "hybrid_query"),
        (["lookup", "tidepool"], "entity_lookup"),
        (["explain", "tidepool"], "explain_entity"),
        (["subgraph", "-e", "tidepool"], "subgraph"),
        (["path", "ingest-gateway", "Heron"], "path"),
        (["topn", "-e", "tidepool"], "topn"),
        (["status"], "status"),
    ],
)
def test_cli_json_matches_the_contract(db_path, args, tool):
    result = graphrag(*args, "-d", str(db_path), "--json")
    assert result.exit_code == 0, result.output
    jsonschema.validate(json.loads(result.output), TOOLS[tool].output_schema)


def test_query_returns_k_chunks_with_provenance(db_path):
    data = json.loads(graphrag("query", "How do dams create reservoirs?", "-k", "4", "-d", str(db_path), "--json").output)
    assert len(data["chunks"]) == 4
    assert len(data["explanations"]) == 4
    assert data["chunks"][0]["path"].endswith("science/dams-and-reservoirs.md")
    readable = graphrag("query", "How do dams create reservoirs?", "-k", "2", "-d", str(db_path))
    assert readable.output.startswith("1. [")
    assert "science/dams-and-reservoirs.md" in readable.output.splitlines()[0]


def test_path_between_services(db_path):
    data = json.loads(graphrag("path", "ingest-gateway", "tidepool", "-d", str(db_path), "--json").output)
    assert data["meta"]["length"] == 1
    assert [n["id"] for n in data["path"]] == ["Entity:ingest-gateway", "Entity:tidepool"]


def test_tool_errors_are_clear(db_path):
    result = graphrag("explain", "999999", "-d", str(db_path))
    assert result.exit_code == 1
    assert "No entity with id 999999" in result.output
    result = graphrag("query", "x", "-k", "0", "-d", str(db_path))
    assert result.exit_code == 1
    assert "hybrid_query: k:" in result.output
    db = open_database(db_path)
    with pytest.raises(ToolInputError) as excinfo:
        call_tool(db, "hybrid_query", {"q": "x", "surprise": 1})
    assert excinfo.value.field == "surprise"
    with pytest.raises(ToolInputError) as excinfo:
        call_tool(db, "nope", {})
    assert excinfo.value.field == "tool"


def test_mermaid_follows_the_template():
    data = {
        "nodes": [
            {"id": "Doc:1", "label": "Doc", "title": "GraphRAG intro"},
            {"id": "Entity:GraphRAG", "label": "Entity", "type": "concept"},
            {"id": "Entity:Neo4j", "label": "Entity", "type": "product"},
        ],
        "edges": [
            {"source": "Doc:1", "target": "Entity:GraphRAG", "type": "MENTIONS"},
            {"source": "Entity:GraphRAG", "target": "Entity:Neo4j", "type": "related_to", "weight": 0.73},
        ],
    }
    assert mermaid(data) == (
        "graph LR\n"
        "  %% Docs and chunks\n"
        '  doc_1["Doc｜GraphRAG intro"] --> entity_graphrag["Entity｜GraphRAG"]\n'
        "  %% Entity relations\n"
        '  entity_graphrag -. related_to (0.73) .-> entity_neo4j["Entity｜Neo4j"]\n'
    )


def test_context_md(db_path, tmp_path):
    out = tmp_path / "context.md"
    result = graphrag("context", "-e", "tidepool", "-d", str(db_path), "-o", str(out))
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert text.startswith("# Background\n- Query: \n- Query entities: tidepool\n")
    assert "# Key subgraph\n```mermaid\ngraph LR\n" in text
    assert "# Evidence paths\n- Entity:" in text
    assert "# Recommended documents (Top 5)\n1. **" in text


def test_retrieval_log_and_cache(db_path):
    db = open_database(db_path)
    log = retrieval_log_path(db)
    assert log == db_path.parent / "data" / "graphrag" / "retrieval-log.jsonl"
    cache.clear()
    first = call_tool(db, "hybrid_query", {"q": "rotate certificates", "k": 3})
    second = call_tool(db, "hybrid_query", {"q": "rotate certificates", "k": 3})
    assert first == second
    # Any write to the database invalidates the cache
    db["docs"].update(1, {"title": "Renamed"})
    db.conn.commit()
    third = call_tool(db, "hybrid_query", {"q": "rotate certificates", "k": 3})
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(l["query"], l["result_count"], l["cache_hit"]) for l in lines] == [
        ("rotate certificates", 3, False),
        ("rotate certificates", 3, True),
        ("rotate certificates", 3, False),
    ]
    assert set(lines[0]) == {"timestamp", "query", "result_count", "latency_ms", "cache_hit"}
    assert third["chunks"][0]["id"] == first["chunks"][0]["id"]


def test_topn_ranks_by_salience_and_category(db_path):
    data = json.loads(graphrag("topn", "-e", "tidepool", "-d", str(db_path), "--json").output)
    first = data["items"][0]
    assert first["path"].endswith("services/tidepool.md")
    assert first["reasons"][0] == "contains entity tidepool (salience 1.00)"
    assert data["query"] == {"entity_names": ["tidepool"], "category": None, "language": None}
    data = json.loads(
        graphrag("topn", "-e", "tidepool", "--category", "runbooks", "-d", str(db_path), "--json").output
    )
    first = data["items"][0]
    assert first["path"].endswith("runbooks/tidepool-compaction.rst")
    assert first["reasons"][-1] == "category match runbooks"


def test_extract_command_is_idempotent_and_checks_ids(db_path):
    result = graphrag("extract", "-d", str(db_path), "--json")
    assert json.loads(result.output) == {"mentions": 0, "entities_new": 0, "relations": 0}
    result = graphrag("extract", "-d", str(db_path), "--doc", "999")
    assert result.exit_code == 1
    assert "No document with id 999" in result.output
    def graph():
        db = sqlite_utils.Database(db_path)
        entities = sorted(db.execute("select type, name, description, popularity from entities").fetchall())
        relations = sorted(db.execute(
            "select s.name, r.rel, d.name, r.weight from relations r join entities s on s.id = r.src_id "
            "join entities d on d.id = r.dst_id"
        ).fetchall())
        db.conn.close()
        return entities, relations

    before = graph()
    forced = json.loads(graphrag("extract", "-d", str(db_path), "--doc", "1", "--force", "--json").output)
    # What document 1 gave is taken back first, then extracted again: the same graph
    assert forced["mentions"] > 0
    assert graph() == before


def test_settings_command(db_path):
    result = graphrag("settings", "-d", str(db_path))
    shown = json.loads(result.output)
    assert (shown["embedding_model"], shown["dimensions"]) == ("graphrag", 256)
    result = graphrag("settings", "retrieval", '{"weights": {"semantic": 1, "graph": 0}}', "-d", str(db_path))
    assert json.loads(result.output) == {"weights": {"semantic": 1, "graph": 0}}
    # With the graph weighted 0, graph mode ranks like hybrid
    graph = json.loads(graphrag("query", "tidepool compaction", "-k", "5", "-d", str(db_path), "--json").output)
    hybrid = json.loads(graphrag("query", "tidepool compaction", "-k", "5", "--mode", "hybrid", "-d", str(db_path), "--json").output)
    assert [c["id"] for c in graph["chunks"]] == [c["id"] for c in hybrid["chunks"]]
    for args, message in (
        (["dimensions", "384"], "fixed when the database is created"),
        (["nope", "1"], "Unknown setting 'nope'"),
        (["extract", "{broken"], "the value must be JSON"),
        (["retrieval", "[1]"], "must be a JSON object"),
    ):
        result = graphrag("settings", *args, "-d", str(db_path))
        assert result.exit_code == 1 and message in result.output
    result = graphrag("settings", "retrieval_log", "null", "-d", str(db_path))
    assert result.output.strip() == "null"


def test_lookup_uses_the_linkers_blocking_key(db_path):
    # Entities are keyed by extraction.normalize, which makes plurals singular
    plural = json.loads(graphrag("lookup", "reservoirs", "-d", str(db_path), "--json").output)
    singular = json.loads(graphrag("lookup", "reservoir", "-d", str(db_path), "--json").output)
    assert plural["entities"][0]["id"] == singular["entities"][0]["id"]
    assert plural["entities"][0]["score"] == singular["entities"][0]["score"]


def test_unknown_entity_names_are_not_found_errors(db_path):
    result = graphrag("path", "zzqx-nothing", "tidepool", "-d", str(db_path))
    assert result.exit_code == 1
    assert "No entity matches 'zzqx-nothing'" in result.output


def test_topn_recency_halves_every_half_life(tmp_path):
    import os

    from llm_graphrag.graph import RECENCY_HALF_LIFE_DAYS

    folder = tmp_path / "notes"
    folder.mkdir()
    for name in ("new", "old", "seconds"):
        (folder / f"{name}.md").write_text(f"# {name}\n\nThe kestrel nests on the cliff.\n")
    now = 1_700_000_000
    os.utime(folder / "new.md", (now, now))
    os.utime(folder / "seconds.md", (now - 5, now - 5))
    old = now - RECENCY_HALF_LIFE_DAYS * 86_400
    os.utime(folder / "old.md", (old, old))
    path = tmp_path / "g.db"
    graphrag("ingest", str(folder), "-d", str(path))
    items = json.loads(graphrag("topn", "-n", "3", "-d", str(path), "--json").output)["items"]
    scores = {item["title"]: item["score"] for item in items}
    assert scores["new"] == pytest.approx(0.2, abs=1e-4)
    assert scores["seconds"] == pytest.approx(0.2, abs=1e-4)
    assert scores["old"] == pytest.approx(0.1, abs=1e-4)
