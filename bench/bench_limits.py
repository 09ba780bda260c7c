"""Peak memory of ingesting one bad or very large file, under the default limits.

Each input is ingested (extraction included) by a fresh process with ``workers=0``, so
loading, chunking, embedding and extraction all count in that one process's peak RSS
(``resource.getrusage``). The inputs are generated in a temporary folder: a 50 MB text
file, a 5 MB single line, 20,000-deep HTML, a text file at the size limit, and the
largest file the defaults let through (prose that chunks into just under
``max_chunks``). Run from the repository root:

    python bench/bench_limits.py [--only NAME ...] [--keep DIR]
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

from common import PYTHON_DOCS, machine, python_docs  # noqa: E402

from llm_graphrag.limits import Limits  # noqa: E402

CHILD = """
import json, resource, sys, time
from llm_graphrag.db import open_database
from llm_graphrag.ingest import ingest_docs
started = time.perf_counter()
result = ingest_docs(open_database(sys.argv[1]), [sys.argv[2]], workers=0)
print(json.dumps({
    "seconds": round(time.perf_counter() - started, 1),
    "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    "chunks": result.chunks,
    "errors": [e["error"] for e in result.errors],
    "extraction": result.extraction,
}))
"""


def prose(size):
    """``size`` bytes of python3.11-doc's reStructuredText sources, repeated as needed."""
    sources = sorted(python_docs().rglob("*.rst.txt"))
    parts, total = [], 0
    while total < size:
        for path in sources:
            text = path.read_bytes()
            parts.append(text)
            total += len(text)
            if total >= size:
                break
    return b"\n\n".join(parts)[:size]


def worst_allowed(limits):
    """The longest prefix of the prose that chunks into fewer than ``max_chunks`` chunks."""
    from llm_graphrag.chunking import chunk_document
    from llm_graphrag.loaders import load_document

    text = prose(limits.max_file_bytes - 1)
    low, high = 0, len(text)
    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder) / "probe.txt"
        while high - low > 100_000:
            middle = (low + high) // 2
            path.write_bytes(text[:middle])
            if len(chunk_document(load_document(path))) < limits.max_chunks:
                low = middle
            else:
                high = middle
    return text[:low]


def inputs(limits):
    depth = 20_000
    yield "text-50mb.txt", lambda: prose(50_000_000)
    yield "line-5mb.txt", lambda: b" ".join(prose(6_000_000).split())[:5_000_000]
    yield "html-20000-deep.html", lambda: (
        "<html><body><main>" + "<div>" * depth + "<p>Deep.</p>" + "</div>" * depth + "</main></body></html>"
    ).encode()
    yield "line-at-size-limit.txt", lambda: b" ".join(prose(limits.max_file_bytes + 1_000_000).split())[
        : limits.max_file_bytes
    ]
    yield "text-at-size-limit.txt", lambda: prose(limits.max_file_bytes)
    yield "worst-allowed.txt", lambda: worst_allowed(limits)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", help="input names to run (default: all)")
    parser.add_argument("--keep", help="write the inputs and databases here and keep them")
    args = parser.parse_args()
    limits = Limits()
    folder = pathlib.Path(args.keep or tempfile.mkdtemp(prefix="bench-limits-"))
    folder.mkdir(parents=True, exist_ok=True)
    print(machine())
    print(f"limits: {json.dumps(limits.to_dict())}; python3.11-doc sources from {PYTHON_DOCS}")
    print("| input | bytes | outcome | chunks | peak RSS | seconds |")
    print("| --- | ---: | --- | ---: | ---: | ---: |")
    env = dict(os.environ, PYTHONPATH=str(pathlib.Path(__file__).resolve().parent.parent))
    for name, make in inputs(limits):
        if args.only and name not in args.only:
            continue
        path = folder / name
        if not path.exists():
            path.write_bytes(make())
        database = folder / (name + ".db")
        for stale in folder.glob(name + ".db*"):
            stale.unlink()
        started = time.perf_counter()
        child = subprocess.run(
            [sys.executable, "-c", CHILD, str(database), str(path)],
            capture_output=True, text=True, env=env,
        )
        if child.returncode != 0:
            print(f"| {name} | {path.stat().st_size:,} | failed: {child.stderr.strip().splitlines()[-1]} | | | "
                  f"{time.perf_counter() - started:.1f} |")
            continue
        report = json.loads(child.stdout.strip().splitlines()[-1])
        if report["errors"]:
            outcome = "error: " + report["errors"][0].split(";")[0]
        else:
            extraction = report["extraction"] or {}
            outcome = f"ingested ({extraction.get('mentions', 0):,} mentions, {extraction.get('relations', 0):,} relations)"
        print(
            f"| {name} | {path.stat().st_size:,} | {outcome} | {report['chunks']:,} | "
            f"{report['peak_rss_mb']:,} MB | {report['seconds']} |",
            flush=True,
        )
    if not args.keep:
        for item in folder.iterdir():
            item.unlink()
        folder.rmdir()


if __name__ == "__main__":
    main()
