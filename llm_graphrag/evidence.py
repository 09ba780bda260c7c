"""Evidence output per seed 001: mermaid export and ``context.md`` (the retrieval log and
cache are ``retrieval_log``)."""

import pathlib
import re

import jinja2

TEMPLATES = pathlib.Path(__file__).parent / "templates"


def _slug(text):
    return re.sub(r"[^0-9A-Za-z]+", "_", str(text)).strip("_").lower() or "x"


def _label(text):
    return str(text).replace('"', "'")


def mermaid(data):
    """Mermaid ``graph LR`` text for a subgraph, path or hybrid_query result."""
    lines = ["graph LR"]
    node_names = {}

    def node(node_id, label):
        name = node_names.get(node_id)
        if name is None:
            kind, _, rest = str(node_id).partition(":")
            name = f"{kind.lower()}_{_slug(rest or node_id)}"
            while name in node_names.values():
                name += "_"
            node_names[node_id] = name
            return f'{name}["{_label(label)}"]'
        return name

    nodes = data.get("nodes") or data.get("path")
    if nodes is not None:  # subgraph or path
        labels = {}
        for n in nodes:
            title = n.get("title") or str(n["id"]).split(":", 1)[-1]
            labels[n["id"]] = f"{n['label']}｜{title}"
        structural = [e for e in data["edges"] if e["type"] in ("MENTIONS", "PART_OF", "HAS_CHUNK")]
        related = [e for e in data["edges"] if e not in structural]
        if structural:
            lines.append("  %% Docs and chunks")
            for e in structural:
                lines.append(
                    f"  {node(e['source'], labels.get(e['source'], e['source']))} --> "
                    f"{node(e['target'], labels.get(e['target'], e['target']))}"
                )
        if related:
            lines.append("  %% Entity relations")
            for e in related:
                weight = f" ({e['weight']:.2f})" if e.get("weight") is not None else ""
                lines.append(
                    f"  {node(e['source'], labels.get(e['source'], e['source']))} -. "
                    f"{e['type']}{weight} .-> {node(e['target'], labels.get(e['target'], e['target']))}"
                )
        for n in nodes:
            if n["id"] not in node_names:
                lines.append(f"  {node(n['id'], labels[n['id']])}")
        categories = [n for n in nodes if n.get("label") == "Doc" and n.get("tags")]
        if categories:
            lines.append("  %% Categories and tags")
            for n in categories:
                for tag in n["tags"]:
                    lines.append(f"  {node(n['id'], labels[n['id']])} --> {node('Tag:' + tag, 'Tag｜' + tag)}")
        return "\n".join(lines) + "\n"
    # hybrid_query result
    entities = {e["id"]: e for e in data.get("entities", [])}
    if data.get("chunks"):
        lines.append("  %% Docs and chunks")
    for chunk in data.get("chunks", []):
        doc_label = f"Doc｜{chunk.get('title') or pathlib.Path(chunk['path']).name}"
        doc = node(f"Doc:{chunk['doc_id']}", doc_label)
        lines.append(f"  {doc} --> {node('Chunk:' + str(chunk['id']), 'Chunk#' + str(chunk['id']))}")
        for entity_id in chunk.get("entity_ids", []):
            if entity_id in entities:
                lines.append(
                    f"  {node('Chunk:' + str(chunk['id']), '')} --> "
                    f"{node('Entity:' + str(entity_id), 'Entity｜' + entities[entity_id]['name'])}"
                )
    def entity(entity_id):
        name = entities.get(entity_id, {"name": str(entity_id)})["name"]
        return node(f"Entity:{entity_id}", f"Entity｜{name}")

    # A mention edge (seed 003 MENTIONED_IN) ends at a chunk, whose id is no entity id
    mentions = [e for e in data.get("edges", []) if e.get("kind") == "mention"]
    related = [e for e in data.get("edges", []) if e.get("kind") != "mention"]
    if mentions:
        lines.append("  %% Mentions")
    for e in mentions:
        chunk = node(f"Chunk:{e['dst']}", f"Chunk#{e['dst']}")
        lines.append(f"  {entity(e['src'])} -- {e['rel']} --> {chunk}")
    if related:
        lines.append("  %% Entity relations")
    for e in related:
        weight = f" ({e['weight']:.2f})" if e.get("weight") is not None else ""
        lines.append(f"  {entity(e['src'])} -. {e['rel']}{weight} .-> {entity(e['dst'])}")
    return "\n".join(lines) + "\n"


def render_context(db, q=None, entity_names=None, limit=5):
    """Seed 001's ``context.md``: query entities, key subgraph, evidence paths, top documents."""
    from . import graph
    from .tools import call_tool

    entity_names = list(entity_names or [])
    if q and not entity_names:
        result = call_tool(db, "hybrid_query", {"q": q, "k": 10})
        entity_names = [e["name"] for e in result["entities"][:5]]
    sub = (
        graph.subgraph(db, entity_names=entity_names, max_hops=1, limit=30)
        if entity_names
        else {"nodes": [], "edges": []}
    )
    top = graph.topn(db, entity_names=entity_names, limit=limit)["items"]
    dates = sorted(item["updated_at"][:10] for item in top if item["updated_at"])
    time_range = f"{dates[0]} – {dates[-1]}" if dates else "unknown"
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES), keep_trailing_newline=True, trim_blocks=True
    )
    return environment.get_template("context.md.j2").render(
        query=q,
        entity_names=entity_names,
        doc_titles=[item["title"] or item["path"] for item in top],
        time_range=time_range,
        mermaid_graph=mermaid(sub).rstrip("\n"),
        edges=[e for e in sub["edges"] if e["type"] != "MENTIONS"],
        top_docs=top,
        limit=limit,
    )
