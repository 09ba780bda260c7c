"""Order effects on real text: the same python3.11-doc files ingested in three orders.

The same ``--files`` small reStructuredText sources of Debian's python3.11-doc, copied
into one folder, are ingested (a) all at once, (b) one file at a time in reverse order,
(c) in two halves; every table ``tests/test_watch.snapshot`` compares is compared with
(a), and the rows that differ are counted (and, with ``--show N``, listed). A graph that
does not depend on the order documents came in shows no difference. ``workers=0``
throughout: one core.

    python bench/bench_order.py [--files 36] [--pages DIR] [--show 5] [--keep DIR]
"""

import argparse
import pathlib
import shutil
import sys
import tempfile
import time
from collections import Counter

from common import machine, python_docs

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from llm_graphrag.db import open_database  # noqa: E402
from llm_graphrag.ingest import ingest_docs  # noqa: E402
from test_watch import LINKED, ORDER_FREE, snapshot  # noqa: E402


def small_sources(count, low=1500, high=6000):
    """The ``count`` smallest library pages between ``low`` and ``high`` bytes, by name."""
    library = python_docs() / "library"
    sizes = sorted((p.stat().st_size, p.name) for p in library.glob("*.rst.txt") if low <= p.stat().st_size <= high)
    return sorted(library / name for _, name in sizes[:count])


def ingest_orders(folder, work):
    """``{order: database}`` for the three orders, and how long each took."""
    files = sorted(folder.iterdir())
    half = len(files) // 2
    orders = {
        "all at once": [[folder]],
        "one at a time, reversed": [[f] for f in reversed(files)],
        "two halves": [files[:half], files[half:]],
    }
    out, seconds = {}, {}
    for name, batches in orders.items():
        db = open_database(work / (name.replace(" ", "_").replace(",", "") + ".db"))
        start = time.perf_counter()
        for batch in batches:
            ingest_docs(db, [str(p) for p in batch], roots=[str(folder)], workers=0)
        seconds[name] = time.perf_counter() - start
        out[name] = db
    return out, seconds


def differences(reference, other):
    """``{table: (missing, extra)}``: rows of ``reference`` not in ``other`` and the reverse."""
    out = {}
    for table in ORDER_FREE + LINKED:
        a, b = Counter(map(repr, reference[table])), Counter(map(repr, other[table]))
        missing, extra = a - b, b - a
        if missing or extra:
            out[table] = (sorted(missing.elements()), sorted(extra.elements()))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=36)
    parser.add_argument("--show", type=int, default=0, help="List this many differing rows per table and side")
    parser.add_argument("--pages", help="Ingest the pages of this folder instead (tests/data/python-docs: the test's)")
    parser.add_argument("--keep", help="Keep the folder and the databases in this (new) folder")
    args = parser.parse_args()
    print(machine())
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(args.keep) if args.keep else pathlib.Path(tmp)
        folder = work / "docs"
        folder.mkdir(parents=True)
        if args.pages:
            pages = pathlib.Path(args.pages).iterdir()
            sources = sorted(p for p in pages if p.suffix in (".md", ".txt") and not p.name.startswith("README"))
        else:
            sources = small_sources(args.files)
        for source in sources:
            shutil.copy(source, folder / source.name)
        dbs, seconds = ingest_orders(folder, work)
        reference = snapshot(dbs["all at once"])
        sizes = ", ".join(f"{t} {len(reference[t])}" for t in ("docs", "chunks", "entities", "mentions", "relations"))
        print(f"{len(sources)} files: {sizes}")
        total = 0
        for name, db in dbs.items():
            print(f"{name}: {seconds[name]:.1f} s")
            if name == "all at once":
                continue
            for table, (missing, extra) in differences(reference, snapshot(db)).items():
                total += len(missing) + len(extra)
                print(f"  {table}: {len(missing)} rows only all at once, {len(extra)} rows only {name}")
                for label, rows in (("-", missing), ("+", extra)):
                    for row in rows[: args.show]:
                        print(f"    {label} {row[:300]}")
        print(f"differing rows in all: {total}")


if __name__ == "__main__":
    main()
