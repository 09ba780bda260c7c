"""Throughput of loading, near-duplicate detection and chunking, in words per second.

Runs over a folder of documents (by default Debian's python3.11-doc reStructuredText
sources: ``apt-get install python3.11-doc``) and reports, for each stage on its own and
for the three together, the median of three runs. Words are the whitespace-separated
words of the raw files. Run from the repository root:

    python bench/bench_loaders.py [folder] [--runs 3] [--datasketch]

``--datasketch`` also times a datasketch MinHash + MinHashLSH baseline (128
permutations) over the same paragraphs, for comparison with the bottom-k filter.
"""

import argparse
import gc
import os
import statistics
import sys
import time

from common import machine  # noqa: E402

from llm_graphrag.chunking import chunk_document  # noqa: E402
from llm_graphrag.dedup import DEDUP_KINDS, NearDuplicateFilter  # noqa: E402
from llm_graphrag.loaders import expand_paths, load_document  # noqa: E402

DEFAULT = "/usr/share/doc/python3.11/html/_sources"


def timed(fn):
    """Run ``fn`` and return (wall seconds, cpu seconds, result)."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def stage_load(files, root):
    return [load_document(path, root=root) for path in files]


def stage_dedup(documents):
    seen = NearDuplicateFilter()
    kept = [seen.filter_blocks(document.blocks)[0] for document in documents]
    return kept, seen.duplicates


def stage_dedup_per_block(documents):
    seen = NearDuplicateFilter()
    for document in documents:
        for block in document.blocks:
            if block.kind in DEDUP_KINDS:
                seen.is_duplicate(block.text)
    return seen.duplicates


def stage_chunk(documents, kept_blocks):
    count = 0
    for document, blocks in zip(documents, kept_blocks):
        document.blocks = blocks
        count += len(chunk_document(document))
    return count


def pipeline(files, root):
    """What an ingest does per file: load, drop near-duplicates, chunk."""
    seen = NearDuplicateFilter()
    chunks = 0
    for path in files:
        document = load_document(path, root=root)
        document.blocks, _ = seen.filter_blocks(document.blocks)
        chunks += len(chunk_document(document))
    return chunks, seen.duplicates


def datasketch_baseline(documents, num_perm=128, threshold=0.85):
    from datasketch import MinHash, MinHashLSH

    lsh = MinHashLSH(threshold=threshold, num_perm=num_perm)
    duplicates = 0
    key = 0
    for document in documents:
        for block in document.blocks:
            if block.kind not in DEDUP_KINDS:
                continue
            words = block.text.lower().split()
            if len(words) < 8:
                continue
            shingles = {" ".join(words[i : i + 3]).encode() for i in range(len(words) - 2)}
            minhash = MinHash(num_perm=num_perm)
            minhash.update_batch(list(shingles))
            if lsh.query(minhash):
                duplicates += 1
            else:
                lsh.insert(str(key), minhash)
                key += 1
    return duplicates


def run_stages(files, root):
    """One run of each stage on its own, then of the file-by-file pipeline."""
    gc.collect()
    load_wall, load_cpu, documents = timed(lambda: stage_load(files, root))
    blocks = sum(len(d.blocks) for d in documents)
    dedup_wall, dedup_cpu, (kept, duplicates) = timed(lambda: stage_dedup(documents))
    each_wall, each_cpu, _ = timed(lambda: stage_dedup_per_block(documents))
    chunk_wall, chunk_cpu, chunk_count = timed(lambda: stage_chunk(documents, kept))
    documents = kept = None
    gc.collect()
    pipe_wall, pipe_cpu, (pipe_chunks, pipe_duplicates) = timed(lambda: pipeline(files, root))
    timings = [
        (load_wall, load_cpu),
        (dedup_wall, dedup_cpu),
        (each_wall, each_cpu),
        (chunk_wall, chunk_cpu),
        (pipe_wall, pipe_cpu),
    ]
    return timings, (blocks, duplicates, chunk_count, pipe_duplicates, pipe_chunks)


def report(name, words, runs):
    walls = [r[0] for r in runs]
    cpus = [r[1] for r in runs]
    wall, cpu = statistics.median(walls), statistics.median(cpus)
    print(
        f"{name:<28} {wall:7.2f} s  {words / wall:>11,.0f} words/s   "
        f"(cpu {cpu:.2f} s, {words / cpu:,.0f} words/s)"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("folder", nargs="?", default=DEFAULT)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--datasketch", action="store_true")
    args = parser.parse_args()
    if not os.path.isdir(args.folder):
        sys.exit(f"{args.folder} not found: apt-get install python3.11-doc, or pass a folder")
    files, errors = expand_paths([args.folder])
    words = sum(len(path.read_bytes().split()) for path in files)
    print(machine())
    print(f"corpus: {args.folder}: {len(files)} files, {words:,} words, {len(errors)} path errors")
    print(f"median of {args.runs} runs (wall clock; cpu time of this process in brackets)\n")

    loads, dedups, per_block, chunks, pipes = [], [], [], [], []
    for _ in range(args.runs):
        timings, counts = run_stages(files, args.folder)
        for series, timing in zip((loads, dedups, per_block, chunks, pipes), timings):
            series.append(timing)
    blocks, duplicates, chunk_count, pipe_duplicates, pipe_chunks = counts
    report("load + normalize", words, loads)
    report("dedup (filter_blocks)", words, dedups)
    report("dedup (is_duplicate each)", words, per_block)
    report("chunk", words, chunks)
    total = [(l[0] + d[0] + c[0], l[1] + d[1] + c[1]) for l, d, c in zip(loads, dedups, chunks)]
    report("sum of the three stages", words, total)
    report("pipeline, file by file", words, pipes)
    print(
        f"\nblocks: {blocks:,}; near-duplicate blocks skipped: {duplicates:,} "
        f"(pipeline: {pipe_duplicates:,}); chunks: {chunk_count:,} (pipeline: {pipe_chunks:,})"
    )
    if args.datasketch:
        documents = stage_load(files, args.folder)
        wall, cpu, found = timed(lambda: datasketch_baseline(documents))
        print(
            f"datasketch MinHash(128) + LSH, one run: {wall:.2f} s, {words / wall:,.0f} words/s "
            f"(cpu {cpu:.2f} s); near-duplicates: {found:,}"
        )


if __name__ == "__main__":
    main()
