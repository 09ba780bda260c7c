"""Extension points for graphrag, in the style of llm and Datasette plugins.

A plugin is a module or package registered under the ``graphrag`` entry-point group
that implements some of these hooks with ``@llm_graphrag.hookimpl``. The toolkit's own
loaders, chunkers and extractors are registered through the same hooks.
"""

from pluggy import HookimplMarker, HookspecMarker

hookspec = HookspecMarker("graphrag")
hookimpl = HookimplMarker("graphrag")


@hookspec
def register_loaders(register):
    """Register document loaders.

    Call ``register(suffixes, loader)`` where ``suffixes`` is a list such as
    ``[".md", ".markdown"]`` and ``loader(path, data: bytes)`` returns a
    ``llm_graphrag.loaders.LoadedDocument`` or raises ``llm_graphrag.loaders.LoadError``.
    """


@hookspec
def register_chunkers(register):
    """Register chunkers.

    Call ``register(name, chunker)`` where ``chunker(document, settings)`` returns a
    list of ``llm_graphrag.chunking.Chunk``. The ``default`` chunker follows seed 004 §5.
    """


@hookspec
def register_mention_extractors(register):
    """Register mention extractors.

    Call ``register(name, extractor)`` where ``extractor(chunk, context)`` yields
    ``llm_graphrag.extraction.Mention`` objects for one chunk.
    """


@hookspec
def register_relation_extractors(register):
    """Register relation extractors.

    Call ``register(name, extractor)`` where ``extractor(chunk, mentions, context)``
    yields ``llm_graphrag.relations.RelationCandidate`` objects for one chunk.
    """
