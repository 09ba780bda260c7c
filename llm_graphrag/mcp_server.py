"""The graphrag tools as an MCP server over stdio, for any MCP client (seed 004 §11, §20).

Built on the official SDK's low-level ``mcp.server.Server``: the tools are listed with
the registry's own JSON Schemas for input and output (``llm_graphrag/schemas``), which a
decorated function's signature could not express, and every call returns structured
content plus the same JSON as text. ``mcp_tools`` and ``call_result`` are what any MCP
face of the registry needs. Calls run one at a time in a thread of their own, with a
connection of their own: a reader beside the watcher's single writer.
"""

import asyncio
import concurrent.futures
import contextlib
import copy
import json
import signal

import mcp.types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server

from .tools import TOOLS, ToolInputError, ToolNotFound

# Config keys that set hybrid_query's defaults (seed 004 §13 ``retrieval``).
QUERY_DEFAULTS = {"k": "retrieval.k", "hops": "retrieval.hops", "rels": "retrieval.rels", "mode": "retrieval.mode"}


def mcp_tools(defaults=None):
    """Every registry tool as an MCP ``Tool``: input and output schema, annotations.

    ``defaults`` (``{tool: {argument: value}}``) replaces schema defaults, so clients see
    what an omitted argument means on this server.
    """
    listed = []
    for tool in TOOLS.values():
        schema = copy.deepcopy(tool.input_schema)
        for key, value in (defaults or {}).get(tool.name, {}).items():
            schema["properties"][key]["default"] = value
        listed.append(
            types.Tool(
                name=tool.name,
                title=tool.input_schema.get("title"),
                description=tool.description,
                input_schema=schema,
                output_schema=tool.output_schema,
                annotations=types.ToolAnnotations(
                    read_only_hint=tool.read_only,
                    destructive_hint=not tool.read_only,
                    idempotent_hint=tool.read_only,
                    open_world_hint=False,
                ),
            )
        )
    return listed


def call_result(data):
    """A tool's JSON as an MCP result: structured content and the same JSON as text."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(data, default=str))],
        structured_content=json.loads(json.dumps(data, default=str)),
    )


def error_result(message):
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


class ToolRunner:
    """Runs tool calls against one database, one at a time, in a thread of its own."""

    def __init__(self, database, defaults=None, watcher=None, backend=None):
        self.database = str(database)
        self.defaults = defaults or {}
        self.watcher = watcher
        # ``backends.backend_tool(url)``: answers the read tools instead of the file
        self.backend = backend
        self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="graphrag-mcp")
        self._db = None

    def call(self, name, arguments):
        """Run tool ``name``: its JSON, or raise ``ToolInputError``/``ToolNotFound``."""
        from .db import ChangedMeanwhile, open_database

        if name not in TOOLS:
            raise ToolInputError(f"Unknown tool {name!r}: choose one of {', '.join(TOOLS)}", field="tool")
        if self.backend is not None and name in self.backend.tools:
            return self.backend(name, dict(self.defaults.get(name, {}), **(arguments or {})))
        if self._db is None:
            self._db = open_database(self.database, create=False)
        tool = TOOLS[name]
        arguments = dict(self.defaults.get(name, {}), **(arguments or {}))
        if name == "status":
            from .status import status

            tool.arguments(arguments)  # still validated
            return status(self._db, watcher=self.watcher)
        try:
            return tool(self._db, arguments)
        except ChangedMeanwhile as ex:
            raise ToolNotFound(str(ex)) from ex

    async def __call__(self, name, arguments):
        loop = asyncio.get_running_loop()
        try:
            data = await loop.run_in_executor(self._executor, self.call, name, arguments)
        except (ToolInputError, ToolNotFound, FileNotFoundError) as ex:
            return error_result(str(ex))
        except Exception as ex:
            from .backends import BackendError

            if isinstance(ex, BackendError):
                return error_result(str(ex))
            raise
        return call_result(data)

    def close(self):
        def close_db():
            if self._db is not None:
                self._db.conn.close()

        self._executor.submit(close_db).result()
        self._executor.shutdown()


def make_server(runner, name="graphrag"):
    """A low-level MCP ``Server`` listing every tool and calling it through ``runner``."""
    tools = mcp_tools(runner.defaults)
    schemas = {tool.name: tool.input_schema for tool in tools}

    async def list_tools(ctx, params):
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx, params):
        return await runner(params.name, params.arguments or {})

    return Server(
        name,
        version=_version(),
        instructions=(
            f"GraphRAG over {runner.database}: hybrid_query finds chunks with provenance, "
            "entity_lookup and explain_entity explore the knowledge graph, status reports "
            "what is stored and what the watcher is doing."
        ),
        get_tool_input_schema=schemas.get,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def query_defaults(config):
    """hybrid_query's defaults from a configuration's ``retrieval`` section."""
    defaults = {arg: config[key] for arg, key in QUERY_DEFAULTS.items() if config[key] is not None}
    return {"hybrid_query": defaults}


async def serve_stdio(runner, name="graphrag"):
    """Serve the tools on stdin/stdout until the client closes them."""
    server = make_server(runner, name)
    task = asyncio.current_task()
    with contextlib.suppress(NotImplementedError, RuntimeError):  # no signals off the main thread
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def _version():
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("datasette-graphrag")
    except PackageNotFoundError:  # pragma: no cover - running from a checkout
        return "0"
