"""The llm plugin: the bundled embedding model and the ``llm graphrag`` commands."""

import llm


@llm.hookimpl
def register_embedding_models(register):
    from .embeddings import all_models

    from .minilm import MiniLMEmbeddingModel, available

    for model, aliases in all_models():
        register(model, aliases=aliases)
    if available():  # the transformer's weights are an optional install
        register(MiniLMEmbeddingModel())


@llm.hookimpl
def register_commands(cli):
    from .cli import graphrag

    cli.add_command(graphrag)
