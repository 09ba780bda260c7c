"""``GraphRAG``: a graphrag database from Python, with results that show in Jupyter.

Each method calls the engine function behind the matching ``llm graphrag`` command,
Datasette endpoint and MCP tool, and returns its JSON as a dict that renders as a table
or a picture (see ``results.py``)::

    from llm_graphrag import GraphRAG

    g = GraphRAG("graphrag.db")
    g.ingest("sample-corpus")
    g.query("How do dams create reservoirs?", k=5)
"""

import json
import pathlib
import tempfile

import sqlite_utils

from .db import open_database
from .results import (
    EntityList,
    EvalReport,
    Explanation,
    IngestResult,
    GraphPath,
    QueryResult,
    ResearchResult,
    Status,
    Subgraph,
    Table,
    TopDocuments,
)
from .tools import TOOLS, ToolNotFound, call_tool


class ToolUnavailable(LookupError):
    """A method needs a tool this installation does not have."""


class GraphRAG:
    """A graphrag database: ``GraphRAG("graphrag.db")`` opens it, creating it when missing
    (``create=False`` makes a missing file an error). A ``sqlite_utils.Database`` that is
    already open works too."""

    def __init__(self, database="graphrag.db", create=True):
        if isinstance(database, sqlite_utils.Database):
            self.db = database
            self.file = None
        else:
            self.file = pathlib.Path(database)
            self.db = open_database(self.file, create=create)

    def __repr__(self):
        return f"<GraphRAG {self.file if self.file is not None else self.db}>"

    def close(self):
        self.db.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _call(self, name, **arguments):
        return call_tool(self.db, name, {k: v for k, v in arguments.items() if v is not None})

    def ingest(self, *paths, tags=(), force=False, prune=False, extract=True, workers=None):
        """Ingest files, folders and globs (``llm graphrag ingest``). Unchanged files are
        skipped unless ``force``; ``prune`` deletes documents whose files are gone."""
        from .ingest import ingest_docs

        if not paths:
            raise ValueError("ingest needs at least one file, folder or glob, e.g. g.ingest('docs/')")
        result = ingest_docs(
            self.db, [str(p) for p in paths], tags=list(tags), skip_if_seen=not force,
            prune=prune, extract=extract, workers=workers,
        )
        return IngestResult(result.to_dict())

    def query(self, q, k=10, hops=2, mode="graph", rels=None):
        """Hybrid retrieval (``llm graphrag query``): ranked chunks with explanations.
        ``mode`` is bm25, vector, hybrid or graph; ``rels`` limits the relations traversed."""
        if isinstance(rels, str):
            rels = [r.strip() for r in rels.split(",") if r.strip()]
        return QueryResult(self._call("hybrid_query", q=q, k=k, hops=hops, mode=mode, rels=rels))

    def lookup(self, q, type=None, limit=10):
        """Entities whose name or alias matches ``q`` (``llm graphrag lookup``)."""
        return EntityList(self._call("entity_lookup", q=q, type=type, limit=limit))

    def explain(self, entity, hops=1):
        """An entity by id or name: definition, aliases, relations within ``hops``, sources
        (``llm graphrag explain``)."""
        return Explanation(self._call("explain_entity", entity_id=self._entity_id(entity), hops=hops))

    def _entity_id(self, entity):
        if isinstance(entity, int) or (isinstance(entity, str) and entity.isdigit()):
            return int(entity)
        found = self._call("entity_lookup", q=entity, limit=1)["entities"]
        if not found:
            raise ToolNotFound(f"No entity matches {entity!r}: try lookup() to find its name")
        return found[0]["id"]

    def subgraph(self, *entities, doc=None, hops=2, limit=30):
        """The subgraph (at most 2 hops) around entities named and/or a document (id or
        path), drawn as a picture (``llm graphrag subgraph``)."""
        if doc is None and not entities:
            raise ValueError("subgraph needs an entity name or doc=, e.g. g.subgraph('tidepool')")
        return Subgraph(
            self._call(
                "subgraph", doc_id=doc, entity_names=list(entities) or None,
                max_hops=hops, limit=limit,
            )
        )

    def path(self, source, target, max_length=4):
        """The shortest path between two named entities (``llm graphrag path``)."""
        return GraphPath(
            self._call("path", source_entity=source, target_entity=target, max_length=max_length)
        )

    def topn(self, *entities, category=None, language=None, limit=5):
        """Top documents for entities, with reasons (``llm graphrag topn``)."""
        return TopDocuments(
            self._call(
                "topn", entity_names=list(entities) or None, category=category,
                language=language, limit=limit,
            )
        )

    def status(self):
        """Counts per table, the embedding model, schema version and last ingest."""
        return Status(self._call("status"))

    def research(self, question, **arguments):
        """Deep research on ``question`` through the ``deep_research`` tool; other
        keyword arguments are that tool's inputs."""
        tool = TOOLS.get("deep_research")
        if tool is None:
            raise ToolUnavailable(
                "research() needs the deep_research tool, which this version of "
                "datasette-graphrag does not have: upgrade datasette-graphrag"
            )
        field = tool.input_schema["required"][0]
        return ResearchResult(call_tool(self.db, "deep_research", {field: question, **arguments}))

    def sql(self, sql, params=None):
        """Rows of a SQL query on the database, as a table."""
        cursor = self.db.execute(sql, params or [])
        columns = [d[0] for d in cursor.description or []]
        return Table(columns, cursor.fetchall())


def evaluate_retrieval(path, modes=None, ks=None, questions=None, database=None):
    """Recall of each retrieval mode on an evaluation file (``llm graphrag eval``).

    ``questions``: evaluate only the first N questions (over the whole corpus or folder).
    ``database``: build the evaluation database there and keep it, so that running again
    skips ingestion. Returns an ``EvalReport``, whose ``plot()`` draws R@k per mode.
    """
    from .evaluate import DEFAULT_KS, EvalFileError, load_eval_file, run_eval
    from .retrieval import MODES

    modes = modes or MODES
    ks = ks or DEFAULT_KS
    if questions is None:
        return EvalReport(run_eval(path, modes=modes, ks=ks, database=database))
    if questions < 1:
        raise ValueError("questions must be at least 1, or None for all of them")
    try:
        data = json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as ex:
        raise EvalFileError(f"Cannot read evaluation file {path}: {ex}") from ex
    if not isinstance(data, dict) or not isinstance(data.get("queries"), list):
        load_eval_file(path)  # raises the error naming what is missing
    with tempfile.TemporaryDirectory(prefix="graphrag-eval-") as tmp:
        subset = pathlib.Path(tmp) / pathlib.Path(path).name
        subset.write_text(json.dumps(dict(data, queries=data["queries"][:questions])))
        report = run_eval(subset, modes=modes, ks=ks, database=database)
    report["file"] = str(path)
    return EvalReport(report)
