"""SQL functions for ad hoc exploration of a graphrag database.

``graphrag_embed(text [, model])``  float32 blob for a vec0 ``match``
``graphrag_hybrid(q [, k, hops])``   hybrid_query JSON, use with ``json_each``
``graphrag_lookup(q [, type])``     entity_lookup JSON
``graphrag_explain(entity_id)``     explain_entity JSON
``graphrag_subgraph(name [, hops])`` subgraph JSON around a named entity
``graphrag_path(src, dst [, max_len])`` shortest path JSON between two entity names
``graphrag_mermaid(json)``          mermaid text for a subgraph, path or hybrid result
``graphrag_fts_query(text)``        the FTS5 query keyword search uses for free text
"""

import json

from llm_graphrag.db import wrap_connection
from llm_graphrag.embeddings import get_embedder, to_blob
from llm_graphrag.evidence import mermaid
from llm_graphrag.fulltext import fts_query
from llm_graphrag.retrieval import connection_embedder
from llm_graphrag.tools import ToolInputError, ToolNotFound, call_tool


def register(conn):
    def tool(name, **arguments):
        # SQLite reports any exception from a function as the same generic message, so
        # bad arguments come back as JSON naming the problem instead.
        arguments = {k: v for k, v in arguments.items() if v is not None}
        try:
            return json.dumps(call_tool(wrap_connection(conn), name, arguments))
        except (ToolInputError, ToolNotFound) as ex:
            return json.dumps({"error": str(ex)})

    def graphrag_embed(text, model=None):
        if text is None:
            return None
        embedder = get_embedder(model) if model else connection_embedder(conn)
        return to_blob(embedder.encode([text])[0])

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
