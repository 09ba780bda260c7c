"""The ``llm graphrag`` commands. Each one calls one engine function."""

import functools
import json
import sys

import click

from .db import ExtensionsUnavailable, open_database
from .embeddings import ModelUnavailable


def database_option(fn):
    return click.option(
        "-d",
        "--database",
        type=click.Path(dir_okay=False),
        default="graphrag.db",
        show_default=True,
        help="graphrag database file (created when missing)",
    )(fn)


def json_option(fn):
    return click.option("--json", "as_json", is_flag=True, help="Print the tool's JSON")(fn)


def friendly_errors(fn):
    """Turn domain errors into one-sentence CLI errors."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (ExtensionsUnavailable, ModelUnavailable, FileNotFoundError) as ex:
            raise click.ClickException(str(ex))

    return wrapper


def echo_json(data):
    click.echo(json.dumps(data, indent=2, default=str))


@click.group(name="graphrag")
def graphrag():
    """Build and query a GraphRAG knowledge base in one SQLite file.

    \b
    Example usage:
        llm graphrag ingest docs/ -d graphrag.db
        llm graphrag status -d graphrag.db
        datasette serve graphrag.db
    """


@graphrag.command()
@database_option
@click.option(
    "-m",
    "--model",
    help="Embedding model for a new database (default: the bundled 'graphrag' model)",
)
@json_option
@friendly_errors
def init(database, model, as_json):
    """Create the graphrag schema in a database (other commands do this on demand).

    \b
    Example usage:
        llm graphrag init -d graphrag.db
        llm graphrag init -d other.db -m model2vec/my-model
    """
    from .embeddings import get_embedder
    from .schema import ensure_schema, get_setting
    from .status import status
    from .db import connect
    import sqlite_utils

    db = sqlite_utils.Database(connect(database))
    if model and get_setting(db, "embedding_model") not in (None, model):
        raise click.ClickException(
            f"{database} already uses embedding model {get_setting(db, 'embedding_model')!r}; "
            "create a new database to use another model"
        )
    embedder = get_embedder(model)
    ensure_schema(db, model_id=model, dimensions=embedder.dimensions)
    info = status(db)
    if as_json:
        echo_json(info)
    else:
        click.echo(
            f"{database}: schema version {info['schema_version']}, "
            f"model {info['embedding_model']} ({info['dimensions']} dimensions)"
        )


@graphrag.command()
@click.argument("paths", nargs=-1, required=True)
@database_option
@click.option("--tag", "tags", multiple=True, help="Tag to add to every document")
@click.option("--force", is_flag=True, help="Re-ingest files even when unchanged")
@click.option("--prune", is_flag=True, help="Delete documents whose files are gone")
@click.option("--no-extract", is_flag=True, help="Skip entity and relation extraction")
@json_option
@friendly_errors
def ingest(paths, database, tags, force, prune, no_extract, as_json):
    """Ingest files, folders and globs of .md, .txt, .rst and .html documents.

    \b
    Example usage:
        llm graphrag ingest docs/ -d graphrag.db
        llm graphrag ingest 'notes/**/*.md' README.md -d graphrag.db --json
        llm graphrag ingest docs/ -d graphrag.db --prune
    """
    from .ingest import ingest_docs
    from .loaders import expand_paths

    db = open_database(database)
    show_bar = not as_json and sys.stderr.isatty()
    kwargs = dict(
        tags=list(tags), skip_if_seen=not force, prune=prune, extract=not no_extract
    )
    if show_bar:
        files, _ = expand_paths(list(paths))
        with click.progressbar(
            length=len(files), label="Ingesting", file=sys.stderr
        ) as bar:
            result = ingest_docs(
                db, list(paths), progress=lambda path: bar.update(1), **kwargs
            )
    else:
        result = ingest_docs(db, list(paths), **kwargs)
    data = result.to_dict()
    if as_json:
        echo_json(data)
        return
    click.echo(
        f"Ingested {data['ingested']} files ({data['chunks']} chunks), "
        f"skipped {data['skipped']} unchanged, "
        f"{data['duplicates_skipped']} near-duplicate paragraphs dropped"
        + (f", pruned {data['pruned']}" if prune else "")
    )
    if result.extraction:
        click.echo(
            "Extracted {mentions} mentions, {entities_new} new entities, "
            "{relations} relations".format(**result.extraction)
        )
    for error in data["errors"]:
        click.echo(f"Error: {error['path']}: {error['error']}", err=True)


@graphrag.command()
@database_option
@json_option
@friendly_errors
def status(database, as_json):
    """Counts per table, embedding model, schema version and last ingest.

    \b
    Example usage:
        llm graphrag status -d graphrag.db
        llm graphrag status -d graphrag.db --json
    """
    from .status import status as status_tool

    info = status_tool(open_database(database, create=False))
    if as_json:
        echo_json(info)
        return
    click.echo(f"Database: {database}")
    click.echo(f"Schema version: {info['schema_version']}")
    click.echo(f"Embedding model: {info['embedding_model']} ({info['dimensions']} dimensions)")
    for table, count in info["counts"].items():
        click.echo(f"  {table:<12} {count:>9,}")
    if info["last_ingest"]:
        click.echo(f"Last ingest: {info['last_ingest']['finished_at']}")


@graphrag.group()
def models():
    """Local model2vec embedding models registered with llm."""


@models.command(name="add")
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
@click.option("--id", "model_id", help="Model id (default: model2vec/<folder name>)")
@friendly_errors
def models_add(folder, model_id):
    """Register a local model2vec folder as an llm embedding model.

    \b
    Example usage:
        llm graphrag models add ./my-static-model
        llm embed -m model2vec/my-static-model -c "hello"
    """
    from .embeddings import add_model

    click.echo(add_model(folder, model_id))


@models.command(name="list")
def models_list():
    """List the model2vec models graphrag provides."""
    from .embeddings import all_models

    for model, aliases in all_models():
        suffix = f" (aliases: {', '.join(aliases)})" if aliases else ""
        click.echo(f"{model.model_id}: {model.path}{suffix}")
