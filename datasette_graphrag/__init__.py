"""Datasette plugin for graphrag databases: extensions, SQL functions, endpoints, MCP."""

import copy
import pathlib
from functools import lru_cache

import yaml
from datasette import hookimpl

from llm_graphrag.db import BUSY_TIMEOUT_MS, load_extensions

from . import endpoints, sql_functions


@hookimpl
def prepare_connection(conn):
    load_extensions(conn)
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys=ON")
    sql_functions.register(conn)


@lru_cache(maxsize=1)
def graphrag_metadata():
    """The titles, descriptions and canned queries every graphrag database gets."""
    return yaml.safe_load((pathlib.Path(__file__).parent / "metadata.yml").read_text())


@hookimpl
def startup(datasette):
    async def find_graphrag_databases():
        datasette._graphrag_databases = set(await endpoints.graphrag_databases(datasette))

    return find_graphrag_databases


@hookimpl
def get_metadata(datasette, key, database, table):
    names = getattr(datasette, "_graphrag_databases", ())
    if not names:
        return None
    # A copy per database: Datasette merges local metadata into what this returns
    return {"databases": {name: copy.deepcopy(graphrag_metadata()) for name in names}}


@hookimpl
def register_routes():
    from .pages import page_routes

    # Pages first: Datasette takes the first match, and "explore" also fits <tool>
    return page_routes() + [
        (r"^/-/graphrag/openapi\.json$", endpoints.openapi_view),
        (r"^/(?P<database>[^/]+)/-/graphrag/(?P<tool>[a-z_]+)$", endpoints.tool_view),
        (r"^/-/graphrag/(?P<tool>[a-z_]+)$", endpoints.tool_view),
    ]


@hookimpl
def skip_csrf(scope):
    # The JSON API takes JSON bodies, not forms; permissions still apply.
    return "/-/graphrag/" in scope.get("path", "")


@hookimpl
def permission_allowed(datasette, actor, action):
    return endpoints.permission_allowed(datasette, actor, action)


@hookimpl
def render_cell(row, value, column, table, database, datasette):
    from .links import render_link

    return render_link(datasette, database, table, column, value, row)


@hookimpl
def register_mcp_tools(datasette, mcp):
    from .mcp_tools import register_graphrag_tools

    register_graphrag_tools(datasette, mcp)
