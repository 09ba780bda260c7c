"""The stdio MCP server, started as the README tells an MCP client to start it."""

import json
import os
import pathlib
import re
import shutil
import time

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from llm_graphrag.tools import TOOLS

ROOT = pathlib.Path(__file__).parent.parent
SAMPLE = ROOT / "sample-corpus" / "services"


def readme_client_config():
    """The README's MCP client configuration block, parsed."""
    blocks = re.findall(r"```json\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    found = [json.loads(block) for block in blocks if '"mcpServers"' in block]
    assert len(found) == 1, "the README has one MCP client configuration"
    return found[0]


@pytest.fixture
def server_params(tmp_path):
    folder = tmp_path / "knowledge"
    shutil.copytree(SAMPLE, folder)
    config = tmp_path / "config.yaml"
    config.write_text(
        "project: test-graphrag\n"
        "watch:\n  dirs: [knowledge]\n  debounce_ms: 200\n"
        "sqlite:\n  path: graphrag.db\n"
        "retrieval:\n  k: 4\n"
    )
    entry = readme_client_config()["mcpServers"]["graphrag"]
    args = [str(config) if arg == "/path/to/config.yaml" else arg for arg in entry["args"]]
    assert str(config) in args
    # Only what the test machine needs beside the README's entry: this checkout's code,
    # and an llm user directory of its own.
    env = dict(entry.get("env", {}), LLM_USER_PATH=str(tmp_path / "llm"))
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return StdioServerParameters(command=entry["command"], args=args, env=env), folder


async def call(session, name, arguments):
    result = await session.call_tool(name, arguments)
    assert result.is_error is False, result.content[0].text
    # Structured content is the JSON the text carries; the client already checked it
    # against the tool's output schema.
    assert result.structured_content == json.loads(result.content[0].text)
    return result.structured_content


async def wait_for(session, name, arguments, predicate, timeout=120):
    deadline = time.monotonic() + timeout
    while True:
        data = await call(session, name, arguments)
        if predicate(data):
            return data
        assert time.monotonic() < deadline, data
        time.sleep(0.2)


@pytest.mark.asyncio
async def test_readme_client_configuration_starts_a_working_server(server_params):
    params, folder = server_params
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.server_info.name == "test-graphrag"
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            assert sorted(tools) == sorted(TOOLS)
            for name, tool in TOOLS.items():
                listed = tools[name]
                assert listed.description == tool.description
                assert listed.output_schema == tool.output_schema
                assert listed.annotations.read_only_hint is tool.read_only
                expected = json.loads(json.dumps(tool.input_schema))
                if name == "hybrid_query":
                    expected["properties"]["k"]["default"] = 4  # retrieval.k from the config
                assert listed.input_schema == expected

            status = await wait_for(
                session, "status", {},
                lambda s: s["watcher"] and not s["watcher"]["catching_up"] and s["queue_depth"] == 0,
            )
            assert status["counts"]["docs"] == 8
            assert status["counts"]["chunk_vec"] == status["counts"]["chunks"] > 0
            assert status["orphaned_entities"] == 0
            assert status["watcher"]["running"] is True
            assert status["watcher"]["folders"] == [str(folder)]
            assert status["watcher"]["files_processed"] == 8
            assert status["last_error"] is None

            found = await call(session, "hybrid_query", {"q": "How does tidepool store gauge readings?"})
            assert len(found["chunks"]) == 4  # k from the config
            assert len(found["explanations"]) == 4
            assert all(c["path"].startswith(str(folder)) for c in found["chunks"])

            entities = (await call(session, "entity_lookup", {"q": "tidepool"}))["entities"]
            assert entities[0]["name"] == "tidepool"
            explained = await call(session, "explain_entity", {"entity_id": entities[0]["id"]})
            assert explained["entity"]["id"] == entities[0]["id"]
            assert explained["sources"] and all(s["path"].startswith(str(folder)) for s in explained["sources"])

            # Input the schema refuses, and an entity that does not exist: tool errors.
            bad = await session.call_tool("hybrid_query", {"q": "x", "k": 0})
            assert bad.is_error is True
            assert bad.content[0].text.startswith("hybrid_query: k:")
            missing = await session.call_tool("explain_entity", {"entity_id": 999999})
            assert missing.is_error is True
            assert "999999" in missing.content[0].text

            # The watcher runs in the server: a new file is found by the next query.
            (folder / "zebra.md").write_text(
                "# Zebra crossings\n\nThe quagga relay forwards striped telemetry to tidepool.\n"
            )
            found = await wait_for(
                session, "hybrid_query", {"q": "quagga relay striped telemetry", "mode": "bm25"},
                lambda r: r["chunks"] and r["chunks"][0]["path"] == str(folder / "zebra.md"), timeout=30,
            )
            assert "quagga relay" in found["chunks"][0]["snippet"]
            # Searchable once its chunks are written; the batch ends after its extraction.
            status = await wait_for(session, "status", {}, lambda s: s["queue_depth"] == 0, timeout=60)
            assert status["counts"]["docs"] == 9
            assert status["watcher"]["last_file"] == str(folder / "zebra.md")
            assert status["orphaned_entities"] == 0


@pytest.mark.asyncio
async def test_mcp_without_watching(sample_db, tmp_path):
    params = StdioServerParameters(
        command="llm", args=["graphrag", "mcp", "-d", str(sample_db)],
        env={"PYTHONPATH": os.environ.get("PYTHONPATH", ""), "LLM_USER_PATH": str(tmp_path)},
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            assert init.server_info.name == "graphrag"
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            assert tools["hybrid_query"].input_schema == TOOLS["hybrid_query"].input_schema
            status = await call(session, "status", {})
            assert status["watcher"] is None and status["queue_depth"] == 0
            assert status["counts"]["docs"] == 36
            found = await call(session, "hybrid_query", {"q": "How do dams create reservoirs?", "k": 3})
            assert len(found["chunks"]) == 3
            paths = await call(session, "path", {"source_entity": "ingest-gateway", "target_entity": "tidepool"})
            assert paths["path"]


def test_mcp_refuses_a_missing_database(tmp_path):
    from click.testing import CliRunner

    from llm_graphrag.cli import graphrag

    result = CliRunner().invoke(graphrag, ["mcp", "-d", str(tmp_path / "none.db")])
    assert result.exit_code == 1
    assert result.output == (
        f"Error: Database {tmp_path / 'none.db'} does not exist: ingest into it first, "
        "or pass --watch DIR to build it\n"
    )
    result = CliRunner().invoke(graphrag, ["serve", "-d", str(tmp_path / "none.db")])
    assert result.output == (
        "Error: serve watches folders: set watch.dirs in the config file or pass --watch DIR "
        "(use 'llm graphrag mcp' to serve without watching)\n"
    )
