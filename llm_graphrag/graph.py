"""Graph tools over entities and relations: lookup, explain, subgraph, path and top-N.

Traversal goes through the ``bfsvtab`` extension over the ``graph_edges`` view.
"""

import datetime
import difflib
import json
import math

from .fulltext import fts_match, query_words


def lookup_norms(text):
    """The blocking keys a name can have in ``entities.norm``: the linker's ``normalize``
    for concepts (plurals singular) and for code-like types (kept as written)."""
    from .extraction import normalize

    return list(dict.fromkeys(key for key in (normalize(text), normalize(text, "code")) if key))


def relation_kind(rel):
    """``cooccurrence`` for a ``related_to`` edge (two entities named in one sentence, kept
    when significant), ``stated`` for a ``stated`` one (a clause joins the two with a verb
    phrase of its own, ``relations.stated_relations``), ``typed`` for any other relation:
    every output tells them apart."""
    if rel == "related_to":
        return "cooccurrence"
    return "stated" if rel == "stated" else "typed"


def traverse(db, root, max_depth, *, direction="both", rels=None, target=None):
    """Rows ``(id, parent, distance, path, weight)`` reachable from ``root``.

    ``path`` is the JSON array of node ids from the root.

    Stops at ``max_depth`` hops, or as soon as ``target`` is reached when given.
    """
    sql = [
        "select id, parent, distance, path, weight from bfsvtab",
        "where tablename = 'graph_edges' and fromcolumn = 'src' and tocolumn = 'dst'",
        "and root = :root and max_depth = :max_depth and direction = :direction",
        "and weightcolumn = 'weight'",
    ]
    params = {"root": root, "max_depth": max_depth, "direction": direction}
    if rels:
        sql.append("and relcolumn = 'rel' and rels = :rels")
        params["rels"] = ",".join(rels)
    if target is not None:
        sql.append("and id = :target")
        params["target"] = target
    return db.execute(" ".join(sql), params).fetchall()


def _entity(row, score=None):
    entity = {
        "id": row["id"],
        "name": row["name"],
        "type": row["type"],
        "aliases": json.loads(row["aliases"] or "[]"),
        "popularity": row["popularity"],
    }
    if score is not None:
        entity["score"] = round(score, 4)
    return entity


def _rows(db, sql, params=()):
    cursor = db.execute(sql, params)
    columns = [d[0] for d in cursor.description]
    return [dict(zip(columns, row)) for row in cursor.fetchall()]


def entity_lookup(db, q, type=None, limit=10):
    """Entities whose name or alias matches ``q``, best first, scored in [0, 1]."""
    keys = lookup_norms(q)
    candidates = {}
    where_type = " and type = :type" if type else ""
    for key in keys:
        for row in _rows(
            db, f"select * from entities where norm = :norm{where_type}", {"norm": key, "type": type}
        ):
            candidates[row["id"]] = row
    fts = fts_match(query_words(q), prefix=True)
    if fts:
        for row in _rows(
            db,
            "select entities.* from entities_fts join entities on entities.rowid = entities_fts.rowid "
            f"where entities_fts match :q{where_type} order by entities_fts.rank limit 200",
            {"q": fts, "type": type},
        ):
            candidates[row["id"]] = row
    max_popularity = max([row["popularity"] for row in candidates.values()] + [1])
    scored = []
    for row in candidates.values():
        names = [row["name"]] + json.loads(row["aliases"] or "[]")
        similarity = max(_similarity(keys, lookup_norms(name)) for name in names)
        popularity = math.log1p(row["popularity"]) / math.log1p(max_popularity)
        scored.append((0.9 * similarity + 0.1 * popularity, row))
    scored.sort(key=lambda pair: (-pair[0], -pair[1]["popularity"], pair[1]["id"]))
    return {"entities": [_entity(row, score) for score, row in scored[:limit]]}


def _similarity(keys, other_keys):
    """1.0 when two names share a blocking key, else the best string ratio between keys."""
    if set(keys) & set(other_keys):
        return 1.0
    return max(
        [difflib.SequenceMatcher(None, a, b).ratio() for a in keys for b in other_keys] + [0.0]
    )


def _resolve(db, name):
    found = entity_lookup(db, name, limit=1)["entities"]
    if not found:
        raise LookupError(f"No entity matches {name!r}: try entity_lookup to find its name")
    return found[0]


def _relation_rows(db, entity_ids):
    if not entity_ids:
        return []
    marks = ",".join("?" for _ in entity_ids)
    return _rows(
        db,
        f"""select r.id, r.src_id, r.dst_id, r.rel, r.weight, r.confidence, r.fact, r.chunk_id,
                   s.name as src_name, d.name as dst_name
            from relations r join entities s on s.id = r.src_id join entities d on d.id = r.dst_id
            where r.src_id in ({marks}) and r.dst_id in ({marks})""",
        list(entity_ids) * 2,
    )


def explain_entity(db, entity_id, hops=1):
    """Definition, aliases, top relations within ``hops`` and key sources of an entity."""
    rows = _rows(db, "select * from entities where id = ?", [entity_id])
    if not rows:
        raise LookupError(f"No entity with id {entity_id}: use entity_lookup to find ids")
    row = rows[0]
    distances = {entity_id: 0}
    if hops:
        for node, _, distance, _, _ in traverse(db, entity_id, hops):
            distances[node] = distance
    relations = [
        dict(relation, distance=max(distances[relation["src_id"]], distances[relation["dst_id"]]))
        for relation in _relation_rows(db, list(distances))
        if entity_id in (relation["src_id"], relation["dst_id"]) or hops > 1
    ]
    relations.sort(key=lambda r: (r["distance"], -r["confidence"] * r["weight"], r["id"]))
    sources = _rows(
        db,
        """select m.doc_id, d.path, m.chunk_id, coalesce(m.snippet, substr(c.content, 1, 200)) as snippet,
                  round(max(coalesce(m.link_score, m.score, 1.0)), 4) as confidence,
                  count(*) as mentions
           from mentions m join docs d on d.id = m.doc_id join chunks c on c.id = m.chunk_id
           where m.entity_id = ? group by m.chunk_id
           order by confidence desc, mentions desc, m.chunk_id limit 10""",
        [entity_id],
    )
    definition = row["description"] or (sources[0]["snippet"] if sources else None)
    return {
        "entity": _entity(row, 1.0),
        "definition": definition,
        "aliases": json.loads(row["aliases"] or "[]"),
        "relations": [
            {
                "src": r["src_id"],
                "dst": r["dst_id"],
                "rel": r["rel"],
                "kind": relation_kind(r["rel"]),
                "src_name": r["src_name"],
                "dst_name": r["dst_name"],
                "weight": r["weight"],
                "confidence": r["confidence"],
                "fact": r["fact"],
                "distance": r["distance"],
            }
            for r in relations[:25]
        ],
        "sources": sources,
    }


class _NodeIds:
    """Seed 001 node ids (``Doc:<id>``, ``Entity:<name>``), unique even for shared names."""

    def __init__(self, db, entity_ids):
        self.names = {}
        if entity_ids:
            marks = ",".join("?" for _ in entity_ids)
            rows = _rows(db, f"select id, name from entities where id in ({marks})", list(entity_ids))
            counts = {}
            for r in rows:
                counts[r["name"]] = counts.get(r["name"], 0) + 1
            for r in rows:
                self.names[r["id"]] = (
                    f"Entity:{r['name']}" if counts[r["name"]] == 1 else f"Entity:{r['name']}#{r['id']}"
                )

    def entity(self, entity_id):
        return self.names[entity_id]


def _iso(mtime_ms):
    if mtime_ms is None:
        return None
    return datetime.datetime.fromtimestamp(mtime_ms / 1000, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )


def _doc_node(doc):
    return {
        "id": f"Doc:{doc['id']}",
        "label": "Doc",
        "title": doc["title"],
        "path": doc["path"],
        "updated_at": _iso(doc["mtime_ms"]),
    }


def subgraph(db, doc_id=None, entity_names=None, max_hops=2, limit=30):
    """Seed 001's subgraph: a document and/or entities and what lies within ``max_hops``."""
    max_hops = min(max_hops, 2)
    docs = []
    if doc_id is not None:
        docs = _rows(
            db,
            "select id, title, path, mtime_ms from docs where id = ? or path = ? or path like ?",
            [doc_id if isinstance(doc_id, int) else -1, str(doc_id), f"%/{doc_id}"],
        )[:1]
        if not docs:
            raise LookupError(f"No document {doc_id!r}: give a docs.id or a path")
    seeds = {}
    mention_edges = []
    if docs:
        for r in _rows(
            db,
            "select entity_id, count(*) as n from mentions where doc_id = ? and entity_id is not null "
            "group by entity_id order by n desc, entity_id limit ?",
            [docs[0]["id"], limit],
        ):
            seeds[r["entity_id"]] = 1
            mention_edges.append(r)
    for name in entity_names or []:
        seeds[_resolve(db, name)["id"]] = 0
    distances = dict(seeds)
    remaining = max_hops - (1 if docs else 0)
    if remaining > 0:
        for seed, base in list(seeds.items()):
            for node, _, distance, _, _ in traverse(db, seed, remaining):
                if len(distances) >= limit and node not in distances:
                    continue
                distances[node] = min(distances.get(node, 99), base + distance)
    if entity_names and docs:
        wanted = {_resolve(db, name)["id"] for name in entity_names}
        distances = {k: v for k, v in distances.items() if k in wanted or v <= max_hops}
    entity_ids = sorted(distances, key=lambda k: (distances[k], k))[:limit]
    ids = _NodeIds(db, entity_ids)
    entity_rows = {
        r["id"]: r
        for r in _rows(
            db,
            f"select id, name, type, popularity from entities where id in ({','.join('?' for _ in entity_ids)})",
            entity_ids,
        )
    } if entity_ids else {}
    max_popularity = max([r["popularity"] for r in entity_rows.values()] + [1])
    nodes = [_doc_node(doc) for doc in docs]
    for entity_id in entity_ids:
        r = entity_rows[entity_id]
        nodes.append(
            {
                "id": ids.entity(entity_id),
                "label": "Entity",
                "type": r["type"],
                "entity_id": entity_id,
                "salience": round(math.log1p(r["popularity"]) / math.log1p(max_popularity), 4),
            }
        )
    edges = []
    kept = set(entity_ids)
    for r in mention_edges:
        if r["entity_id"] in kept:
            edges.append(
                {"source": f"Doc:{docs[0]['id']}", "target": ids.entity(r["entity_id"]), "type": "MENTIONS", "weight": r["n"]}
            )
    for r in _relation_rows(db, entity_ids):
        edges.append(
            {
                "source": ids.entity(r["src_id"]),
                "target": ids.entity(r["dst_id"]),
                "type": r["rel"],
                "kind": relation_kind(r["rel"]),
                "weight": round(r["weight"] * r["confidence"], 4),
            }
        )
    return {
        "nodes": nodes,
        "edges": edges[: max(limit, len(mention_edges))],
        "constraints": {"max_hops": max_hops, "limit": limit},
        "query": {"doc_id": doc_id, "entity_names": entity_names},
    }


def path(db, source_entity, target_entity, max_length=4):
    """Seed 001's shortest path between two named entities, in either edge direction."""
    source = _resolve(db, source_entity)
    target = _resolve(db, target_entity)
    meta = {"length": None, "max_length": max_length, "source_id": source["id"], "target_id": target["id"]}
    if source["id"] == target["id"]:
        node_ids = [source["id"]]
    else:
        rows = traverse(db, source["id"], max_length, target=target["id"])
        if not rows:
            return {"path": [], "edges": [], "meta": meta}
        node_ids = json.loads(rows[0][3])
    ids = _NodeIds(db, node_ids)
    entities = {r["id"]: r for r in _rows(db, f"select id, type from entities where id in ({','.join('?' for _ in node_ids)})", node_ids)}
    relations = _relation_rows(db, node_ids)
    edges = []
    for a, b in zip(node_ids, node_ids[1:]):
        options = [r for r in relations if {r["src_id"], r["dst_id"]} == {a, b}]
        best = max(options, key=lambda r: (r["weight"] * r["confidence"], -r["id"]))
        edges.append(
            {
                "source": ids.entity(best["src_id"]),
                "target": ids.entity(best["dst_id"]),
                "type": best["rel"],
                "kind": relation_kind(best["rel"]),
                "weight": round(best["weight"] * best["confidence"], 4),
                "fact": best["fact"],
            }
        )
    meta["length"] = len(node_ids) - 1
    return {
        "path": [
            {"id": ids.entity(n), "label": "Entity", "type": entities[n]["type"], "entity_id": n}
            for n in node_ids
        ],
        "edges": edges,
        "meta": meta,
    }


RECENCY_HALF_LIFE_DAYS = 180


def topn(db, entity_names=None, category=None, language=None, limit=5):
    """Seed 001's top-N documents: entity salience and relation weight, recency, category."""
    names = {}  # entity id -> the requested name it stands for
    for name in entity_names or []:
        # Every entity spelled like the name counts, whatever type extraction gave it
        keys = lookup_norms(name)
        same = [
            row[0]
            for row in db.execute(
                f"select id from entities where norm in ({','.join('?' for _ in keys)})", keys
            )
        ] if keys else []
        if not same:
            same = [e["id"] for e in entity_lookup(db, name, limit=1)["entities"]]
        names.update({entity_id: name for entity_id in same})
    query = {"entity_names": entity_names, "category": category, "language": language}
    docs = _rows(db, "select id, title, path, mtime_ms, meta from docs")
    if not docs:
        return {"items": [], "query": query}
    newest = max(d["mtime_ms"] or 0 for d in docs)
    shares = {}  # doc id -> requested name -> share of the document's mentions
    relation_weight = {}
    if names:
        marks = ",".join("?" for _ in names)
        for r in _rows(
            db,
            f"""select doc_id, entity_id,
                       count(*) * 1.0 / (select count(*) from mentions m2 where m2.doc_id = mentions.doc_id) as share
                from mentions where entity_id in ({marks}) group by doc_id, entity_id""",
            list(names),
        ):
            per_doc = shares.setdefault(r["doc_id"], {})
            name = names[r["entity_id"]]
            per_doc[name] = per_doc.get(name, 0) + r["share"]
        for r in _rows(
            db,
            f"""select e.doc_id, sum(r.weight * r.confidence) as w from relation_evidence e
                join relations r on r.id = e.relation_id
                where r.src_id in ({marks}) or r.dst_id in ({marks}) group by e.doc_id""",
            list(names) * 2,
        ):
            relation_weight[r["doc_id"]] = r["w"]
    wanted = list(dict.fromkeys(entity_names or []))
    items = []
    for doc in docs:
        meta = json.loads(doc["meta"] or "{}")
        if language and meta.get("lang") != language:
            continue
        if wanted and doc["id"] not in shares:
            continue
        reasons = []
        score = 0.0
        for name in wanted:
            share = shares.get(doc["id"], {}).get(name)
            if share is None:
                continue
            title_keys = lookup_norms(doc["title"] or "")
            if any(key in title_key for key in lookup_norms(name) for title_key in title_keys):
                salience = 1.0
            else:
                salience = min(1.0, 0.3 + share * 3)
            score += 0.5 * salience / len(wanted)
            reasons.append(f"contains entity {name} (salience {salience:.2f})")
        if doc["id"] in relation_weight:
            w = relation_weight[doc["id"]]
            score += 0.2 * (1 - math.exp(-w))
            reasons.append(f"relation weight {w:.2f}")
        # Halves for every RECENCY_HALF_LIFE_DAYS the document is older than the newest one,
        # so files written seconds apart (a fresh checkout) rank as equally recent.
        age_days = (newest - (doc["mtime_ms"] or 0)) / 86_400_000
        recency = 0.5 ** (age_days / RECENCY_HALF_LIFE_DAYS)
        score += 0.2 * recency
        updated = _iso(doc["mtime_ms"])
        reasons.append(f"updated {updated[:10]}" if updated else "no update time")
        if category:
            places = [t.lower() for t in meta.get("tags", []) + meta.get("breadcrumbs", [])]
            if category.lower() in places:
                score += 0.2  # asked for explicitly, so worth as much as recency
                reasons.append(f"category match {category}")
        items.append(
            {
                "doc_id": doc["id"],
                "title": doc["title"],
                "path": doc["path"],
                "updated_at": updated,
                "score": round(score, 4),
                "reasons": reasons,
            }
        )
    items.sort(key=lambda item: (-item["score"], item["doc_id"]))
    return {"items": items[:limit], "query": query}
