"""MCP over streamable HTTP at /-/mcp, with the official SDK's client and a real server."""

import json

import httpx
import jsonschema
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from llm_graphrag.tools import TOOLS, mcp_output_schema


@pytest.fixture(scope="module")
def server(sample_db, serve):
    with serve(sample_db) as url:
        yield url


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


@pytest.mark.asyncio
async def test_mcp_tools_declare_their_input_and_output_schemas(server):
    async with streamable_http_client(server + "/-/mcp") as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    for name, tool in TOOLS.items():
        listed = tools[name]
        # Seed 000's deep_research schema is declared with its $defs written in place.
        assert listed.output_schema == mcp_output_schema(tool), name
        assert "$ref" not in json.dumps(listed.output_schema), name
        assert listed.description == tool.description
        properties = listed.input_schema["properties"]
        assert set(properties) == set(tool.input_schema["properties"]) | {"database"}, name
        for key, spec in tool.input_schema["properties"].items():
            # The tool's own schema of each argument, with a title the SDK adds
            assert {k: v for k, v in properties[key].items() if k != "title"} == spec, (name, key)
        assert listed.input_schema.get("required", []) == tool.input_schema.get("required", [])


@pytest.mark.asyncio
async def test_mcp_results_are_structured_content(server):
    arguments = {"q": "How do dams create reservoirs?", "k": 3}
    # The SDK's client checks structured content against the tool's output schema
    result = await call(server, "hybrid_query", arguments)
    assert result.is_error is False
    over_http = httpx.post(server + "/-/graphrag/hybrid_query", json=arguments).json()
    assert result.structured_content == over_http
    assert json.loads(result.content[0].text) == over_http
    for name, arguments in (
        ("status", {}),
        ("entity_lookup", {"q": "tidepool"}),
        ("subgraph", {"entity_names": ["tidepool"], "max_hops": 1}),
    ):
        result = await call(server, name, arguments)
        jsonschema.validate(result.structured_content, TOOLS[name].output_schema)
        assert result.structured_content == httpx.post(
            server + f"/-/graphrag/{name}", json=arguments
        ).json()
