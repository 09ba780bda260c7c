"""Load: clients on a live ``datasette serve`` while ``llm graphrag ingest`` writes to its
database in another process (a smaller ``bench/bench_load.py``)."""

import pathlib
import sys

import pytest

from llm_graphrag.db import open_database

sys.path.insert(0, str(pathlib.Path(__file__).parent.parent / "bench"))

import bench_load  # noqa: E402

CLIENTS = 4
FILES = 40


@pytest.mark.skipif(not bench_load.python_docs_installed(), reason="needs Debian's python3.11-doc")
def test_clients_get_answers_while_files_are_ingested(serve, tmp_path):
    folder = tmp_path / "python-docs"
    files = bench_load.copy_docs(folder, FILES, smallest=True)
    database = tmp_path / f"{bench_load.DATABASE}.db"
    open_database(database).close()
    log = tmp_path / "datasette.log"
    with serve(database, log=log) as url:
        figures = bench_load.run_load(
            url, database, folder, files, clients=CLIENTS, max_seconds=240, log=log, pause=0.05
        )
    assert (figures["ingest_returncode"], figures["ingest_errors"]) == (0, [])
    assert (figures["indexed"], figures["extracted"]) == (FILES, FILES)
    assert figures["failures"] == []
    assert (figures["failed"], figures["locked"]) == (0, 0)
    # Every kind of request was answered, and more than once per client.
    assert all(row["requests"] >= CLIENTS for row in figures["by_kind"].values()), figures
