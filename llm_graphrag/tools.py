"""The graphrag tools: one engine function each, with JSON Schemas for input and output.

The CLI, the Datasette endpoints and MCP all go through ``call_tool``.
"""

import json
import pathlib
from dataclasses import dataclass
from functools import cached_property

import jsonschema

from .values import check_values

SCHEMAS = pathlib.Path(__file__).parent / "schemas"


# What an input schema's ``pattern`` asks for, said for people.
_PATTERN_MESSAGES = {"\\S": "is blank: write some text"}


class ToolInputError(ValueError):
    """Arguments that do not match a tool's input schema; names the field."""

    def __init__(self, message, field=None):
        super().__init__(message)
        self.field = field


class ToolNotFound(LookupError):
    """A tool argument points at something that does not exist (entity, document)."""


@dataclass(frozen=True)
class Tool:
    name: str
    function: object
    read_only: bool = True

    @cached_property
    def input_schema(self):
        return json.loads((SCHEMAS / f"{self.name}.input.json").read_text())

    @cached_property
    def output_schema(self):
        return json.loads((SCHEMAS / f"{self.name}.output.json").read_text())

    @property
    def description(self):
        return self.input_schema["description"]

    def arguments(self, arguments):
        """Validate ``arguments`` and fill in defaults; raise ``ToolInputError``."""
        arguments = dict(arguments or {})
        validator = jsonschema.Draft202012Validator(self.input_schema)
        error = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
        if error is not None:
            field = ".".join(str(p) for p in error.absolute_path) or (
                error.validator_value[0]
                if error.validator == "required" and isinstance(error.validator_value, list)
                else None
            )
            if error.validator == "additionalProperties":
                field = sorted(set(arguments) - set(self.input_schema["properties"]))[0]
            message = _PATTERN_MESSAGES.get(error.validator_value) if error.validator == "pattern" else None
            raise ToolInputError(f"{self.name}: {field or 'arguments'}: {message or error.message}", field)
        try:
            arguments = check_values(self.input_schema, arguments)
        except ValueError as ex:
            field, message = ex.args[0]
            raise ToolInputError(f"{self.name}: {field}: {message}", field)
        for key, spec in self.input_schema["properties"].items():
            if key not in arguments and "default" in spec:
                arguments[key] = spec["default"]
        return arguments

    def __call__(self, db, arguments=None, **options):
        arguments = self.arguments(arguments)
        try:
            return self.function(db, **arguments, **options)
        except LookupError as ex:
            raise ToolNotFound(str(ex)) from ex


def _ingest_docs(db, paths, tags, skip_if_seen, prune, extract, include, within=None):
    from .ingest import ingest_docs

    return ingest_docs(
        db, paths, tags=tags, skip_if_seen=skip_if_seen, prune=prune, extract=extract,
        include=include, within=within,
    ).to_dict()


def _extract_and_link(db, doc_ids=None):
    from .extract import extract_and_link

    return extract_and_link(db, doc_ids=doc_ids)


def _hybrid_query(db, q, k, hops, mode, rels=None):
    from .retrieval_log import logged_retrieval
    from .retrieval import RetrievalOptions, hybrid_query

    options = RetrievalOptions(k=k, hops=hops, rels=rels, mode=mode)
    arguments = {"q": q, "k": k, "hops": hops, "mode": mode, "rels": rels}
    return logged_retrieval(db, arguments, lambda: hybrid_query(db, q, options))


def _status(db):
    from .status import status

    return status(db)


def _deep_research(db, q, k, max_sub_queries, max_hops, max_chains, timeout_ms, with_bodies):
    from .research import ResearchError, ResearchOptions
    from .research_run import deep_research

    try:
        options = ResearchOptions(
            k=k, max_sub_queries=max_sub_queries, max_hops=max_hops, max_chains=max_chains,
            timeout_ms=timeout_ms, with_bodies=with_bodies,
        )
        return deep_research(db, q, options)
    except ResearchError as ex:
        raise ToolInputError(f"deep_research: {ex}", "q") from ex


def _graph(name):
    def call(db, **arguments):
        from . import graph

        return getattr(graph, name)(db, **arguments)

    return call


TOOLS = {
    tool.name: tool
    for tool in (
        Tool("ingest_docs", _ingest_docs, read_only=False),
        Tool("extract_and_link", _extract_and_link, read_only=False),
        Tool("entity_lookup", _graph("entity_lookup")),
        Tool("hybrid_query", _hybrid_query),
        Tool("explain_entity", _graph("explain_entity")),
        Tool("status", _status),
        Tool("subgraph", _graph("subgraph")),
        Tool("path", _graph("path")),
        Tool("topn", _graph("topn")),
        Tool("deep_research", _deep_research),
    )
}


def call_tool(db, name, arguments=None, **options):
    """Run the tool ``name`` against ``db`` with JSON-like ``arguments``.

    ``options`` are engine keywords a client cannot set: the server's ``within`` (the
    folders ``ingest_docs`` may read) for ``ingest_docs``.
    """
    if name not in TOOLS:
        raise ToolInputError(
            f"Unknown tool {name!r}: choose one of {', '.join(TOOLS)}", field="tool"
        )
    return TOOLS[name](db, arguments, **options)


def mcp_output_schema(tool):
    """``tool.output_schema`` as MCP servers declare it: local ``$defs`` references replaced
    by the definitions themselves (the SDK resolves ``#/$defs/...`` against schemas of its
    own, and fails on ours: seed 000's ``deep_research`` schema has them), ``$id`` dropped."""
    schema = tool.output_schema
    definitions = schema.get("$defs")
    if not definitions:
        return schema

    def inline(node):
        if isinstance(node, list):
            return [inline(item) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            return inline(definitions[ref.rsplit("/", 1)[1]])
        return {key: inline(value) for key, value in node.items() if key not in ("$defs", "$id")}

    return inline(schema)


def mcp_tool(tool, call, extra_properties=None):
    """``(fn, options)`` that put ``tool`` on an MCP SDK server: ``server.add_tool(fn, **options)``.

    Its input schema becomes the MCP ``inputSchema`` (with ``extra_properties``, all optional),
    its output schema the ``outputSchema``, and each result comes back as structured content
    and as the same JSON in a text block. ``await call(ctx, arguments)`` runs it: ``ctx`` is
    the SDK's ``Context``, ``arguments`` those the client gave, and it returns the result or
    raises the SDK's ``ToolError`` with a message for the client.
    """
    import inspect
    from typing import Annotated, Any, Optional

    from mcp.server.mcpserver import Context
    from mcp.types import ToolAnnotations
    from pydantic import Field, RootModel, WithJsonSchema

    output_schema = mcp_output_schema(tool)

    class Output(RootModel[dict[str, Any]]):
        @classmethod
        def __get_pydantic_json_schema__(cls, core_schema, handler):
            return output_schema

    Output.__name__ = Output.__qualname__ = f"{tool.name}_output"
    types = {"string": str, "integer": int, "number": float, "boolean": bool, "array": list, "object": dict}

    def no_null_default(schema):  # pydantic's default for an optional argument left out
        if "default" in schema and schema["default"] is None:
            del schema["default"]

    async def fn(ctx: Context, **arguments) -> Output:
        return await call(ctx, {k: v for k, v in arguments.items() if v is not None})

    required = set(tool.input_schema.get("required", []))
    parameters = [inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Context)]
    properties = dict(tool.input_schema["properties"], **(extra_properties or {}))
    for key, spec in properties.items():
        kind = spec.get("type")
        annotation = types[kind] if isinstance(kind, str) else Any
        if key not in required:
            annotation = Optional[annotation]
        parameters.append(
            inspect.Parameter(
                key,
                inspect.Parameter.KEYWORD_ONLY,
                default=inspect.Parameter.empty if key in required else spec.get("default"),
                annotation=Annotated[
                    annotation, WithJsonSchema(spec), Field(json_schema_extra=no_null_default)
                ],
            )
        )
    fn.__signature__ = inspect.Signature(parameters, return_annotation=Output)
    fn.__name__ = tool.name
    options = {
        "name": tool.name,
        "description": tool.description,
        "annotations": ToolAnnotations(
            read_only_hint=tool.read_only, destructive_hint=not tool.read_only, open_world_hint=False
        ),
        "structured_output": True,
    }
    return fn, options
