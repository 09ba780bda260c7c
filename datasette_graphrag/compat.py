"""What differs between Datasette 0.65 and 1.0: permissions, metadata, stored queries, errors.

0.65 checks permissions with ``datasette.permission_allowed()``, takes metadata and canned
queries from plugins through ``get_metadata``, and answers JSON errors as
``{"ok", "error", "status", "title"}``. 1.0 checks them with ``datasette.allowed()`` over
actions that plugins register, keeps metadata and stored queries in its internal database,
and answers ``{"ok", "error", "errors", "status"}``.
"""

from datasette.version import __version__

# Not datasette.app: plugins load while it is being imported
DATASETTE_1 = int(__version__.split(".")[0]) >= 1


async def allowed(datasette, actor, action, database=None, default=False):
    """Whether ``actor`` may perform ``action``, on ``database`` when it takes one."""
    if DATASETTE_1:
        from datasette.resources import DatabaseResource

        resource = DatabaseResource(database=database) if database is not None else None
        return await datasette.allowed(action=action, resource=resource, actor=actor)
    return await datasette.permission_allowed(actor, action, database, default=default)


def error_body(message, status):
    """The JSON body Datasette itself answers errors with."""
    if DATASETTE_1:
        from datasette.utils import error_body as datasette_error_body

        return datasette_error_body(message, status)
    return {"ok": False, "error": message, "status": status, "title": None}


async def apply_metadata(datasette, database, metadata):
    """Datasette 1.0: store ``metadata`` (one database's entry) for ``database``.

    Titles and descriptions go into the internal database, without replacing what
    ``-m metadata.yml`` already set; hidden tables into the configuration; canned
    queries become stored queries of the plugin.
    """
    current = await datasette.get_database_metadata(database)
    for key in ("title", "description", "description_html", "source", "license"):
        if key in metadata and key not in current:
            await datasette.set_database_metadata(database, key, metadata[key])
    config_tables = (
        datasette.config.setdefault("databases", {})
        .setdefault(database, {})
        .setdefault("tables", {})
    )
    for table, table_metadata in (metadata.get("tables") or {}).items():
        if table_metadata.get("hidden"):
            config_tables.setdefault(table, {}).setdefault("hidden", True)
        current = await datasette.get_resource_metadata(database, table)
        for key in ("title", "description"):
            if key in table_metadata and key not in current:
                await datasette.set_resource_metadata(database, table, key, table_metadata[key])
        for column, description in (table_metadata.get("columns") or {}).items():
            known = await datasette.get_column_metadata(database, table, column)
            if "description" not in known:
                await datasette.set_column_metadata(
                    database, table, column, "description", description
                )
    for name, query in (metadata.get("queries") or {}).items():
        if await datasette.get_query(database, name) is None:
            await datasette.add_query(
                database,
                name,
                query["sql"],
                title=query.get("title"),
                description=query.get("description"),
                source="plugin",
            )
