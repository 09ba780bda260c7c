"""The built-in chunker: token budgets by kind of document, overlap and preludes."""

from llm_graphrag.chunking import chunk_document
from llm_graphrag.hookspecs import hookimpl


@hookimpl
def register_chunkers(register):
    register("default", chunk_document)
