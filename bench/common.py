"""Shared pieces of the benchmarks: the machine line and the python3.11-doc corpus."""

import os
import pathlib
import platform
import statistics
import subprocess
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from llm_graphrag.db import sqlite3  # noqa: E402

PYTHON_DOCS = pathlib.Path("/usr/share/doc/python3.11/html/_sources")


def machine():
    """One line naming the CPU, cores, Python, SQLite and the load at the time."""
    cpu = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as fp:
            for line in fp:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    load = " ".join(f"{v:.2f}" for v in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"
    return (
        f"cpu: {cpu}; cores: {os.cpu_count()}; python {platform.python_version()}; "
        f"sqlite {sqlite3.sqlite_version}; load average: {load}"
    )


def calibration_ms(rounds=5):
    """Milliseconds a fixed single-core workload takes (median of ``rounds``).

    The speed of these shared machines moves with their other tenants' load, which the
    load average inside a VM does not show: the same code has run twice as slowly two hours
    apart. A figure taken beside a benchmark's tells how fast the machine was then.
    """
    timings = []
    for _ in range(rounds):
        start = time.perf_counter()
        words = {}
        for i in range(200_000):
            key = f"w{i % 5000}"
            words[key] = words.get(key, 0) + len(key.upper())
        timings.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(timings), 1)


def python_docs():
    """The python3.11-doc reStructuredText sources, installed with apt when missing."""
    if not PYTHON_DOCS.exists():
        subprocess.run(["apt-get", "update"], check=True)
        subprocess.run(["apt-get", "install", "-y", "python3.11-doc"], check=True)
    return PYTHON_DOCS


def peak_rss_mb():
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
