"""Retrieval evaluation: recall of gold documents per retrieval mode, ranking quality, latency.

An evaluation file is JSON in one of two formats:

- a corpus: ``{"corpus": [text, ...], "queries": [{"question": str, "gold": [index, ...]},
  ...]}`` (``eval/qasc-dev.json``); every text is ingested as one document into a fresh
  database (or the one given, kept and reused).
- a folder: ``{"folder": path, "include": [glob, ...], "exclude": [glob, ...],
  "queries": [{"question": str, "gold_paths": [relative path, ...], "split": "dev" |
  "heldout"}, ...]}`` (``eval/python-docs-qa.json``); the files the globs pick out of the
  folder are ingested once into a database cached under ``~/.cache/graphrag-eval``, keyed
  by the folder and its file list (or into the database given).

``run_eval`` asks every question in each mode for the top ``max(ks + (10,))`` chunks and
ranks the documents they come from, each once, in order of first appearance. Per mode it
reports ``R@k any`` (at least one gold document in the first k) and ``R@k both`` (all of
them), ``hit@1`` (the first document is gold), ``MRR@10`` (mean of 1/rank of the first
gold document within the first 10, else 0) and ``P@5`` (the share of the first 5 results,
chunks, that come from a gold document, or of fewer when there are fewer), with median
and p95 latency. Results can be stored as tables in any SQLite database.
"""

from __future__ import annotations

import datetime
import glob
import hashlib
import json
import os
import pathlib
import tempfile
import time
from dataclasses import replace

import numpy as np

from .retrieval import MODES, RetrievalOptions, hybrid_query

DEFAULT_KS = (2, 5, 10)
SPLITS = ("dev", "heldout", "all", "dev-even", "dev-odd")
# dev-even / dev-odd: the dev questions at even / odd positions (from 0) of the file, two
# halves to fit weights on one and check them on the other
MRR_DEPTH = 10
PRECISION_DEPTH = 5


class EvalFileError(ValueError):
    """The evaluation file is not in the expected format."""


def load_eval_file(path):
    """Read and check an evaluation file; returns ``(corpus, queries)``."""
    try:
        data = json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as ex:
        raise EvalFileError(f"Cannot read evaluation file {path}: {ex}") from ex
    corpus = data.get("corpus") if isinstance(data, dict) else None
    queries = data.get("queries") if isinstance(data, dict) else None
    if not isinstance(corpus, list) or not isinstance(queries, list):
        raise EvalFileError(f"{path}: expected an object with 'corpus' and 'queries' lists")
    for i, query in enumerate(queries):
        gold = query.get("gold") if isinstance(query, dict) else None
        if not isinstance(query, dict) or not isinstance(query.get("question"), str) or not gold:
            raise EvalFileError(f"{path}: query {i} needs a 'question' and a 'gold' list")
        if any(not isinstance(g, int) or not 0 <= g < len(corpus) for g in gold):
            raise EvalFileError(f"{path}: query {i} has a gold index outside the corpus")
    return corpus, queries


def load_folder_file(path, data=None):
    """Read and check a folder evaluation file; returns ``(folder, files, queries)``.

    ``files`` are the paths, relative to ``folder``, that ``include`` picks out (every
    supported file under it when ``include`` is missing) less those ``exclude`` picks.
    """
    from .loaders import expand_paths

    if data is None:
        try:
            data = json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as ex:
            raise EvalFileError(f"Cannot read evaluation file {path}: {ex}") from ex
    folder, queries = data.get("folder"), data.get("queries")
    if not isinstance(folder, str) or not isinstance(queries, list):
        raise EvalFileError(f"{path}: expected an object with a 'folder' path and a 'queries' list")
    folder = pathlib.Path(os.path.abspath(os.path.expanduser(folder)))
    if not folder.is_dir():
        raise EvalFileError(
            f"{path}: folder {folder} does not exist: install what ships it (for the files in "
            "eval/: apt-get install python3.11-doc, or python-django-doc)"
        )
    patterns = {}
    for key in ("include", "exclude"):
        value = data.get(key, ["**/*"] if key == "include" else [])
        if not isinstance(value, list) or any(not isinstance(v, str) for v in value):
            raise EvalFileError(f"{path}: '{key}' must be a list of glob patterns relative to the folder")
        patterns[key] = value

    def matching(globs):
        found = set()
        for pattern in globs:
            for match in glob.glob(pattern, root_dir=folder, recursive=True):
                if (folder / match).is_file():
                    found.add(pathlib.PurePath(match).as_posix())
        return found

    picked = sorted(matching(patterns["include"]) - matching(patterns["exclude"]))
    supported, _ = expand_paths([folder / name for name in picked])
    files = [p.relative_to(folder).as_posix() for p in supported]
    if not files:
        raise EvalFileError(f"{path}: no supported files in {folder} match 'include'")
    known = set(files)
    for i, query in enumerate(queries):
        gold = query.get("gold_paths") if isinstance(query, dict) else None
        if not isinstance(query, dict) or not isinstance(query.get("question"), str) or not gold:
            raise EvalFileError(f"{path}: query {i} needs a 'question' and a 'gold_paths' list")
        missing = [g for g in gold if g not in known]
        if missing:
            raise EvalFileError(
                f"{path}: query {i} has gold path {missing[0]!r}, which is not among the "
                f"files picked from {folder}: fix the path or the 'include' globs"
            )
        if query.get("split", "dev") not in SPLITS[:2]:
            raise EvalFileError(f"{path}: query {i} has split {query['split']!r}: use 'dev' or 'heldout'")
    return folder, files, queries


def cache_path(folder, files):
    """Where the database of ``files`` under ``folder`` is cached: one per folder and file list."""
    key = hashlib.sha256("\n".join([str(folder)] + list(files)).encode()).hexdigest()[:12]
    base = pathlib.Path(os.environ.get("XDG_CACHE_HOME") or "~/.cache").expanduser()
    slug = "-".join(part for part in pathlib.Path(folder).parts[-2:] if part != "/")
    return base / "graphrag-eval" / f"{slug}-{key}.db"


def build_folder_database(folder, files, database, progress=None):
    """Ingest ``files`` (relative to ``folder``) into ``database``, skipping unchanged ones.

    Returns the database and a mapping from document id to relative path.
    """
    from .db import open_database
    from .ingest import ingest_docs

    pathlib.Path(database).parent.mkdir(parents=True, exist_ok=True)
    db = open_database(database)
    paths = [folder / name for name in files]
    done = [0]

    def step(_path):
        done[0] += 1
        if progress:
            progress("ingest", done[0], len(paths))

    result = ingest_docs(db, paths, progress=step, root=folder)
    if result.errors:
        raise EvalFileError(f"Ingest failed: {result.errors[0]['path']}: {result.errors[0]['error']}")
    relative = {str(folder / name): name for name in files}
    doc_paths = {}
    for doc_id, path in db.execute("select id, path from docs"):
        if path in relative:
            doc_paths[doc_id] = relative[path]
    return db, doc_paths


def build_database(corpus, database, progress=None):
    """Ingest each text of ``corpus`` as one ``.txt`` document into ``database``.

    The texts are written to a folder beside the database (``<database>.corpus``), so
    building again into the same database skips what is unchanged. Returns the database
    and a mapping from document id to corpus index.
    """
    from .db import open_database
    from .ingest import ingest_docs

    folder = pathlib.Path(str(database) + ".corpus")
    folder.mkdir(exist_ok=True)
    width = max(5, len(str(len(corpus))))
    for index, text in enumerate(corpus):
        path = folder / f"{index:0{width}d}.txt"
        content = text.rstrip("\n") + "\n"
        if not path.exists() or path.read_text(encoding="utf-8") != content:
            path.write_text(content, encoding="utf-8")
    db = open_database(database)
    total = len(corpus)
    done = [0]

    def step(_path):
        done[0] += 1
        if progress:
            progress("ingest", done[0], total)

    result = ingest_docs(db, [str(folder)], progress=step)
    if result.errors:
        raise EvalFileError(f"Ingest failed: {result.errors[0]['path']}: {result.errors[0]['error']}")
    doc_index = {}
    for doc_id, path in db.execute("select id, path from docs"):
        stem = pathlib.Path(path).stem
        if stem.isdigit():
            doc_index[doc_id] = int(stem)
    return db, doc_index


def recall_at(ranked, gold, k):
    """``(any, all)``: does the top ``k`` of ``ranked`` hold one / every gold index?"""
    top = set(ranked[:k])
    hits = sum(1 for g in set(gold) if g in top)
    return hits >= 1, hits == len(set(gold))


def ranking_scores(ranked, gold, results=None):
    """``(hit@1, MRR@10, P@5)`` of one ranking of distinct documents against ``gold``.

    hit@1: 1.0 when the first document is gold. MRR@10: 1/rank of the first gold document
    within the first 10, else 0. P@5: the share of the first 5 ``results`` (the document
    of each returned chunk, repeats kept; ``ranked`` when not given) that are gold, over
    how many there are among the first 5 (0 when there are none).
    """
    gold = set(gold)
    hit = 1.0 if ranked and ranked[0] in gold else 0.0
    reciprocal = next(
        (1 / rank for rank, doc in enumerate(ranked[:MRR_DEPTH], 1) if doc in gold), 0.0
    )
    top = (ranked if results is None else results)[:PRECISION_DEPTH]
    precision = sum(1 for doc in top if doc in gold) / len(top) if top else 0.0
    return hit, reciprocal, precision


def in_split(number, query, split):
    """Whether the ``number``-th question of a file (from 0) is asked in ``split``."""
    own = query.get("split", "dev")
    if split == "all":
        return True
    if split in ("dev-even", "dev-odd"):
        return own == "dev" and number % 2 == (split == "dev-odd")
    return own == split


def run_eval(
    path,
    modes=MODES,
    ks=DEFAULT_KS,
    store_db=None,
    progress=None,
    options=None,
    database=None,
    split="all",
):
    """Evaluate retrieval on the file at ``path``; returns the results as a dict.

    ``modes``: retrieval modes to compare (``bm25``, ``vector``, ``hybrid``, ``graph``).
    ``options``: a ``RetrievalOptions`` used for every mode (its ``mode`` and ``k`` are
    set per run). ``database``: build into this file instead of a temporary one (a corpus
    file) or the cache (a folder file); kept, and reused when run again. ``split``: ask
    only the questions marked ``dev`` or ``heldout`` (a question without one is ``dev``),
    the dev questions at even or odd positions (``dev-even``, ``dev-odd``), or ``all``. ``store_db``: a ``sqlite_utils.Database`` or path that receives the run in
    tables ``eval_runs``, ``eval_results``, ``eval_rankings`` and ``eval_queries``.
    ``progress(stage, done, total)`` is called as documents are ingested and questions asked.
    """
    if split not in SPLITS:
        raise ValueError(f"Unknown split {split!r}: choose from {', '.join(SPLITS)}")
    try:
        data = json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as ex:
        raise EvalFileError(f"Cannot read evaluation file {path}: {ex}") from ex
    folder = None
    if isinstance(data, dict) and "folder" in data:
        folder, files, queries = load_folder_file(path, data)
        size = len(files)
    else:
        corpus, queries = load_eval_file(path)
        size = len(corpus)
    numbered = [
        (number, query) for number, query in enumerate(queries) if in_split(number, query, split)
    ]
    if not numbered:
        raise EvalFileError(f"{path}: no questions in split {split!r}: use --split all")
    for mode in modes:
        if mode not in MODES:
            raise ValueError(f"Unknown mode {mode!r}: choose from {', '.join(MODES)}")
    ks = tuple(sorted(set(ks)))
    depth = max(ks + (MRR_DEPTH,))
    options = options or RetrievalOptions()
    started = _now()
    with tempfile.TemporaryDirectory(prefix="graphrag-eval-") as tmp:
        began = time.perf_counter()
        if folder is not None:
            target = database or cache_path(folder, files)
            db, doc_keys = build_folder_database(folder, files, target, progress=progress)
        else:
            target = database or pathlib.Path(tmp) / "eval.db"
            db, doc_keys = build_database(corpus, target, progress=progress)
        ingest_seconds = time.perf_counter() - began
        counts = {
            table: db.execute(f"select count(*) from {table}").fetchone()[0]
            for table in ("docs", "chunks", "entities", "mentions", "relations")
        }
        results = {}
        per_query = []
        for mode in modes:
            run_options = replace(options, mode=mode, k=depth)
            hits = {k: [0, 0] for k in ks}
            scores = [0.0, 0.0, 0.0]
            latencies = []
            for done, (number, query) in enumerate(numbered, 1):
                gold = query["gold_paths"] if folder is not None else query["gold"]
                began = time.perf_counter()
                found = hybrid_query(db, query["question"], run_options)
                latencies.append((time.perf_counter() - began) * 1000)
                ranked = _ranked_indexes(found["chunks"], doc_keys)
                returned = [doc_keys.get(chunk["doc_id"]) for chunk in found["chunks"]]
                for k in ks:
                    any_hit, all_hit = recall_at(ranked, gold, k)
                    hits[k][0] += any_hit
                    hits[k][1] += all_hit
                for i, score in enumerate(ranking_scores(ranked, gold, returned)):
                    scores[i] += score
                per_query.append(
                    {
                        "mode": mode,
                        "query": number,
                        "question": query["question"],
                        "gold": json.dumps(gold),
                        "ranked": json.dumps(ranked),
                        "results": json.dumps(returned[:PRECISION_DEPTH]),
                        "gold_ranks": json.dumps(
                            [ranked.index(g) + 1 if g in ranked else None for g in gold]
                        ),
                        "latency_ms": round(latencies[-1], 3),
                    }
                )
                if progress:
                    progress(mode, done, len(numbered))
            total = len(numbered) or 1
            results[mode] = {
                "recall": {
                    str(k): {
                        "any": round(hits[k][0] / total, 4),
                        "both": round(hits[k][1] / total, 4),
                    }
                    for k in ks
                },
                "ranking": {
                    name: round(score / total, 4)
                    for name, score in zip(("hit@1", "mrr@10", "p@5"), scores)
                },
                "latency_ms": {
                    "p50": round(float(np.percentile(latencies, 50)), 3) if latencies else None,
                    "p95": round(float(np.percentile(latencies, 95)), 3) if latencies else None,
                },
            }
        db.conn.close()
    report = {
        "file": str(path),
        "started_at": started,
        "finished_at": _now(),
        "corpus": size,
        "queries": len(numbered),
        "split": split,
        "ks": list(ks),
        "ingest_seconds": round(ingest_seconds, 2),
        "counts": counts,
        "options": _options_dict(options),
        "modes": results,
    }
    if folder is not None:
        report["folder"] = str(folder)
        report["database"] = str(target)
    if store_db is not None:
        report["run_id"] = store_run(store_db, report, per_query)
    return report


def _ranked_indexes(chunks, doc_index):
    """Corpus indexes (or relative paths) of the returned chunks' documents, each once."""
    ranked = []
    for chunk in chunks:
        index = doc_index.get(chunk["doc_id"])
        if index is not None and index not in ranked:
            ranked.append(index)
    return ranked


def _options_dict(options):
    values = {}
    for name in options.__dataclass_fields__:
        if name in ("mode", "k"):
            continue
        value = getattr(options, name)
        values[name] = list(value) if isinstance(value, tuple) else value
    return values


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def store_run(store_db, report, per_query=()):
    """Write a run into ``eval_runs``, ``eval_results`` and ``eval_queries``; returns its id."""
    import sqlite_utils

    db = store_db if isinstance(store_db, sqlite_utils.Database) else sqlite_utils.Database(store_db)
    with db.conn:
        run_id = (
            db["eval_runs"]
            .insert(
                {
                    "started_at": report["started_at"],
                    "finished_at": report["finished_at"],
                    "file": report["file"],
                    "corpus": report["corpus"],
                    "queries": report["queries"],
                    "split": report["split"],
                    "ingest_seconds": report["ingest_seconds"],
                    "counts": json.dumps(report["counts"]),
                    "options": json.dumps(report["options"]),
                },
                pk="id",
                alter=True,
            )
            .last_pk
        )
        rows = []
        for mode, result in report["modes"].items():
            for k, recall in result["recall"].items():
                rows.append(
                    {
                        "run_id": run_id,
                        "mode": mode,
                        "k": int(k),
                        "recall_any": recall["any"],
                        "recall_both": recall["both"],
                        "latency_p50_ms": result["latency_ms"]["p50"],
                        "latency_p95_ms": result["latency_ms"]["p95"],
                    }
                )
        db["eval_results"].insert_all(
            rows, pk=("run_id", "mode", "k"), foreign_keys=[("run_id", "eval_runs", "id")]
        )
        db["eval_rankings"].insert_all(
            [
                {
                    "run_id": run_id,
                    "mode": mode,
                    "hit_at_1": result["ranking"]["hit@1"],
                    "mrr_at_10": result["ranking"]["mrr@10"],
                    "p_at_5": result["ranking"]["p@5"],
                }
                for mode, result in report["modes"].items()
            ],
            pk=("run_id", "mode"),
            foreign_keys=[("run_id", "eval_runs", "id")],
        )
        if per_query:
            db["eval_queries"].insert_all(
                [dict(row, run_id=run_id) for row in per_query],
                pk=("run_id", "mode", "query"),
                foreign_keys=[("run_id", "eval_runs", "id")],
            )
    return run_id


def format_table(report):
    """The results as a plain-text table: one row per mode."""
    ks = report["ks"]
    headers = ["mode", "hit@1", "MRR@10", "P@5"]
    for k in ks:
        headers += [f"R@{k} any", f"R@{k} both"]
    headers += ["p50 ms", "p95 ms"]
    lines = []
    for mode, result in report["modes"].items():
        row = [mode] + [f"{result['ranking'][name]:.3f}" for name in ("hit@1", "mrr@10", "p@5")]
        for k in ks:
            recall = result["recall"][str(k)]
            row += [f"{recall['any']:.3f}", f"{recall['both']:.3f}"]
        latency = result["latency_ms"]
        row += [f"{latency['p50']:.1f}", f"{latency['p95']:.1f}"]
        lines.append(row)
    widths = [max(len(str(r[i])) for r in [headers] + lines) for i in range(len(headers))]
    out = ["  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(headers, widths)))]
    for row in lines:
        out.append(
            "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
        )
    over = f"{report['corpus']} texts"
    if "folder" in report:
        over = f"{report['corpus']} documents of {report['folder']}"
    split = "" if report.get("split", "all") == "all" else f" ({report['split']})"
    summary = f"{report['queries']} questions{split} over {over} (ingest {report['ingest_seconds']:.1f}s)"
    return "\n".join([summary] + out)
