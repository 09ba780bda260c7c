"""MCP over streamable HTTP at /-/mcp, with the official SDK's client and a real server."""

import json
import socket
import subprocess
import sys
import time

import httpx
import jsonschema
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from llm_graphrag.tools import TOOLS


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(sample_db, tmp_path_factory):
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "datasette", "serve", str(sample_db), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/-/versions.json").status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.2)
    else:
        process.kill()
        raise RuntimeError(process.stdout.read().decode())
    yield url
    process.terminate()
    process.wait(10)


async def call(url, name, arguments):
    async with streamable_http_client(url + "/-/mcp") as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            return await session.call_tool(name, arguments)


@pytest.mark.asyncio
async def test_mcp_lists_every_graphrag_tool(server):
    async with streamable_http_client(server + "/-/mcp") as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert set(TOOLS) <= set(tools)
    assert tools["hybrid_query"].annotations.read_only_hint is True
    assert tools["ingest_docs"].annotations.read_only_hint is False
    assert "q" in tools["hybrid_query"].input_schema["properties"]
    assert tools["hybrid_query"].input_schema["required"] == ["q"]


@pytest.mark.asyncio
async def test_mcp_hybrid_query_returns_the_contract(server):
    result = await call(server, "hybrid_query", {"q": "How do dams create reservoirs?", "k": 3})
    assert result.is_error is False
    data = json.loads(result.content[0].text)
    jsonschema.validate(data, TOOLS["hybrid_query"].output_schema)
    assert len(data["chunks"]) == 3
    assert len(data["explanations"]) == 3


@pytest.mark.asyncio
async def test_mcp_write_tool_obeys_permissions(server):
    result = await call(server, "ingest_docs", {"paths": ["/tmp"]})
    assert result.is_error is True
    assert "graphrag-write" in result.content[0].text


@pytest.mark.asyncio
async def test_mcp_bad_arguments_are_tool_errors(server):
    result = await call(server, "explain_entity", {"entity_id": 987654})
    assert result.is_error is True
    assert "No entity with id 987654" in result.content[0].text


@pytest.mark.asyncio
async def test_mcp_deep_research_returns_the_contract(server):
    result = await call(server, "deep_research", {"q": "Which services depend on tidepool?", "k": 3})
    assert result.is_error is False
    data = json.loads(result.content[0].text)
    jsonschema.validate(data, TOOLS["deep_research"].output_schema)
    assert len(data["results"]) == 3
    stats = data["stats"]
    assert stats["sub_queries_completed"] == stats["sub_queries_total"] == len(data["sub_queries"]) > 1
