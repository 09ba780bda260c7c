"""Per-question comparison of retrieval modes: where the default loses to a single mode.

Asks every question of an evaluation file's split in each mode on a built database (``-d``
of ``llm graphrag eval``), with the same figures as ``llm graphrag eval``, then lists the
figures on which the default (graph) is below a single mode, with how many questions it
does worse and better on there (and a one-sided sign test's p: is the loss more than
chance?), and the questions behind them: the gold documents' ranks in each mode and the
default's first results.
The two searches are run once per question and reused by every mode.

    python bench/compare_modes.py FILE -d DATABASE [--split dev-even] [--show 10]
        [--set name=value ...]

``--set`` changes a ``RetrievalOptions`` field for every mode (``--set keep_top=4``).
"""

import argparse
import ast
import json
import math
import pathlib
import sys
import time
from dataclasses import replace

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from llm_graphrag import evaluate, retrieval  # noqa: E402
from llm_graphrag.db import open_database  # noqa: E402

SINGLE = ("bm25", "vector", "hybrid")


def questions(path, split, db):
    """``[(number, question, gold)]`` of ``split`` and the document id -> gold key map."""
    data = json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
    keys = {}
    if "folder" in data:
        folder = str(pathlib.Path(data["folder"]).resolve()) + "/"
        for doc_id, doc_path in db.execute("select id, path from docs"):
            if doc_path.startswith(folder):
                keys[doc_id] = doc_path[len(folder):]
        gold_key = "gold_paths"
    else:
        for doc_id, doc_path in db.execute("select id, path from docs"):
            stem = pathlib.Path(doc_path).stem
            if stem.isdigit():
                keys[doc_id] = int(stem)
        gold_key = "gold"
    picked = [
        (n, q["question"], q[gold_key])
        for n, q in enumerate(data["queries"])
        if evaluate.in_split(n, q, split)
    ]
    return picked, keys


class Searches:
    """Each question's two searches, run once and handed to every mode."""

    def __init__(self):
        self.cache = {}

    def query(self, db, q, options):
        if q not in self.cache:
            first = retrieval._Query(db.conn, q, options)
            first.keyword_search()
            first.vector_search()
            self.cache[q] = (first.bm25, first.vector, first._query_vector)
        state = retrieval._Query(db.conn, q, options)
        bm25, vector, query_vector = self.cache[q]
        state._query_vector = query_vector
        if options.mode in ("bm25", "hybrid", "graph"):
            state.bm25 = bm25
        if options.mode in ("vector", "hybrid", "graph"):
            state.vector = vector
        weights = dict(retrieval.DEFAULT_WEIGHTS)
        weights.update(options.weights or {})
        state.fuse()
        if options.mode == "graph" and options.hops > 0:
            state.expand()
        return state.result(weights)


def figures(rows, ks=(2, 5, 10)):
    """The ``llm graphrag eval`` figures of one mode's per-question rows."""
    total = len(rows) or 1
    out = {}
    for k in ks:
        out[f"R@{k} any"] = sum(r["recall"][k][0] for r in rows) / total
        out[f"R@{k} both"] = sum(r["recall"][k][1] for r in rows) / total
    for i, name in enumerate(("hit@1", "MRR@10", "P@5")):
        out[name] = sum(r["ranking"][i] for r in rows) / total
    return out


def run(path, database, split, options, modes=evaluate.MODES, searches=None):
    """``{mode: [per-question row]}`` and per-mode latency lists."""
    db = open_database(database)
    picked, keys = questions(path, split, db)
    searches = searches or Searches()
    out = {}
    for mode in modes:
        run_options = replace(options, mode=mode, k=10)
        rows = []
        for number, q, gold in picked:
            found = searches.query(db, q, run_options)
            ranked = evaluate._ranked_indexes(found["chunks"], keys)
            returned = [keys.get(c["doc_id"]) for c in found["chunks"]]
            rows.append(
                {
                    "number": number,
                    "question": q,
                    "gold": gold,
                    "ranked": ranked,
                    "recall": {k: evaluate.recall_at(ranked, gold, k) for k in (2, 5, 10)},
                    "ranking": evaluate.ranking_scores(ranked, gold, returned),
                }
            )
        out[mode] = rows
    db.conn.close()
    return out


def deficits(results, default="graph"):
    """``[(figure, default value, best single mode, its value)]`` where the default is lower."""
    table = {mode: figures(rows) for mode, rows in results.items()}
    lost = []
    for name, value in table[default].items():
        for mode in SINGLE:
            if mode in table and table[mode][name] > value + 1e-9:
                lost.append((name, value, mode, table[mode][name]))
    return table, lost


def value(row, name):
    """One question's contribution to the figure ``name``."""
    if name.startswith("R@"):
        k, kind = name[2:].split(" ")
        return float(row["recall"][int(k)][kind == "both"])
    return row["ranking"][("hit@1", "MRR@10", "P@5").index(name)]


def churn(rows, other_rows, name):
    """``(worse, better, p)``: the questions on which ``rows`` score below / above
    ``other_rows`` on ``name``, and the one-sided sign test's p of that many worse."""
    worse = better = 0
    for mine, theirs in zip(rows, other_rows):
        a, b = value(mine, name), value(theirs, name)
        worse += a < b - 1e-9
        better += a > b + 1e-9
    n = worse + better
    p = sum(math.comb(n, i) for i in range(worse, n + 1)) / 2**n if n else 1.0
    return worse, better, p


def print_table(table):
    names = list(next(iter(table.values())))
    print("| mode | " + " | ".join(names) + " |")
    for mode, values in table.items():
        print(f"| {mode} | " + " | ".join(f"{values[n]:.3f}" for n in names) + " |")


def _rank(row):
    return [row["ranked"].index(g) + 1 if g in row["ranked"] else None for g in row["gold"]]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("file")
    parser.add_argument("-d", "--database", required=True)
    parser.add_argument("--split", default="dev-even")
    parser.add_argument("--show", type=int, default=10, help="questions listed per deficit")
    parser.add_argument("--set", action="append", default=[], help="option=value")
    args = parser.parse_args(argv)
    options = retrieval.RetrievalOptions()
    for item in args.set:
        name, value = item.split("=", 1)
        options = replace(options, **{name: ast.literal_eval(value)})
    began = time.perf_counter()
    results = run(args.file, args.database, args.split, options)
    table, lost = deficits(results)
    seconds = time.perf_counter() - began
    print(f"{args.file} {args.split}: {len(results['graph'])} questions, {seconds:.1f} s")
    print_table(table)
    for name, value, mode, other in lost:
        worse, better, p = churn(results["graph"], results[mode], name)
        print(
            f"- {name}: graph {value:.4f} < {mode} {other:.4f}; questions worse {worse}, "
            f"better {better} (one-sided sign test p = {p:.2f})"
        )
    if not args.show:
        return
    print("\nQuestions where a single mode ranks a gold document higher than the default:")
    shown = 0
    for i, row in enumerate(results["graph"]):
        mine = [r or 99 for r in _rank(row)]
        better = {}
        for mode in SINGLE:
            theirs = [r or 99 for r in _rank(results[mode][i])]
            if min(theirs) < min(mine) and min(theirs) <= 10:
                better[mode] = _rank(results[mode][i])
        if better and shown < args.show:
            shown += 1
            others = " ".join(f"{m} {r}" for m, r in better.items())
            print(f"#{row['number']} {row['question']!r} gold {row['gold']}:")
            print(f"    graph {_rank(row)} {others}")
            print(f"    graph top: {row['ranked'][:5]}")


if __name__ == "__main__":
    main()
