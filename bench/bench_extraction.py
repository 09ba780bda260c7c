"""Benchmark extraction plus linking: speed on python3.11-doc, quality on the golden set.

    apt-get install -y python3.11-doc      # the corpus: /usr/share/doc/python3.11/html/_sources
    python bench/bench_extraction.py       # speed and quality
    python bench/bench_extraction.py --quality-only
    python bench/bench_extraction.py --runs 3 --compare   # each run beside a one-process run

Speed: every ``.rst.txt`` source becomes one document, cut into paragraph-aligned chunks of
about 300 words and written straight into a fresh database (not timed); then
``extract_and_link`` runs over all of them (timed, median of ``--runs`` fresh databases),
with its default worker processes (one per CPU). ``calibration_ms_per_run``, a fixed
single-core workload timed before each run, tells how fast the shared machine was then, and
``cores_busy_per_run`` how much of it the run got.
Quality: the passages under ``tests/golden/`` are extracted in a fresh database and
compared with their hand annotations (precision, recall and F1 for entities and for
relations).
"""

import argparse
import hashlib
import importlib
import json
import logging
import os
import pathlib
import resource
import statistics
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402
from common import calibration_ms, machine  # noqa: E402

from llm_graphrag import compiled, parallel  # noqa: E402
from llm_graphrag.db import open_database  # noqa: E402
from llm_graphrag.extract import extract_and_link  # noqa: E402
from llm_graphrag.extraction import normalize  # noqa: E402
from llm_graphrag.schema import set_setting  # noqa: E402

CORPUS = pathlib.Path("/usr/share/doc/python3.11/html/_sources")
GOLDEN = ROOT / "tests" / "golden"
# Edges that name no relation type: co-occurrence and stated (relations.stated_relations).
UNTYPED = ("related_to", "same_as", "stated")


class AgainRounds(logging.Handler):
    """Collects how many documents each again round of ``extract_and_link`` linked again
    (``extract``'s log: documents linked before a fuller name came, and the like)."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.counts = []

    def emit(self, record):
        if record.msg.startswith("again round"):
            self.counts.append(record.args[1])


def chunk_text(text, size=300):
    """Paragraph-aligned chunks of about ``size`` words."""
    chunks, current, words = [], [], 0
    for paragraph in text.split("\n\n"):
        count = len(paragraph.split())
        if current and words + count > size:
            chunks.append("\n\n".join(current))
            current, words = [], 0
        current.append(paragraph)
        words += count
    if current:
        chunks.append("\n\n".join(current))
    return chunks


# The rule-based extractors only, as the package installs them: spaCy NER, an optional
# extra that the README's test command installs, would otherwise join in where it is.
SETTINGS = {"ner": "off"}


def compiled_modules():
    """The modules the build compiled that were imported compiled (not from changed source)."""
    return [
        name for name in compiled.recorded_sources()
        if not importlib.import_module(f"llm_graphrag.{name}").__file__.endswith(".py")
    ]


def load_corpus(db, files):
    set_setting(db, "extract", SETTINGS)
    words = 0
    with db.atomic():
        for doc_id, path in enumerate(files, 1):
            text = path.read_text(errors="replace")
            title = next((line.strip() for line in text.splitlines() if line.strip() and not line.startswith("..")), path.stem)
            db.execute(
                "insert into docs (id, path, title, hash) values (?, ?, ?, ?)",
                [doc_id, str(path), title, hashlib.sha256(text.encode()).hexdigest()],
            )
            for seq, chunk in enumerate(chunk_text(text)):
                words += len(chunk.split())
                db.execute(
                    "insert into chunks (doc_id, seq, content) values (?, ?, ?)", [doc_id, seq, chunk]
                )
    return words


def largest_component_share(db):
    parent = {}

    def find(x):
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for (entity_id,) in db.execute("select id from entities"):
        find(entity_id)
    for src, dst in db.execute("select src_id, dst_id from relations"):
        a, b = find(src), find(dst)
        if a != b:
            parent[a] = b
    sizes = {}
    for entity_id in list(parent):
        root = find(entity_id)
        sizes[root] = sizes.get(root, 0) + 1
    return max(sizes.values()) / len(parent) if parent else 0.0


def names_verbatim_share(db):
    """Share of entities whose name appears verbatim in a chunk that mentions them: line
    breaks count as spaces (a name may wrap), and the capital of a sentence's first word
    aside ("frogs" is seen in "Frogs lay eggs")."""
    db.conn.create_function("squash", 1, lambda text: " ".join((text or "").split()))
    db.execute("create temp table squashed as select id, squash(content) as content from chunks")
    found, total = db.execute(
        "select sum(exists(select 1 from mentions m join temp.squashed c on c.id = m.chunk_id "
        "where m.entity_id = e.id and (instr(c.content, e.name) or "
        "instr(c.content, upper(substr(e.name, 1, 1)) || substr(e.name, 2))))), count(*) from entities e"
    ).fetchone()
    db.execute("drop table temp.squashed")
    return round((found or 0) / total, 4) if total else 0.0


def one_process_seconds(files):
    """Seconds of one run with ``workers=0``, for a side-by-side comparison."""
    with tempfile.TemporaryDirectory() as tmp:
        db = open_database(pathlib.Path(tmp) / "bench.db")
        load_corpus(db, files)
        start = time.perf_counter()
        extract_and_link(db, workers=0)
        seconds = time.perf_counter() - start
        db.close()
    return seconds


def bench_speed(runs, limit, compare):
    files = sorted(CORPUS.rglob("*.rst.txt"))[: limit or None]
    if not files:
        sys.exit(f"No corpus at {CORPUS}: apt-get install -y python3.11-doc")
    timings, cpu, worker_cpu, single, calibration, linked_again = [], [], [], [], [], []
    for run in range(runs):
        if compare:
            single.append(one_process_seconds(files))
        with tempfile.TemporaryDirectory() as tmp:
            db = open_database(pathlib.Path(tmp) / "bench.db")
            words = load_corpus(db, files)
            if run == 0:
                # Warm the embedding model so its one-off load is not timed.
                from llm_graphrag.embeddings import embedder_for

                embedder_for(db).encode(["warm up"])
            calibration.append(calibration_ms())
            children = resource.getrusage(resource.RUSAGE_CHILDREN)
            rounds = AgainRounds()
            logger = logging.getLogger("llm_graphrag.extract")
            logger.addHandler(rounds)
            logger.setLevel(logging.INFO)
            start, cpu_start = time.perf_counter(), time.process_time()
            result = extract_and_link(db)
            elapsed = time.perf_counter() - start
            logger.removeHandler(rounds)
            linked_again.append(rounds.counts)
            timings.append(elapsed)
            cpu.append(time.process_time() - cpu_start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            worker_cpu.append(after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime)
            if run == runs - 1:
                counts = {
                    table: db.execute(f"select count(*) from {table}").fetchone()[0]
                    for table in ("entities", "mentions", "relations", "relation_evidence")
                }
                again = extract_and_link(db)
                share = largest_component_share(db)
                verbatim = names_verbatim_share(db)
                by_rel = db.execute(
                    "select rel, count(*) from relations group by rel order by 2 desc"
                ).fetchall()
    median = statistics.median(timings)
    if compare:
        ratios = [a / b for a, b in zip(single, timings)]
        comparison = {
            "one_process_seconds": [round(t, 2) for t in single],
            "one_process_words_per_second": int(words / statistics.median(single)),
            "speedup_per_run": [round(r, 2) for r in ratios],
            "median_speedup": round(statistics.median(ratios), 2),
        }
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    per_k = lambda n: round(n * 1000 / words, 1)  # noqa: E731
    return {
        "documents": len(files),
        "words": words,
        "runs": runs,
        "seconds": [round(t, 2) for t in timings],
        "median_seconds": round(median, 2),
        "words_per_second": int(words / median),
        "workers": parallel.default_workers(),
        "extract_settings": SETTINGS,
        # Which of the modules pip compiles with Cython ran compiled (see README, Development).
        "compiled_modules": compiled_modules(),
        "cpu_seconds_this_process": [round(t, 2) for t in cpu],
        "cpu_seconds_workers": [round(t, 2) for t in worker_cpu],
        # CPU seconds of all processes per second of the run: 2.0 is both cores busy
        # throughout; about 1.0 while every process had work means the machine gave one core.
        "cores_busy_per_run": [round((a + b) / t, 2) for a, b, t in zip(cpu, worker_cpu, timings)],
        # Per run, the documents each again round linked again (``extract._again_rounds``).
        "documents_linked_again_per_round": linked_again,
        "load_average": os.getloadavg()[0],
        "calibration_ms_per_run": calibration,
        "peak_rss_mb": round(peak_mb, 1),
        "result": result,
        "rerun_result": again,
        "entities_per_1000_words": per_k(counts["entities"]),
        "relations_per_1000_words": per_k(counts["relations"]),
        "mentions_per_1000_words": per_k(counts["mentions"]),
        "evidence_per_1000_words": per_k(counts["relation_evidence"]),
        "largest_component_share": round(share, 3),
        # Entity names seen as written in a chunk that mentions them (see names_verbatim_share).
        "names_verbatim_share": verbatim,
        "related_to_share": round(dict(by_rel).get("related_to", 0) / max(1, sum(n for _, n in by_rel)), 3),
        # related_to and stated together: the edges that name no relation type.
        "untyped_share": round(
            sum(n for rel, n in by_rel if rel in ("related_to", "stated")) / max(1, sum(n for _, n in by_rel)), 3
        ),
        "relations_by_type": dict(by_rel),
        **({"compared_with_one_process": comparison} if compare else {}),
    }


# ---------------------------------------------------------------------------------------
# Quality on the golden set


def load_golden(folder=GOLDEN):
    """Every passage of every ``*.yaml`` file under ``folder`` (``tests/golden/``), files in
    name order; each is tagged with its half (``even`` or ``odd`` position within its file)
    and its file's stem."""
    passages = []
    for path in sorted(pathlib.Path(folder).glob("*.yaml")):
        for position, passage in enumerate(yaml.safe_load(path.read_text())):
            passages.append({**passage, "half": "odd" if position % 2 else "even", "file": path.stem})
    return passages


def _alternatives(value):
    return {normalize(v.strip()) for v in value.split("|")}


def predict(passages, path, settings=SETTINGS):
    """Extract the passages into a fresh database; per passage, entity norms and relations."""
    db = open_database(path)
    set_setting(db, "extract", settings)
    with db.atomic():
        for doc_id, passage in enumerate(passages, 1):
            db.execute(
                "insert into docs (id, path, title, hash) values (?, ?, ?, ?)",
                [doc_id, passage["id"], passage.get("title"), hashlib.sha256(passage["text"].encode()).hexdigest()],
            )
            db.execute("insert into chunks (doc_id, seq, content) values (?, 0, ?)", [doc_id, passage["text"]])
    extract_and_link(db)
    predictions = {}
    for doc_id, passage in enumerate(passages, 1):
        entities = set()
        steps = {}
        for entity_id, name, typ, features in db.execute(
            "select e.id, e.name, e.type, m.features from mentions m join entities e on e.id = m.entity_id "
            "where m.doc_id = ?", [doc_id]
        ):
            features = json.loads(features or "{}")
            if typ == "step" and "step" in features:
                steps[entity_id] = normalize(f"step {features['step']}")
                entities.add(steps[entity_id])
            else:
                entities.add(normalize(name))
        relations = set()
        for src_id, src, rel, dst_id, dst in db.execute(
            "select distinct r.src_id, s.name, r.rel, r.dst_id, d.name from relation_evidence ev "
            "join relations r on r.id = ev.relation_id join entities s on s.id = r.src_id "
            "join entities d on d.id = r.dst_id where ev.doc_id = ?", [doc_id]
        ):
            relations.add((steps.get(src_id, normalize(src)), rel, steps.get(dst_id, normalize(dst))))
        predictions[passage["id"]] = (entities, relations)
    return predictions


def prf(tp_pred, n_pred, tp_gold, n_gold):
    p = tp_pred / n_pred if n_pred else 0.0
    r = tp_gold / n_gold if n_gold else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": round(p, 3), "recall": round(r, 3), "f1": round(f, 3)}


def evaluate(passages, predictions):
    """Micro-averaged P/R/F1: entities by normalized name, relations by (src, rel, dst)."""
    e_tp_pred = e_pred = e_tp_gold = e_gold = 0
    r_tp_pred = r_pred = r_tp_gold = r_gold = 0
    pair_hits = typed_pair_hits = 0
    for passage in passages:
        entities, relations = predictions[passage["id"]]
        gold = [_alternatives(e) for e in passage["entities"]]
        alts = {}
        for e in passage["entities"]:
            for v in e.split("|"):
                alts[v.strip()] = _alternatives(e)
        e_pred += len(entities)
        e_tp_pred += sum(1 for p in entities if any(p in g for g in gold))
        e_gold += len(gold)
        e_tp_gold += sum(1 for g in gold if g & entities)
        typed = {r for r in relations if r[1] not in UNTYPED}
        gold_rel = [(alts[s], rel, alts[d]) for s, rel, d in passage["relations"]]
        r_pred += len(typed)
        r_tp_pred += sum(1 for s, rel, d in typed if any(s in gs and rel == grel and d in gd for gs, grel, gd in gold_rel))
        r_gold += len(gold_rel)
        r_tp_gold += sum(1 for gs, grel, gd in gold_rel if any(s in gs and rel == grel and d in gd for s, rel, d in typed))
        pair_hits += sum(
            1 for gs, _, gd in gold_rel
            if any((s in gs and d in gd) or (s in gd and d in gs) for s, _, d in relations)
        )
        typed_pair_hits += sum(
            1 for gs, _, gd in gold_rel
            if any((s in gs and d in gd) or (s in gd and d in gs) for s, _, d in typed)
        )
    return {
        "passages": len(passages),
        "gold_entities": e_gold,
        "gold_relations": r_gold,
        "entities": prf(e_tp_pred, e_pred, e_tp_gold, e_gold),
        "relations": prf(r_tp_pred, r_pred, r_tp_gold, r_gold),
        "relation_pairs_connected_recall": round(pair_hits / r_gold, 3) if r_gold else 0.0,
        "relation_pairs_typed_recall": round(typed_pair_hits / r_gold, 3) if r_gold else 0.0,
    }


def bench_quality(split=None, file=None, ner=SETTINGS["ner"], folder=GOLDEN):
    """Scores on the whole golden set, or on one half of it (``even``: the passages at even
    positions within each file, the half rules are tuned on; ``odd``: the check half), or on
    one file's passages (``file``: its stem, such as ``science``). Every passage is extracted
    either way, so halves and files are scored on the same graph. ``ner``: the extraction
    setting for spaCy (``off`` as the speed runs, or ``auto``). ``folder``: where the
    ``*.yaml`` files are (``tests/heldback/`` holds passages kept for checking only)."""
    passages = load_golden(folder)
    if not passages:
        sys.exit(f"No golden passages in {folder}: --golden takes a folder of *.yaml files")
    if file and not any(p["file"] == file for p in passages):
        stems = ", ".join(sorted({p["file"] for p in passages}))
        sys.exit(f"No golden file {pathlib.Path(folder) / file}.yaml: --file takes one of {stems}")
    with tempfile.TemporaryDirectory() as tmp:
        predictions = predict(passages, pathlib.Path(tmp) / "golden.db", {**SETTINGS, "ner": ner})
    if file:
        passages = [p for p in passages if p["file"] == file]
    if split:
        passages = [p for p in passages if p["half"] == split]
    return evaluate(passages, predictions)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--limit", type=int, default=0, help="only the first N documents")
    parser.add_argument("--quality-only", action="store_true")
    parser.add_argument(
        "--split", choices=("even", "odd"),
        help="score one half of the golden set: even (tuning) or odd (check) positions per file",
    )
    parser.add_argument(
        "--ner", choices=("off", "auto"), default=SETTINGS["ner"],
        help="spaCy NER for the quality scores: off (the default, as installed) or auto (where spaCy loads)",
    )
    parser.add_argument(
        "--file", metavar="STEM",
        help="score one golden file only, by its name without .yaml (e.g. encyclopedic)",
    )
    parser.add_argument(
        "--golden", metavar="DIR", default=GOLDEN, type=pathlib.Path,
        help="folder of golden *.yaml files (default tests/golden; tests/heldback is for checks only)",
    )
    parser.add_argument(
        "--compare", action="store_true",
        help="before each run, time one with workers=0 (everything in one process)",
    )
    args = parser.parse_args()
    report = {"machine": machine()}
    report["quality"] = bench_quality(args.split, args.file, args.ner, args.golden)
    if not args.quality_only:
        report["speed"] = bench_speed(args.runs, args.limit, args.compare)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
