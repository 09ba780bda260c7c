"""Datasette plugin for graphrag databases: extensions, SQL functions, endpoints, MCP."""

import copy
import pathlib
from functools import lru_cache

import yaml
from datasette import hookimpl
from markupsafe import Markup

from llm_graphrag.db import BUSY_TIMEOUT_MS, load_extensions

from . import compat, endpoints, sql_functions, vec0


@hookimpl
def prepare_connection(conn):
    load_extensions(conn)
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    # Foreign keys for graphrag files only: Datasette's internal database deletes its
    # schema rows parents first, which enforcement would refuse.
    if is_graphrag_connection(conn):
        conn.execute("PRAGMA foreign_keys=ON")
    sql_functions.register(conn)


def is_graphrag_connection(conn):
    """Whether the main database of ``conn`` holds a graphrag schema."""
    return bool(
        conn.execute(
            "select 1 from sqlite_master where type = 'table' and name = 'graphrag_settings'"
        ).fetchone()
    )


METADATA_FILE = pathlib.Path(__file__).parent / "metadata.yml"


@lru_cache(maxsize=1)
def graphrag_metadata():
    """Titles, descriptions, hidden tables and canned queries every graphrag database gets:
    the ``graphrag`` entry of metadata.yml."""
    return yaml.safe_load(METADATA_FILE.read_text())["databases"]["graphrag"]


def database_metadata(datasette, database):
    """``graphrag_metadata()`` for ``database``, with a link to its explorer."""
    from .links import explore_url

    metadata = copy.deepcopy(graphrag_metadata())
    metadata["description_html"] = Markup(
        '<p>{}</p><p><a class="graphrag-explore-link" href="{}">Explore the graph</a>: '
        "search an entity, expand its neighbours, follow them to chunks and documents.</p>"
    ).format(metadata["description"], explore_url(datasette, database))
    return metadata


def _warm_up(conn):
    # Loads the embedding model (about a second) before the first hybrid_search, whose
    # time limit it would not fit in.
    conn.execute("select graphrag_embed('warm up'), graphrag_fts_query('warm up')").fetchone()


@hookimpl
def startup(datasette):
    async def set_up_graphrag_databases():
        names = await endpoints.graphrag_databases(datasette)
        datasette._graphrag_databases = set(names)
        for name in names:
            db = datasette.get_database(name)
            vec0.adapt(db)
            if compat.DATASETTE_1:
                await compat.apply_metadata(datasette, name, database_metadata(datasette, name))
        if names:
            await datasette.get_database(names[0]).execute_fn(_warm_up)

    return set_up_graphrag_databases


@hookimpl
def get_metadata(datasette, key, database, table):
    # Datasette 0.65 only: 1.0 gets the same from the startup hook.
    names = getattr(datasette, "_graphrag_databases", ())
    if not names:
        return None
    # A copy per database: Datasette merges local metadata into what this returns
    return {"databases": {name: database_metadata(datasette, name) for name in names}}


def _explorer_links(datasette, databases):
    from .links import explore_url

    return [
        {"href": explore_url(datasette, name), "label": f"Graph explorer: {name}"}
        for name in sorted(databases)
    ]


@hookimpl
def menu_links(datasette, actor, request):
    return _explorer_links(datasette, getattr(datasette, "_graphrag_databases", ()))


@hookimpl
def database_actions(datasette, actor, database, request):
    if database in getattr(datasette, "_graphrag_databases", ()):
        return _explorer_links(datasette, [database])
    return None


@hookimpl
def top_homepage(datasette, request):
    # Datasette 1.0: links at the top of the home page (0.65 has the menu links only)
    links = _explorer_links(datasette, getattr(datasette, "_graphrag_databases", ()))
    if not links:
        return None
    items = Markup("").join(
        Markup('<li><a class="graphrag-explore-link" href="{}">{}</a></li>').format(
            link["href"], link["label"]
        )
        for link in links
    )
    return Markup('<ul class="graphrag-explore-links">{}</ul>').format(items)


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
    # Datasette 0.65
    return endpoints.permission_allowed(datasette, actor, action)


@hookimpl
def register_actions(datasette):
    # Datasette 1.0
    return endpoints.register_actions()


@hookimpl
def permission_resources_sql(datasette, actor, action):
    # Datasette 1.0
    return endpoints.permission_resources_sql(datasette, actor, action)


@hookimpl
def render_cell(row, value, column, table, database, datasette):
    from .links import render_link

    return render_link(datasette, database, table, column, value, row)


@hookimpl
def register_mcp_tools(datasette, mcp):
    from .mcp_tools import register_graphrag_tools

    register_graphrag_tools(datasette, mcp)
