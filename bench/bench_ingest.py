"""Ingestion throughput against embedding alone, on Debian's python3.11-doc sources.

Side by side in one run, alternating, median of ``--runs``:

* ``pipeline``: ``ingest_docs`` without extraction into a fresh database (load, normalize,
  near-duplicate removal and chunking in a second process; embedding in a thread; one
  write transaction per file);
* ``embedding only``: the same model encoding the same chunk texts (prelude + content in
  one string), nothing else;
* ``embedding step``: the pipeline's own embedding step alone (``chunk_vectors``: content
  and prelude encoded separately, prelude weighted 0.3), over the same chunks;
* ``pipeline + extraction``: the default ``llm graphrag ingest`` (once).

Target (issue 2): the pipeline runs at no less than half the embedding-only throughput and
peak RSS stays under 1 GB. Run from the repository root::

    python bench/bench_ingest.py [--runs 3]
"""

import argparse
import pathlib
import statistics
import tempfile
import time

from common import machine, peak_rss_mb, python_docs

from llm_graphrag.db import open_database
from llm_graphrag.embeddings import embedder_for
from llm_graphrag.chunking import Chunk
from llm_graphrag.ingest import chunk_vectors, ingest_docs


def words_in(folder):
    return sum(len(p.read_bytes().split()) for p in folder.rglob("*") if p.is_file())


def run_pipeline(folder, extract):
    with tempfile.TemporaryDirectory() as tmp:
        db = open_database(pathlib.Path(tmp) / "bench.db")
        start = time.perf_counter()
        result = ingest_docs(db, [str(folder)], extract=extract)
        seconds = time.perf_counter() - start
        chunks = [
            Chunk(seq, content, prelude or "", "", (), 0)
            for seq, prelude, content in db.execute(
                "select seq, prelude, content from chunks order by id"
            )
        ]
        db.close()
    return seconds, result, chunks


def run_embedding_step(chunks, embedder):
    start = time.perf_counter()
    for i in range(0, len(chunks), 512):
        chunk_vectors(embedder, chunks[i : i + 512])
    return time.perf_counter() - start


def run_embedding(texts, embedder):
    start = time.perf_counter()
    for i in range(0, len(texts), 512):
        embedder.encode(texts[i : i + 512])
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-extract", action="store_true", help="Skip the run with extraction")
    parser.add_argument("folder", nargs="?", default=None)
    args = parser.parse_args()
    folder = pathlib.Path(args.folder) if args.folder else python_docs()
    files = [p for p in folder.rglob("*") if p.is_file()]
    words = words_in(folder)
    print(machine())
    print(f"corpus: {folder} ({len(files)} files, {words:,} words)")
    with tempfile.TemporaryDirectory() as tmp:
        embedder = embedder_for(open_database(pathlib.Path(tmp) / "model.db"))
    embedder.encode(["warm up"])
    pipeline, embedding, step = [], [], []
    for _ in range(args.runs):
        seconds, result, chunks = run_pipeline(folder, extract=False)
        pipeline.append(seconds)
        embedding.append(run_embedding([c.embed_text for c in chunks], embedder))
        step.append(run_embedding_step(chunks, embedder))
    p, e, es = (statistics.median(x) for x in (pipeline, embedding, step))
    chunks = result.chunks
    print(
        f"pipeline (no extraction): {p:.2f} s  {result.ingested / p:,.0f} files/s  "
        f"{words / p:,.0f} words/s  {chunks / p:,.0f} chunks/s  "
        f"({result.ingested} files, {chunks} chunks, {result.duplicates_skipped} duplicates, "
        f"{len(result.errors)} errors)"
    )
    print(f"embedding only:           {e:.2f} s  {words / e:,.0f} words/s  {chunks / e:,.0f} chunks/s")
    print(f"embedding step (chunk_vectors): {es:.2f} s  {words / es:,.0f} words/s")
    ratios = [b / a for a, b in zip(pipeline, embedding)]
    print(f"pipeline / embedding-only throughput: {e / p:.2f} (target >= 0.50); "
          f"per run, each pipeline against the embedding run beside it: "
          f"{', '.join(f'{r:.2f}' for r in ratios)} (median {statistics.median(ratios):.2f})")
    print(f"pipeline / embedding-step throughput: {es / p:.2f}")
    print(f"pipeline seconds per run: {', '.join(f'{x:.2f}' for x in pipeline)}; "
          f"embedding-only: {', '.join(f'{x:.2f}' for x in embedding)}")
    if args.no_extract:
        print(f"peak RSS: {peak_rss_mb():.0f} MB (target < 1024)")
        return
    seconds, result, _ = run_pipeline(folder, extract=True)
    print(
        f"pipeline + extraction (default ingest): {seconds:.2f} s  {words / seconds:,.0f} words/s  "
        f"{result.extraction}"
    )
    print(f"peak RSS: {peak_rss_mb():.0f} MB (target < 1024)")


if __name__ == "__main__":
    main()
