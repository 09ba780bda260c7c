"""Backends: where the read tools get their answers when not from the SQLite file.

A backend is named by a URL whose scheme picks the engine, e.g.
``falkordb://localhost:6379/graphrag``. The seam is three things, documented in
``docs/backends.md``:

* ``BACKENDS`` maps a URL scheme to a module with ``open(url)``, returning an object
  with one method per read tool (``hybrid_query``, ``entity_lookup``, ``explain_entity``,
  ``subgraph``, ``path``, ``topn``, ``status``), each taking the tool's validated
  arguments as keywords and returning the tool's JSON, and a ``close()``;
* the module's ``sync(db, url, progress=None, full=False)`` copies a graphrag database into it;
* ``call_backend_tool`` validates arguments with the same JSON Schemas as ``call_tool``.
"""

import importlib
import threading
import urllib.parse

from .tools import TOOLS, ToolInputError, ToolNotFound

BACKENDS = {"falkordb": "llm_graphrag.falkordb_backend"}
# The read tools a backend answers (deep research reads the SQLite file's own tables).
READ_TOOLS = tuple(name for name, tool in TOOLS.items() if tool.read_only and name != "deep_research")


class BackendError(Exception):
    """A backend URL that cannot be used, or a backend that cannot be reached."""


def backend_module(url):
    """The module implementing the engine named by ``url``'s scheme."""
    scheme = urllib.parse.urlsplit(url or "").scheme
    if scheme not in BACKENDS:
        raise BackendError(
            f"Unknown backend {url!r}: use a URL starting with "
            + " or ".join(f"{name}://" for name in BACKENDS)
            + ", e.g. falkordb://localhost:6379/graphrag"
        )
    try:
        return importlib.import_module(BACKENDS[scheme])
    except ImportError as ex:
        raise BackendError(
            f"The {scheme} backend needs its client library ({ex.name}): "
            f"pip install 'datasette-graphrag[{scheme}]'"
        ) from ex


_OPEN = {}
_LOCK = threading.Lock()


def open_backend(url):
    """The backend for ``url``, opened once per URL and process and reused."""
    with _LOCK:
        backend = _OPEN.get(url)
        if backend is None:
            backend = _OPEN[url] = backend_module(url).open(url)
        return backend


def close_backends():
    """Close every backend ``open_backend`` opened (tests, shutdown)."""
    with _LOCK:
        for backend in _OPEN.values():
            backend.close()
        _OPEN.clear()


def call_backend_tool(url, name, arguments=None):
    """Run read tool ``name`` against the backend at ``url``: the ``call_tool`` of a backend."""
    if name not in TOOLS:
        raise ToolInputError(
            f"Unknown tool {name!r}: choose one of {', '.join(TOOLS)}", field="tool"
        )
    if name not in READ_TOOLS:
        raise ToolInputError(
            f"{name} writes to the SQLite database: run it there, then "
            f"'llm graphrag sync {url} -d DB' to copy the result",
            field="tool",
        )
    arguments = TOOLS[name].arguments(arguments)
    try:
        return getattr(open_backend(url), name)(**arguments)
    except LookupError as ex:
        raise ToolNotFound(str(ex)) from ex


def backend_tool(url):
    """A callable ``(name, arguments) -> dict`` answering the read tools from ``url``.

    For an MCP server option: hand each tool call to it instead of ``call_tool(db, ...)``.
    Fails now, with a ``BackendError``, when the URL or the server is unusable.
    """
    open_backend(url)

    def call(name, arguments=None):
        return call_backend_tool(url, name, arguments)

    call.url = url
    call.tools = READ_TOOLS
    return call


def sync(db, url, progress=None, full=False):
    """Copy the graphrag database ``db`` to the backend at ``url``: only what changed since
    the last sync, unless ``full``. ``progress(done, total)`` reports as it goes."""
    return backend_module(url).sync(db, url, progress=progress, full=full)
