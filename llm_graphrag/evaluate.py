"""Retrieval evaluation: recall of gold facts per retrieval mode, and latency.

An evaluation file is JSON: ``{"corpus": [text, ...], "queries": [{"question": str,
"gold": [index, ...]}, ...]}`` (``../shared/eval/qasc-dev.json`` has this format).
``run_eval`` ingests every corpus text as one document through the normal pipeline into
a fresh database, asks every question in each mode and reports, per mode and k,
``R@k any`` (at least one gold text in the top k) and ``R@k both`` (all of them), with
median and p95 latency. Results can be stored as tables in any SQLite database.
"""

from __future__ import annotations

import datetime
import json
import pathlib
import tempfile
import time
from dataclasses import replace

import numpy as np

from .retrieval import MODES, RetrievalOptions, hybrid_query

DEFAULT_KS = (2, 5, 10)


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


def run_eval(
    path,
    modes=MODES,
    ks=DEFAULT_KS,
    store_db=None,
    progress=None,
    options=None,
    database=None,
):
    """Evaluate retrieval on the file at ``path``; returns the results as a dict.

    ``modes``: retrieval modes to compare (``bm25``, ``vector``, ``hybrid``, ``graph``).
    ``options``: a ``RetrievalOptions`` used for every mode (its ``mode`` and ``k`` are
    set per run). ``database``: build into this file instead of a temporary one (kept,
    and reused when run again). ``store_db``: a ``sqlite_utils.Database`` or path that
    receives the run in tables ``eval_runs``, ``eval_results`` and ``eval_queries``.
    ``progress(stage, done, total)`` is called as documents are ingested and questions asked.
    """
    corpus, queries = load_eval_file(path)
    for mode in modes:
        if mode not in MODES:
            raise ValueError(f"Unknown mode {mode!r}: choose from {', '.join(MODES)}")
    ks = tuple(sorted(set(ks)))
    depth = max(ks)
    options = options or RetrievalOptions()
    started = _now()
    with tempfile.TemporaryDirectory(prefix="graphrag-eval-") as tmp:
        target = database or pathlib.Path(tmp) / "eval.db"
        began = time.perf_counter()
        db, doc_index = build_database(corpus, target, progress=progress)
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
            latencies = []
            for number, query in enumerate(queries):
                began = time.perf_counter()
                found = hybrid_query(db, query["question"], run_options)
                latencies.append((time.perf_counter() - began) * 1000)
                ranked = _ranked_indexes(found["chunks"], doc_index)
                for k in ks:
                    any_hit, all_hit = recall_at(ranked, query["gold"], k)
                    hits[k][0] += any_hit
                    hits[k][1] += all_hit
                per_query.append(
                    {
                        "mode": mode,
                        "query": number,
                        "question": query["question"],
                        "gold": json.dumps(query["gold"]),
                        "ranked": json.dumps(ranked),
                        "gold_ranks": json.dumps(
                            [ranked.index(g) + 1 if g in ranked else None for g in query["gold"]]
                        ),
                        "latency_ms": round(latencies[-1], 3),
                    }
                )
                if progress:
                    progress(mode, number + 1, len(queries))
            total = len(queries) or 1
            results[mode] = {
                "recall": {
                    str(k): {
                        "any": round(hits[k][0] / total, 4),
                        "both": round(hits[k][1] / total, 4),
                    }
                    for k in ks
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
        "corpus": len(corpus),
        "queries": len(queries),
        "ks": list(ks),
        "ingest_seconds": round(ingest_seconds, 2),
        "counts": counts,
        "options": _options_dict(options),
        "modes": results,
    }
    if store_db is not None:
        report["run_id"] = store_run(store_db, report, per_query)
    return report


def _ranked_indexes(chunks, doc_index):
    """Corpus indexes of the returned chunks' documents, first occurrence only."""
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
                    "ingest_seconds": report["ingest_seconds"],
                    "counts": json.dumps(report["counts"]),
                    "options": json.dumps(report["options"]),
                },
                pk="id",
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
    headers = ["mode"]
    for k in ks:
        headers += [f"R@{k} any", f"R@{k} both"]
    headers += ["p50 ms", "p95 ms"]
    lines = []
    for mode, result in report["modes"].items():
        row = [mode]
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
    summary = (
        f"{report['queries']} questions over {report['corpus']} texts "
        f"(ingest {report['ingest_seconds']:.1f}s)"
    )
    return "\n".join([summary] + out)
