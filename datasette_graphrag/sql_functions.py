"""SQL functions for ad hoc exploration of a graphrag database.

``graphrag_embed(text [, model])``  float32 blob for a vec0 ``match``
``graphrag_hybrid(q [, k, hops])``   hybrid_query JSON, use with ``json_each``
``graphrag_lookup(q [, type])``     entity_lookup JSON
``graphrag_explain(entity_id)``     explain_entity JSON
``graphrag_subgraph(name [, hops])`` subgraph JSON around a named entity
``graphrag_path(src, dst [, max_len])`` shortest path JSON between two entity names
``graphrag_mermaid(json)``          mermaid text for a subgraph, path or hybrid result
``graphrag_fts_query(text)``        an FTS5 query OR-ing the words of free text
"""

import json

import sqlite_utils

from llm_graphrag.embeddings import get_embedder, to_blob
from llm_graphrag.evidence import mermaid
from llm_graphrag.graph import fts_query
from llm_graphrag.tools import call_tool


def _model_for(conn):
    try:
        row = conn.execute(
            "select value from graphrag_settings where key = 'embedding_model'"
        ).fetchone()
    except Exception:
        row = None
    return json.loads(row[0]) if row else None


def register(conn):
    def database():
        return sqlite_utils.Database(conn, execute_plugins=False, recursive_triggers=False)

    def tool(name, **arguments):
        arguments = {k: v for k, v in arguments.items() if v is not None}
        return json.dumps(call_tool(database(), name, arguments))

    def graphrag_embed(text, model=None):
        if text is None:
            return None
        return to_blob(get_embedder(model or _model_for(conn)).encode([text])[0])

    def graphrag_hybrid(q, k=None, hops=None):
        return tool("hybrid_query", q=q, k=k, hops=hops)

    def graphrag_lookup(q, type=None):
        return tool("entity_lookup", q=q, type=type)

    def graphrag_explain(entity_id):
        return tool("explain_entity", entity_id=entity_id)

    def graphrag_subgraph(name, hops=None):
        return tool("subgraph", entity_names=[name], max_hops=hops)

    def graphrag_path(src, dst, max_len=None):
        return tool("path", source_entity=src, target_entity=dst, max_length=max_len)

    def graphrag_mermaid(value):
        return mermaid(json.loads(value))

    for name, fn, arities in (
        ("graphrag_fts_query", fts_query, (1,)),
        ("graphrag_embed", graphrag_embed, (1, 2)),
        ("graphrag_hybrid", graphrag_hybrid, (1, 2, 3)),
        ("graphrag_lookup", graphrag_lookup, (1, 2)),
        ("graphrag_explain", graphrag_explain, (1,)),
        ("graphrag_subgraph", graphrag_subgraph, (1, 2)),
        ("graphrag_path", graphrag_path, (2, 3)),
        ("graphrag_mermaid", graphrag_mermaid, (1,)),
    ):
        for arity in arities:
            conn.create_function(name, arity, fn)
