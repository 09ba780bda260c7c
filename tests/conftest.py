import contextlib
import pathlib
import socket
import subprocess
import sys
import tempfile
import time

import httpx

import pytest

sys._called_from_test = True

# Plugin managers skip entry points under test: register ours explicitly.
import datasette.plugins  # noqa: E402
import llm.plugins  # noqa: E402
import sqlite_utils.plugins  # noqa: E402

import datasette_graphrag  # noqa: E402
from llm_graphrag import llm_plugin, sqlite_utils_plugin  # noqa: E402

llm.plugins.load_plugins()
if not llm.plugins.pm.is_registered(llm_plugin):
    llm.plugins.pm.register(llm_plugin, name="llm-graphrag")
if not sqlite_utils.plugins.pm.is_registered(sqlite_utils_plugin):
    sqlite_utils.plugins.pm.register(sqlite_utils_plugin, name="graphrag")
if not datasette.plugins.pm.is_registered(datasette_graphrag):
    datasette.plugins.pm.register(datasette_graphrag, name="datasette-graphrag")


@pytest.fixture
def user_path(tmp_path_factory, monkeypatch):
    """An empty llm user directory, so tests never touch the real one."""
    path = tmp_path_factory.mktemp("llm-user")
    monkeypatch.setenv("LLM_USER_PATH", str(path))
    return path


SAMPLE_CORPUS = pathlib.Path(__file__).parent.parent / "sample-corpus"


@pytest.fixture(scope="session")
def sample_db(tmp_path_factory):
    """The bundled sample corpus ingested with the full pipeline (read-only for tests)."""
    from llm_graphrag.db import open_database
    from llm_graphrag.ingest import ingest_docs

    path = tmp_path_factory.mktemp("sample") / "graphrag.db"
    db = open_database(path)
    result = ingest_docs(db, [str(SAMPLE_CORPUS)])
    assert result.errors == []
    db.close()
    return path


@contextlib.contextmanager
def datasette_server(*args, log=None, start_seconds=60):
    """``datasette serve ARGS`` in a subprocess on a free port: yields its base URL.
    Its output goes to the file ``log`` (a temporary one by default); it must answer
    within ``start_seconds``."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = pathlib.Path(log or tempfile.mkstemp(suffix=".log")[1])
    with log.open("wb") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "datasette", "serve", *map(str, args), "--port", str(port)],
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + start_seconds
        while True:
            try:
                if httpx.get(url + "/-/versions.json").status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"datasette serve did not start:\n{log.read_text()}")
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def serve():
    """``datasette_server``: ``with serve(path, *flags) as url: ...``"""
    return datasette_server


@pytest.fixture
def mapped(monkeypatch):
    """``[(function name, workers), ...]``: every ``parallel.ordered_map`` call of the test."""
    from llm_graphrag import parallel

    calls = []
    real_map = parallel.ordered_map

    def recording(function, items, workers, **kwargs):
        calls.append((function.__name__, workers))
        return real_map(function, items, workers, **kwargs)

    monkeypatch.setattr(parallel, "ordered_map", recording)
    return calls
