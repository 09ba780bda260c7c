"""What graphrag needs of SQLite's extension loading, and the error when it is missing.

``db.load_extensions`` loads sqlite-vec and ``traversal``'s bfsvtab; both raise
``ExtensionsUnavailable`` when the Python's SQLite module cannot load extensions.
"""


class ExtensionsUnavailable(Exception):
    """Raised when SQLite extensions cannot be loaded into a connection."""


NO_EXTENSIONS = (
    "This Python's SQLite module cannot load extensions, which graphrag needs for "
    "sqlite-vec: install pysqlite3-binary (pip install pysqlite3-binary) or use a Python "
    "built with --enable-loadable-sqlite-extensions."
)
