"""datasette-graphrag's engine: a folder of documents as one SQLite knowledge graph.

The public API, imported lazily so that ``llm`` starts fast with the plugin installed::

    from llm_graphrag import open_database, ingest_docs, call_tool

    db = open_database("graphrag.db")
    ingest_docs(db, ["docs/"])
    call_tool(db, "hybrid_query", {"q": "How do dams form lakes?", "k": 5})

or, in a notebook, ``GraphRAG("graphrag.db").query("How do dams form lakes?")``.
"""

import importlib

from .compiled import prefer_changed_sources
from .hookspecs import hookimpl

prefer_changed_sources()

__all__ = [
    "GraphRAG",
    "RetrievalOptions",
    "TOOLS",
    "call_tool",
    "deep_research",
    "extract_and_link",
    "evaluate_retrieval",
    "hookimpl",
    "hybrid_query",
    "ingest_docs",
    "open_database",
]

_LAZY = {
    "GraphRAG": "api",
    "evaluate_retrieval": "api",
    "open_database": "db",
    "ingest_docs": "ingest",
    "extract_and_link": "extract",
    "hybrid_query": "retrieval",
    "RetrievalOptions": "retrieval",
    "call_tool": "tools",
    "deep_research": "research_run",
    "TOOLS": "tools",
}


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
