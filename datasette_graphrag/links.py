"""Links from Datasette's tables and row pages to the graphrag pages.

``render_link`` has the arguments of Datasette's ``render_cell`` hook and returns
``None`` for every cell it does not handle, so the hook can return it directly.
"""

import urllib.parse

from markupsafe import Markup

# Static files are mounted under the distribution name and its underscore form; only
# the underscore form exists when the plugin is registered by module (as under test).
STATIC_NAME = "datasette_graphrag"

# (table, column) -> where its value links: the entity page, or the explorer filter
ENTITY_COLUMNS = {
    ("entities", "id"),
    ("mentions", "entity_id"),
    ("relations", "src_id"),
    ("relations", "dst_id"),
}
EXPLORE_COLUMNS = {("chunks", "id"): "chunk", ("docs", "id"): "doc"}


def graphrag_path(datasette, database, *parts):
    """``/<database>/-/graphrag/<parts>``, honouring ``base_url``."""
    return "/".join([datasette.urls.database(database), "-", "graphrag", *map(str, parts)])


def entity_url(datasette, database, entity_id):
    return graphrag_path(datasette, database, "entity", entity_id)


def explore_url(datasette, database, **filters):
    """The explorer, optionally preselecting ``entity``, ``chunk`` or ``doc``."""
    url = graphrag_path(datasette, database, "explore")
    query = urllib.parse.urlencode({k: v for k, v in filters.items() if v is not None})
    return f"{url}?{query}" if query else url


def _link(href, text, title, value=None):
    """An ``<a>``; with ``value``, Datasette's foreign key style ``label <em>id</em>``."""
    link = Markup('<a class="graphrag-link" href="{}" title="{}">{}</a>').format(
        href, title, text
    )
    if value is not None:
        link += Markup("&nbsp;<em>{}</em>").format(value)
    return link


def render_link(datasette, database, table, column, value, row):
    """A link for entity ids to the entity page, for chunk and doc ids to the explorer."""
    key = (table, column)
    if key not in ENTITY_COLUMNS and key not in EXPLORE_COLUMNS:
        return None
    # The plugin's startup hook records which databases hold a graphrag schema
    served = getattr(datasette, "_graphrag_databases", None)
    if served is not None and database not in served:
        return None
    label = None
    if isinstance(value, dict):  # a foreign key Datasette expanded to its label
        label = value.get("label")
        value = value.get("value")
    if value is None or isinstance(value, bool) or not str(value).isdigit():
        return None
    if key == ("entities", "id"):  # the row's own id: say where the link goes
        return _labelled(value, entity_url(datasette, database, value), "entity page")
    if key in ENTITY_COLUMNS:
        url = entity_url(datasette, database, value)
        if label and str(label) != str(value):
            return _link(url, label, "GraphRAG entity page", value)
        return _link(url, value, "GraphRAG entity page")
    kind = EXPLORE_COLUMNS[key]
    return _labelled(value, explore_url(datasette, database, **{kind: value}), "explore graph")


def _labelled(value, href, text):
    return Markup('{} · <a class="graphrag-link" href="{}">{}</a>').format(value, href, text)
