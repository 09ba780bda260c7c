"""Fit the learned re-scorer of the fused chunks (``retrieval.RESCORE_WEIGHTS``).

For every question of the training splits, the fused chunks of graph mode (before the
graph expands) and their features (``retrieval.RESCORE_FEATURES``); a chunk is labelled
gold when its document is a gold page (documentation) or a gold fact (QASC, MultiRC).
The model is linear: ``score = a * fused + sum(w * feature)``, fitted listwise (softmax
over a question's chunks, the loss is minus the log of the probability on its gold
chunks; questions with no gold chunk fused are left out), each set weighing the same in
total, with an L2 penalty on ``w``. The weights printed are ``w / a``: what each feature
adds to the fused relevance. Then the same figures as ``compare_modes`` for the fused
ranking alone (no graph) of every set and split, hand-set document evidence against the
fitted weights: the check splits print aggregate figures only.

    python bench/fit_rescorer.py --data DIR [--eval ../shared/eval] [--l2 0.01]
        [--fixed page_support,page_size,heading,code] [--cache FILE] [--write]

``--write`` puts the weights into ``llm_graphrag/retrieval.py``. Sets are read from
``--data`` (``docs.db``, ``django.db``, ``qasc.db``, ``multirc.db``, built as for ``llm
graphrag eval``); never a held-out split. By default the document features keep their
hand-set weights (``HAND``, the ``RetrievalOptions`` defaults) and only the two lists'
features are learned: with every weight free, the page support weighs more and, over every
place, a page's chunks fill the first ten (Django dev R@5 any 0.900 -> 0.875; README).
"""

import argparse
import pathlib
import pickle
import re
import sys
from dataclasses import replace

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from compare_modes import questions  # noqa: E402
from llm_graphrag import evaluate, retrieval  # noqa: E402
from llm_graphrag.db import open_database  # noqa: E402

EVAL = ROOT.parent / "shared" / "eval"
SETS = {
    "docs": ("eval/python-docs-qa.json", "docs.db"),
    "django": ("eval/django-docs-qa.json", "django.db"),
    "qasc": ("qasc-dev.json", "qasc.db"),
    "multirc": ("multirc-dev.json", "multirc.db"),
}
TRAIN = [("docs", "dev-even"), ("django", "dev"), ("qasc", "dev-even"), ("multirc", "dev-even")]
CHECK = [("docs", "dev-odd"), ("qasc", "dev-odd"), ("multirc", "dev-odd")]
HAND = {"page_support": 0.1, "page_size": -0.05, "heading": 0.3, "code": 0.3}
FEATURES = retrieval.RESCORE_FEATURES


def _path(name, eval_dir):
    file = SETS[name][0]
    local = ROOT / file
    return local if local.exists() else pathlib.Path(eval_dir) / file


def collect(name, split, data, eval_dir):
    """``[(fused, features, labels, keys)]`` per question of one set's split."""
    file, database = _path(name, eval_dir), pathlib.Path(data) / SETS[name][1]
    if "heldout" in split:
        raise SystemExit("held-out splits are not read here")
    db = open_database(str(database))
    picked, keys = questions(file, split, db)
    options = retrieval.RetrievalOptions(
        rescore={name: 0.0 for name in FEATURES}, rescore_depth=None
    )
    out = []
    for _, q, gold in picked:
        state = retrieval._Query(db.conn, q, options)
        state.keyword_search()
        state.vector_search()
        state.fuse()
        ids = sorted(state.features)
        if not ids:
            continue
        marks = ",".join("?" * len(ids))
        docs = dict(db.conn.execute(f"select id, doc_id from chunks where id in ({marks})", ids))
        chunk_keys = [keys.get(docs.get(c)) for c in ids]
        out.append(
            (
                np.array([state.fused[c] for c in ids]),
                np.array([[state.features[c][f] for f in FEATURES] for c in ids]),
                np.array([k is not None and k in set(gold) for k in chunk_keys]),
                chunk_keys,
                gold,
            )
        )
    db.conn.close()
    return out


def fit(groups, l2, fixed=None, steps=2000, rate=0.05):
    """``(a, w)`` minimising the weighted listwise loss by Adam (numpy only). ``fixed``
    (``{feature: weight}``) holds those features' weights (in units of the fused
    relevance) at the values given: they join the fused relevance."""
    fixed = fixed or {}
    held = np.array([fixed.get(f, 0.0) for f in FEATURES])
    free = np.array([f not in fixed for f in FEATURES])
    data = [(f + x @ held, x * free, y, weight) for f, x, y, weight in groups if y.any()]
    design = np.vstack([np.column_stack([f, x]) for f, x, _, _ in data])
    gold = np.concatenate([y for _, _, y, _ in data]).astype(float)
    sizes = [len(f) for f, _, _, _ in data]
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    group = np.repeat(np.arange(len(data)), sizes)
    weight = np.array([w for _, _, _, w in data])
    theta = np.zeros(design.shape[1])
    theta[0] = 5.0
    m = np.zeros_like(theta)
    v = np.zeros_like(theta)
    for step in range(1, steps + 1):
        score = design @ theta
        score -= np.maximum.reduceat(score, starts)[group]
        e = np.exp(score)
        p = e / np.add.reduceat(e, starts)[group]
        q = p * gold
        q /= np.add.reduceat(q, starts)[group]
        grad = design.T @ ((p - q) * weight[group])
        grad[1:] += l2 * theta[1:]
        grad[1:][~free] = 0.0
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad**2
        theta -= rate * (m / (1 - 0.9**step)) / (np.sqrt(v / (1 - 0.999**step)) + 1e-8)
    return theta[0], theta[1:]


def replay(questions_, weights):
    """``compare_modes``-style figures of the fused ranking re-scored by ``weights``."""
    w = np.array([weights.get(f, 0.0) for f in FEATURES])
    rows = []
    for fused, x, _, keys, gold in questions_:
        score = np.maximum(0.0, fused + x @ w)
        order = sorted(range(len(keys)), key=lambda i: -score[i])[:10]
        returned = [keys[i] for i in order]
        ranked = []
        for key in returned:
            if key is not None and key not in ranked:
                ranked.append(key)
        rows.append(
            {
                "recall": {k: evaluate.recall_at(ranked, gold, k) for k in (2, 5, 10)},
                "ranking": evaluate.ranking_scores(ranked, gold, returned),
            }
        )
    from compare_modes import figures

    return figures(rows)


def write(weights):
    path = ROOT / "llm_graphrag" / "retrieval.py"
    text = path.read_text(encoding="utf-8")
    body = "".join(f'    "{f}": {weights[f]:.4f},\n' for f in FEATURES)
    pattern = r"RESCORE_WEIGHTS = \{.*?\}\n"
    text = re.sub(pattern, "RESCORE_WEIGHTS = {\n" + body + "}\n", text, count=1, flags=re.S)
    path.write_text(text, encoding="utf-8")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, help="folder of the four databases")
    parser.add_argument(
        "--eval", default=str(EVAL), help="folder of qasc-dev.json, multirc-dev.json"
    )
    parser.add_argument("--l2", type=float, default=0.01)
    parser.add_argument("--write", action="store_true")
    parser.add_argument(
        "--fixed",
        default="page_support,page_size,heading,code",
        help="features held at the hand-set document weights ('' : none)",
    )
    parser.add_argument("--cache", help="a pickle of the collected features, made if missing")
    args = parser.parse_args(argv)
    cache = pathlib.Path(args.cache) if args.cache else None
    if cache and cache.exists():
        collected = pickle.loads(cache.read_bytes())
    else:
        collected = {}
        for name, split in TRAIN + CHECK:
            collected[(name, split)] = collect(name, split, args.data, args.eval)
            print(f"{name} {split}: {len(collected[(name, split)])} questions", file=sys.stderr)
        if cache:
            cache.write_bytes(pickle.dumps(collected))
    groups = []
    for key in TRAIN:
        items = collected[key]
        answered = sum(1 for item in items if item[2].any()) or 1
        groups += [(f, x, y, 1.0 / answered) for f, x, y, _, _ in items]
    fixed = {f: HAND.get(f, 0.0) for f in args.fixed.split(",") if f} if args.fixed else {}
    a, w = fit(groups, args.l2, fixed)
    weights = {f: fixed.get(f, float(value / a)) for f, value in zip(FEATURES, w)}
    print(f"a = {a:.3f}; weights (added to the fused relevance): ")
    for f in FEATURES:
        print(f"    {f}: {weights[f]:+.4f}")
    names = None
    for key in TRAIN + CHECK:
        for label, values in (("hand", HAND), ("learned", weights)):
            table = replay(collected[key], values)
            if names is None:
                names = list(table)
                print("| set | split | weights | " + " | ".join(names) + " |")
            cells = " | ".join(f"{table[n]:.3f}" for n in names)
            print(f"| {key[0]} | {key[1]} | {label} | {cells} |")
    if args.write:
        write(weights)


if __name__ == "__main__":
    main()
