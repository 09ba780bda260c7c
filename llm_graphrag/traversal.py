"""The ``bfsvtab`` traversal extension: where it is built and how to load it.

``bfsvtab`` is a SQLite virtual table compiled from ``bfsvtab.c`` by the package
build (``pip install -e .``). It walks any edge table or view breadth first, with
a depth limit, a direction, a relation filter, path weights and early stop at a
target; ``docs/traversal.md`` describes its columns with examples.
"""

import importlib.machinery
import pathlib

from .extensions import NO_EXTENSIONS, ExtensionsUnavailable

__all__ = ["ExtensionMissing", "extension_path", "load"]

MODULE_NAME = "_bfsvtab"
ENTRY_POINT = "sqlite3_bfsvtab_init"


class ExtensionMissing(ExtensionsUnavailable):
    """Raised when the compiled bfsvtab extension is not next to this module."""


def extension_path():
    """Path of the compiled bfsvtab extension (``_bfsvtab*.so``/``.pyd``)."""
    here = pathlib.Path(__file__).resolve().parent
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        candidate = here / (MODULE_NAME + suffix)
        if candidate.exists():
            return str(candidate)
    raise ExtensionMissing(
        f"The bfsvtab traversal extension is not built in {here}: install the "
        "package with 'pip install -e .' (needs a C compiler and the SQLite "
        "header: apt-get install libsqlite3-dev), or run 'python setup.py "
        "build_ext --inplace' in the checkout."
    )


def load(conn):
    """Load bfsvtab into ``conn``; extension loading is switched off afterwards.

    ``conn`` must come from a SQLite module that can load extensions
    (``pysqlite3``, which ``llm_graphrag.db`` picks when it is installed).
    """
    path = extension_path()
    if not hasattr(conn, "enable_load_extension"):
        raise ExtensionsUnavailable(NO_EXTENSIONS)
    conn.enable_load_extension(True)
    try:
        # SQLite derives the entry point sqlite3_bfsvtab_init from the file name
        conn.load_extension(path)
    finally:
        conn.enable_load_extension(False)
