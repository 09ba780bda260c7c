"""JSON endpoints that follow the tool contracts: ``/<database>/-/graphrag/<tool>``."""

import asyncio
import json
import os
import re
from urllib.parse import urlsplit

import jsonschema
from datasette.utils import actor_matches_allow
from datasette.utils.asgi import Response

from llm_graphrag.db import ChangedMeanwhile, wrap_connection
from llm_graphrag.tools import TOOLS, ToolInputError, ToolNotFound, call_tool
from llm_graphrag.values import documented

from . import compat

PLUGIN = "datasette-graphrag"
WRITE_PERMISSION = "graphrag-write"
_GLOB = re.compile(r"[*?\[]")


def error(message, status, field=None):
    """Datasette's JSON error body for this version, naming the field when there is one."""
    body = compat.error_body(message, status)
    if field:
        body["field"] = field
    return Response.json(body, status=status)


async def graphrag_databases(datasette):
    """Names of the attached databases that hold a graphrag schema."""
    names = []
    for name, db in datasette.databases.items():
        if name == "_internal":
            continue
        if await db.table_exists("graphrag_settings"):
            names.append(name)
    return names


def arguments_from_query(tool, request):
    """Query-string arguments coerced to the types the tool's input schema declares."""
    arguments = {}
    properties = tool.input_schema["properties"]
    for key in request.args.keys():
        values = request.args.getlist(key)
        spec = properties.get(key, {})
        kind = spec.get("type")
        if isinstance(kind, list):
            kind = "integer" if "integer" in kind and all(v.lstrip("-").isdigit() for v in values) else "string"
        try:
            if kind == "array":
                item_kind = spec.get("items", {}).get("type")
                parts = [p for v in values for p in v.split(",") if p != ""]
                arguments[key] = [_integer(p) for p in parts] if item_kind == "integer" else parts
            elif kind == "integer":
                arguments[key] = _integer(values[0])
            elif kind == "number":
                arguments[key] = float(values[0])
            elif kind == "boolean":
                arguments[key] = _BOOLEANS[values[0].lower()]
            else:
                arguments[key] = values[0]
        except (ValueError, KeyError):
            raise ToolInputError(f"{tool.name}: {key}: expected {kind}, got {values[0]!r}", key)
    return arguments


_BOOLEANS = {"1": True, "true": True, "yes": True, "on": True, "0": False, "false": False, "no": False, "off": False}


def _integer(text):
    """An integer from query-string text: ``5`` or a whole number written ``5.0`` (JSON
    Schema counts both as integers); ``ValueError`` otherwise."""
    try:
        return int(text)
    except ValueError:
        number = float(text)
        if not number.is_integer():
            raise
        return int(number)


def ingest_roots(datasette):
    """The plugin's ``ingest_roots``, resolved (``~`` and links)."""
    config = datasette.plugin_config(PLUGIN) or {}
    return [os.path.realpath(os.path.expanduser(r)) for r in config.get("ingest_roots") or []]


def check_ingest_roots(datasette, paths):
    """Reject paths outside the plugin's ``ingest_roots``; a clear 403 message otherwise.

    A quick look at each path up to its first wildcard; the engine then resolves every
    file a walk or glob yields and refuses those outside the roots (``within``).
    """
    roots = ingest_roots(datasette)
    if not roots:
        return "ingest_docs is disabled: set ingest_roots in the datasette-graphrag plugin config"
    for path in paths:
        if ".." in re.split(r"[\\/]", path):
            return f"paths: {path!r} may not contain '..'"
        base = _GLOB.split(os.path.expanduser(path), 1)[0]
        real = os.path.realpath(base)
        if not any(real == root or real.startswith(root + os.sep) for root in roots):
            return f"paths: {path!r} is outside the allowed ingest roots {roots}"
    return None


def backend_url(datasette, database):
    """The plugin's ``backend`` setting for ``database``: one URL for every graphrag
    database, or ``{database: URL}``; None answers from the SQLite file."""
    backend = (datasette.plugin_config(PLUGIN) or {}).get("backend")
    if isinstance(backend, dict):
        return backend.get(database)
    return backend


async def call_backend(url, name, arguments):
    """Run a read tool against a backend server, off the event loop."""
    from llm_graphrag.backends import BackendError, call_backend_tool

    try:
        return await asyncio.get_running_loop().run_in_executor(
            None, call_backend_tool, url, name, arguments
        )
    except BackendError as ex:
        raise ToolRequestError(str(ex), 502)


class ToolRequestError(Exception):
    """A tool call refused before or while running, with its HTTP status."""

    def __init__(self, message, status, field=None):
        super().__init__(message)
        self.status = status
        self.field = field


async def resolve_database(datasette, database, actor):
    """The graphrag database a call is for, checking it exists and may be viewed."""
    if database is None:
        names = await graphrag_databases(datasette)
        if len(names) != 1:
            raise ToolRequestError(
                f"{len(names)} graphrag databases are served: name the database", 404, "database"
            )
        database = names[0]
    if database not in datasette.databases or database == "_internal":
        raise ToolRequestError(f"Database {database!r} not found", 404, "database")
    if not await compat.allowed(datasette, actor, "view-database", database, default=True):
        raise ToolRequestError(f"Not allowed to view database {database!r}", 403, "database")
    db = datasette.get_database(database)
    if not await db.table_exists("graphrag_settings"):
        raise ToolRequestError(
            f"Database {database!r} is not a graphrag database: create one with "
            "'llm graphrag init'",
            404,
            "database",
        )
    return db


def _write(conn, name, arguments, options):
    # The file may have become a graphrag database after Datasette opened it: the
    # engine's cascades need enforcement on this connection either way.
    conn.execute("PRAGMA foreign_keys=ON")
    return call_tool(wrap_connection(conn), name, arguments, **options)


async def run_tool(datasette, actor, database, name, arguments):
    """Run tool ``name`` for ``actor``: the permission checks every face shares."""
    if name not in TOOLS:
        raise ToolRequestError(f"Unknown tool {name!r}: one of {', '.join(TOOLS)}", 404, "tool")
    tool = TOOLS[name]
    db = await resolve_database(datasette, database, actor)
    try:
        tool.arguments(arguments)  # validate before touching the database
        if tool.read_only:
            backend = backend_url(datasette, db.name)
            if backend:
                return await call_backend(backend, name, arguments)
            return await db.execute_fn(lambda conn: call_tool(wrap_connection(conn), name, arguments))
        if not await compat.allowed(datasette, actor, WRITE_PERMISSION, db.name):
            raise ToolRequestError(f"{name} needs the {WRITE_PERMISSION} permission", 403)
        options = {}
        if name == "ingest_docs":
            problem = check_ingest_roots(datasette, arguments["paths"])
            if problem:
                raise ToolRequestError(problem, 403, "paths")
            options["within"] = ingest_roots(datasette)  # every file is checked again
        return await db.execute_write_fn(
            lambda conn: _write(conn, name, arguments, options), block=True
        )
    except ToolInputError as ex:
        raise ToolRequestError(str(ex), 400, ex.field)
    except ToolNotFound as ex:
        raise ToolRequestError(str(ex), 404)
    except ChangedMeanwhile as ex:
        raise ToolRequestError(str(ex), 409)


def cross_site_problem(request, body):
    """Why a POST may be a cross-site request forgery, or None.

    These endpoints skip Datasette's CSRF token (they take JSON, not forms), so: a body
    must be sent as ``application/json`` (a form or ``text/plain`` POST from another site
    cannot), and a request carrying cookies must come from this server's own origin
    (``Origin`` host, else ``Sec-Fetch-Site``). Clients with a token and no cookie, and
    clients that send neither header (curl, scripts), are not browsers acting for a user.
    """
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    json_body = kind == "application/json" or not body.strip()
    if not request.headers.get("cookie"):
        return None if json_body else _not_json(kind)
    origin = request.headers.get("origin")
    if origin is not None:
        if urlsplit(origin).netloc.lower() != (request.host or "").lower():
            return (
                f"Cross-origin request from {origin} refused: tool calls with cookies must "
                "come from this server's own pages; other clients send a token instead",
                403,
            )
    elif request.headers.get("sec-fetch-site", "").lower() in ("cross-site", "same-site"):
        return (
            "Cross-site request refused: tool calls with cookies must come from this "
            "server's own pages; other clients send a token instead",
            403,
        )
    return None if json_body else _not_json(kind)


def _not_json(kind):
    return (
        "Send the request body as JSON with 'Content-Type: application/json' "
        f"(got {kind or 'no content type'!r})",
        415,
    )


async def tool_view(request, datasette):
    name = request.url_vars["tool"]
    try:
        if request.method == "POST":
            body = await request.post_body()
            problem = cross_site_problem(request, body)
            if problem:
                return error(*problem)
            try:
                arguments = json.loads(body or b"{}")
            except ValueError:
                return error("Request body must be a JSON object", 400)
            if not isinstance(arguments, dict):
                return error("Request body must be a JSON object", 400)
        elif request.method == "GET":
            tool = TOOLS.get(name)
            if tool is not None and not tool.read_only:
                return not_allowed(f"{name} changes the database: use POST with a JSON body", tool)
            arguments = arguments_from_query(tool, request) if tool else {}
        else:
            return not_allowed(f"Use {_methods(TOOLS.get(name))}", TOOLS.get(name))
        result = await run_tool(
            datasette, request.actor, request.url_vars.get("database"), name, arguments
        )
    except ToolInputError as ex:
        return error(str(ex), 400, ex.field)
    except ToolRequestError as ex:
        return error(str(ex), ex.status, ex.field)
    return Response.json(result)


def _methods(tool):
    return "POST" if tool is not None and not tool.read_only else "GET, POST"


def not_allowed(message, tool):
    """A 405 with the ``Allow`` header HTTP requires: the methods the tool takes."""
    response = error(message, 405)
    response.headers["Allow"] = _methods(tool)
    return response


def may_write(datasette, actor):
    """``graphrag-write``: denied to anonymous actors; ``write_allow`` config narrows it."""
    if actor is None:
        return False
    allow = (datasette.plugin_config(PLUGIN) or {}).get("write_allow")
    if allow is not None:
        return actor_matches_allow(actor, allow)
    return True


def openapi_schema(name, schema, components):
    """``schema`` for an OpenAPI document: its ``$defs`` moved into ``components`` as
    ``<name>_<def>`` (OpenAPI resolves ``#/...`` against the whole document) and its
    ``$id`` dropped (it would make those references relative to another document)."""
    if "$defs" not in schema:
        return schema

    def rewrite(node):
        if isinstance(node, list):
            return [rewrite(item) for item in node]
        if not isinstance(node, dict):
            return node
        return {
            key: f"#/components/schemas/{name}_{value.rsplit('/', 1)[1]}"
            if key == "$ref" and isinstance(value, str) and value.startswith("#/$defs/")
            else rewrite(value)
            for key, value in node.items()
            if key not in ("$defs", "$id")
        }

    for key, value in schema["$defs"].items():
        components[f"{name}_{key}"] = rewrite(value)
    return rewrite(schema)


def permission_allowed(datasette, actor, action):
    """Datasette 0.65's ``permission_allowed`` hook."""
    if action != WRITE_PERMISSION:
        return None
    return may_write(datasette, actor)


def register_actions():
    """Datasette 1.0's ``register_actions`` hook: ``graphrag-write`` on a database."""
    from datasette.permissions import Action
    from datasette.resources import DatabaseResource

    return [
        Action(
            name=WRITE_PERMISSION,
            abbr=None,
            description="Run the graphrag write tools (ingest_docs, extract_and_link)",
            resource_class=DatabaseResource,
        )
    ]


def permission_resources_sql(datasette, actor, action):
    """Datasette 1.0's ``permission_resources_sql`` hook: the rule of ``may_write``, for
    every database; anything else (a ``permissions`` block in datasette.yaml) adds to it."""
    if action != WRITE_PERMISSION or not may_write(datasette, actor):
        return None
    from datasette.permissions import PermissionSQL

    return PermissionSQL.allow("datasette-graphrag: write_allow or a signed-in actor")


def query_parameters(tool, schema):
    """The GET form's query parameters: one per argument, or, when arguments depend on
    each other (``subgraph`` needs ``doc_id`` or ``entity_names``), one form-exploded
    object holding them all, whose schema says so."""
    if not any(key in schema for key in ("anyOf", "oneOf", "allOf")):
        required = schema.get("required", [])
        return [
            {"name": key, "in": "query", "required": key in required, "schema": spec}
            for key, spec in schema["properties"].items()
        ]
    # A query string cannot carry an empty list: it would count as no argument at all.
    properties = {
        key: dict(spec, minItems=max(1, spec.get("minItems", 0))) if spec.get("type") == "array" else spec
        for key, spec in schema["properties"].items()
    }
    rest = {k: v for k, v in schema.items() if k not in ("$schema", "title", "description", "properties")}
    return [
        {
            "name": "arguments",
            "in": "query",
            "required": True,
            "style": "form",
            "explode": True,
            "schema": dict(rest, properties=properties),
        }
    ]


def openapi_document(databases=()):
    """OpenAPI 3.1 description of every tool endpoint; ``databases`` names the graphrag
    databases served (the values the ``{database}`` path segment takes)."""
    paths = {}
    components = {}
    for name, tool in TOOLS.items():
        operation = {}
        # The argument rules values.py enforces beyond the tool's schema, written into it.
        input_schema = documented(tool.input_schema)
        responses = {
            "200": {
                "description": f"{name} result",
                "content": {
                    "application/json": {"schema": openapi_schema(name, tool.output_schema, components)}
                },
            },
            "400": {"description": "Invalid arguments; the body names the field"},
            "404": {"description": "Unknown database, tool, entity or document"},
        }
        if tool.read_only:
            responses["502"] = {"description": "The configured backend server failed"}
            operation["get"] = {
                "operationId": f"{name}_get",
                "summary": tool.description,
                "parameters": query_parameters(tool, input_schema),
                "responses": dict(responses, **{"403": {"description": "Not allowed to view the database"}}),
            }
        else:
            responses["409"] = {"description": "The database changed meanwhile: run the call again"}
        operation["post"] = {
            "operationId": name,
            "summary": tool.description,
            "requestBody": {
                # An empty body means {}: required when {} is not a valid call.
                "required": not jsonschema.Draft202012Validator(tool.input_schema).is_valid({}),
                "content": {"application/json": {"schema": input_schema}},
            },
            "responses": dict(
                responses,
                **{
                    "403": {
                        "description": "Not allowed to view the database, or a request with "
                        "cookies came from another origin"
                        if tool.read_only
                        else f"Needs the {WRITE_PERMISSION} permission, or a request with "
                        "cookies came from another origin"
                    },
                    "415": {"description": "The body was not sent as application/json"},
                },
            ),
        }
        database_schema = {"type": "string"}
        if databases:
            database_schema["enum"] = list(databases)
        database_parameter = {
            "name": "database",
            "in": "path",
            "required": True,
            "schema": database_schema,
        }
        with_database = {
            method: dict(op, operationId=f"{op['operationId']}_db", parameters=[database_parameter] + op.get("parameters", []))
            for method, op in operation.items()
        }
        paths[f"/{{database}}/-/graphrag/{name}"] = with_database
        paths[f"/-/graphrag/{name}"] = operation
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "datasette-graphrag tools",
            "version": "0.1.0",
            "description": "The graphrag tool contracts over HTTP. The short paths work when "
            "exactly one graphrag database is served.",
        },
        "paths": paths,
        "components": {"schemas": components},
    }


async def openapi_view(request, datasette):
    return Response.json(openapi_document(await graphrag_databases(datasette)))
