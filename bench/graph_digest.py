"""Digest of the graph extraction stores for a python3.11-doc slice: to show that a change
meant to make extraction faster leaves every stored row as it was.

    python bench/graph_digest.py --every 8 > before.json    # 62 pages, one in eight
    ... change the code (and rebuild: python setup.py build_ext --inplace) ...
    python bench/graph_digest.py --every 8 > after.json && diff before.json after.json

Each table's rows (ids included, timestamps left out) are hashed in id order; ``--dump DIR``
also writes them, one JSON row a line, to see where two runs differ.
"""

import argparse
import hashlib
import json
import pathlib
import sys
import tempfile

from bench_extraction import compiled_modules, load_corpus
from common import python_docs

from llm_graphrag.db import open_database
from llm_graphrag.extract import extract_and_link

TABLES = {
    "entities": "select id, type, name, norm, aliases, description, popularity, meta, status from entities order by id",
    "mentions": "select id, entity_id, doc_id, chunk_id, span_start, span_end, surface, type, score, link_score, "
    "features, snippet, meta from mentions order by id",
    "relations": "select id, src_id, dst_id, rel, weight, confidence, fact, chunk_id, evidence_count, meta "
    "from relations order by id",
    "relation_evidence": "select id, relation_id, chunk_id, doc_id, sentence, confidence, extractor "
    "from relation_evidence order by id",
    "settings": "select key, value from graphrag_settings where key = 'generic_words'",
}


def digest(files, workers, dump=None):
    with tempfile.TemporaryDirectory() as tmp:
        db = open_database(pathlib.Path(tmp) / "digest.db")
        words = load_corpus(db, files)
        result = extract_and_link(db, workers=workers)
        report = {"documents": len(files), "words": words, "result": result, "tables": {}}
        for table, sql in TABLES.items():
            sha = hashlib.sha256()
            rows = 0
            out = open(pathlib.Path(dump) / f"{table}.jsonl", "w") if dump else None
            for row in db.execute(sql):
                line = json.dumps(row, ensure_ascii=False)
                sha.update(line.encode() + b"\n")
                rows += 1
                if out:
                    out.write(line + "\n")
            if out:
                out.close()
            report["tables"][table] = {"rows": rows, "sha256": sha.hexdigest()[:16]}
        db.close()
    return report


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", type=int, default=8, help="one page in N, in name order")
    parser.add_argument("--workers", type=int, default=0, help="extraction worker processes (0: none)")
    parser.add_argument("--dump", help="directory to write each table's rows to")
    args = parser.parse_args()
    files = sorted(python_docs().rglob("*.rst.txt"))[:: args.every]
    if args.dump:
        pathlib.Path(args.dump).mkdir(parents=True, exist_ok=True)
    report = digest(files, args.workers, args.dump)
    report["compiled_modules"] = compiled_modules()
    json.dump(report, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
