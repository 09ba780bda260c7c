"""HTML pages: an entity page and an interactive graph explorer for each graphrag database."""

import json

from datasette.utils.asgi import BadRequest, Forbidden, NotFound, Response
from markupsafe import Markup

from . import compat, links
from .endpoints import ToolRequestError, resolve_database, run_tool

_ERRORS = {400: BadRequest, 403: Forbidden, 404: NotFound}


def page_routes():
    """Routes for ``register_routes``; list them before the ``<tool>`` endpoint route."""
    return [
        (r"^/(?P<database>[^/]+)/-/graphrag/entity/(?P<entity_id>\d+)$", entity_page),
        (r"^/(?P<database>[^/]+)/-/graphrag/explore$", explore_page),
    ]


async def _run(datasette, request, name, arguments):
    """Run a read-only tool with the endpoints' checks, as an HTML error when refused."""
    try:
        return await run_tool(
            datasette, request.actor, request.url_vars["database"], name, arguments
        )
    except ToolRequestError as ex:
        raise _ERRORS.get(ex.status, BadRequest)(str(ex))


async def _database(datasette, request):
    """The page's database, after the checks Datasette's own pages make."""
    if not await compat.allowed(datasette, request.actor, "view-instance", default=True):
        raise Forbidden("You do not have permission to view this instance")
    try:
        return await resolve_database(datasette, request.url_vars["database"], request.actor)
    except ToolRequestError as ex:
        raise _ERRORS.get(ex.status, BadRequest)(str(ex))


def _dicts(results):
    return [dict(zip(results.columns, row)) for row in results.rows]


def _page_links(datasette, database):
    return {
        "entity": links.entity_url(datasette, database, ""),
        "explore": links.explore_url(datasette, database),
        "api": links.graphrag_path(datasette, database, ""),
        "rows": {
            table: datasette.urls.table(database, table) + "/"
            for table in ("docs", "chunks", "entities")
        },
    }


async def entity_page(request, datasette):
    database = request.url_vars["database"]
    entity_id = int(request.url_vars["entity_id"])
    await _database(datasette, request)
    explained = await _run(
        datasette, request, "explain_entity", {"entity_id": entity_id, "hops": 1}
    )
    entity = explained["entity"]
    for relation in explained["relations"]:
        relation["outgoing"] = relation["src"] == entity_id
    return Response.html(
        await datasette.render_template(
            "graphrag_entity.html",
            {
                "database": database,
                "entity": entity,
                "definition": explained["definition"],
                "aliases": explained["aliases"],
                "relations": explained["relations"],
                "sources": explained["sources"],
                "links": _page_links(datasette, database),
                "explore_url": links.explore_url(datasette, database, entity=entity_id),
                "row_url": datasette.urls.row(database, "entities", entity_id),
                "plugin": links.STATIC_NAME,
            },
            request=request,
        )
    )


async def _seed(datasette, request, db):
    """What ``?entity=``, ``?chunk=`` or ``?doc=`` preselects, and a notice when nothing."""
    entity = (request.args.get("entity") or "").strip()
    chunk = (request.args.get("chunk") or "").strip()
    doc = (request.args.get("doc") or "").strip()
    if chunk:
        if not chunk.isdigit():
            raise BadRequest("chunk must be a chunk id")
        rows = _dicts(
            await db.execute(
                "select chunks.id, chunks.seq, chunks.section, substr(chunks.content, 1, 300) as snippet, "
                "docs.id as doc_id, docs.title, docs.path from chunks join docs on docs.id = chunks.doc_id "
                "where chunks.id = ?",
                [int(chunk)],
            )
        )
        if not rows:
            raise NotFound(f"Chunk {chunk} not found")
        entities = _dicts(
            await db.execute(
                "select entities.id, entities.name, entities.type, count(*) as mentions "
                "from mentions join entities on entities.id = mentions.entity_id "
                "where mentions.chunk_id = ? group by entities.id "
                "order by mentions desc, entities.id limit 30",
                [int(chunk)],
            )
        )
        return {"kind": "chunk", "chunk": rows[0], "entities": entities}, None
    if doc:
        if not doc.isdigit():
            raise BadRequest("doc must be a document id")
        rows = _dicts(
            await db.execute("select id, title, path from docs where id = ?", [int(doc)])
        )
        if not rows:
            raise NotFound(f"Document {doc} not found")
        return {"kind": "doc", "doc": rows[0]}, None
    if entity.isdigit():
        rows = _dicts(
            await db.execute(
                "select id, name, type from entities where id = ?", [int(entity)]
            )
        )
        if not rows:
            raise NotFound(f"Entity {entity} not found")
        return {"kind": "entity", "entity": rows[0]}, None
    if entity:
        found = await _run(datasette, request, "entity_lookup", {"q": entity, "limit": 1})
        if found["entities"]:
            best = found["entities"][0]
            return {
                "kind": "entity",
                "entity": {"id": best["id"], "name": best["name"], "type": best["type"]},
            }, None
        return None, f'No entity matches "{entity}"'
    return None, None


def _script_json(value):
    """JSON safe to place inside a ``<script>`` element."""
    text = json.dumps(value).replace("<", "\\u003c").replace(">", "\\u003e")
    return Markup(text.replace("&", "\\u0026"))


async def explore_page(request, datasette):
    database = request.url_vars["database"]
    db = await _database(datasette, request)
    seed, notice = await _seed(datasette, request, db)
    config = dict(_page_links(datasette, database), database=database, seed=seed)
    return Response.html(
        await datasette.render_template(
            "graphrag_explore.html",
            {
                "database": database,
                # Show the name of a preselected entity, not the id the link carried
                "query": seed["entity"]["name"]
                if seed and seed["kind"] == "entity"
                else request.args.get("entity") or "",
                "notice": notice,
                "config_json": _script_json(config),
                "plugin": links.STATIC_NAME,
            },
            request=request,
        )
    )
