"""Every graphrag tool on datasette-mcp's ``/-/mcp`` server, obeying Datasette permissions."""

from mcp.server.mcpserver.exceptions import ToolError

from llm_graphrag.tools import TOOLS, mcp_tool

from .endpoints import ToolRequestError, run_tool

DATABASE = {
    "type": "string",
    "description": "The graphrag database to use; needed when more than one is served",
}


def _actor(ctx):
    request = ctx.request_context.request
    scope = getattr(request, "scope", None)
    actor = scope.get("actor") if isinstance(scope, dict) else None
    return actor if isinstance(actor, dict) else None


def register_graphrag_tools(datasette, mcp):
    for tool in TOOLS.values():

        async def call(ctx, arguments, name=tool.name):
            database = arguments.pop("database", None)
            try:
                return await run_tool(datasette, _actor(ctx), database, name, arguments)
            except ToolRequestError as ex:
                raise ToolError(str(ex)) from ex

        fn, options = mcp_tool(tool, call, extra_properties={"database": DATABASE})
        mcp.add_tool(fn, **options)
