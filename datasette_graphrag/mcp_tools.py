"""Every graphrag tool on datasette-mcp's ``/-/mcp`` server, obeying Datasette permissions."""

import inspect
from typing import Any, Optional

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

from llm_graphrag.tools import TOOLS

from .endpoints import ToolRequestError, run_tool

_PYTHON_TYPES = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list,
    "object": dict,
}


def _annotation(spec):
    kind = spec.get("type")
    if isinstance(kind, list) or kind is None:
        return Any
    return _PYTHON_TYPES[kind]


def _actor(ctx):
    request = ctx.request_context.request
    scope = getattr(request, "scope", None)
    actor = scope.get("actor") if isinstance(scope, dict) else None
    return actor if isinstance(actor, dict) else None


def _make_tool(datasette, tool):
    schema = tool.input_schema
    required = set(schema.get("required", []))

    async def call(ctx: Context, database: Optional[str] = None, **arguments):
        arguments = {k: v for k, v in arguments.items() if v is not None}
        try:
            return await run_tool(datasette, _actor(ctx), database, tool.name, arguments)
        except ToolRequestError as ex:
            raise ToolError(str(ex)) from ex

    parameters = [
        inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Context),
        inspect.Parameter(
            "database", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Optional[str]
        ),
    ]
    for key, spec in schema["properties"].items():
        annotation = _annotation(spec)
        parameters.append(
            inspect.Parameter(
                key,
                inspect.Parameter.KEYWORD_ONLY,
                default=inspect.Parameter.empty if key in required else None,
                annotation=annotation if key in required else Optional[annotation],
            )
        )
    call.__signature__ = inspect.Signature(parameters, return_annotation=dict)
    call.__name__ = tool.name
    return call


def register_graphrag_tools(datasette, mcp):
    for tool in TOOLS.values():
        mcp.add_tool(
            _make_tool(datasette, tool),
            name=tool.name,
            description=tool.description
            + " Pass 'database' when more than one graphrag database is served.",
            annotations=ToolAnnotations(
                read_only_hint=tool.read_only,
                destructive_hint=not tool.read_only,
                open_world_hint=False,
            ),
            structured_output=False,
        )
