"""Opening graphrag databases: one SQLite module, pragmas and extensions everywhere."""

import contextlib
import json
import pathlib

try:  # The same module Datasette, sqlite-utils and llm pick when it is installed
    import pysqlite3 as sqlite3
except ImportError:  # pragma: no cover - depends on the platform
    import sqlite3

import sqlite_utils

from . import traversal as bfsvtab
from .extensions import NO_EXTENSIONS, ExtensionsUnavailable  # noqa: F401 (callers catch it here)

CACHE_SIZE_KIB = 65536
# Page size of new databases (SQLite's default is 4096). A write-ahead log frame is one
# page, written with two system calls: with 16 KiB pages an extraction of python3.11-doc
# made a quarter of them, and its process spent about a tenth less CPU time.
PAGE_SIZE = 16384
BUSY_TIMEOUT_MS = 5000
# Prepared statements a connection keeps. The sqlite3 module's cache drops its least used
# entry, and a new one goes in last: once creating a schema has filled the default 100,
# each statement of an extraction's per-document round evicted the one before it, and
# was prepared again for every document (10,948 times in one run on python3.11-doc).
CACHED_STATEMENTS = 512


def read_setting(conn, key, default=None):
    """A ``graphrag_settings`` value read on ``conn`` itself (no new wrappers per query);
    ``default`` when it is not set or the file is no graphrag database yet."""
    try:
        row = conn.execute("select value from graphrag_settings where key = ?", [key]).fetchone()
    except sqlite3.OperationalError:  # no settings table
        return default
    return json.loads(row[0]) if row else default


class ChangedMeanwhile(Exception):
    """Raised when another process deleted rows that what is being written refers to."""


class NotADatabase(Exception):
    """Raised when the file given as a database is not an SQLite database."""


def load_extensions(conn, traversal=True):
    """Load sqlite-vec and, when built, the bfsvtab traversal extension into ``conn``.

    Safe to call more than once on the same connection.
    """
    import sqlite_vec

    if not hasattr(conn, "enable_load_extension"):
        raise ExtensionsUnavailable(NO_EXTENSIONS)
    try:
        conn.enable_load_extension(True)
        if not _has_function(conn, "vec_version"):
            sqlite_vec.load(conn)
        if traversal and not _has_module(conn, "bfsvtab"):
            bfsvtab.load(conn)
    except (AttributeError, sqlite3.OperationalError) as ex:
        if "not authorized" in str(ex) or isinstance(ex, AttributeError):
            raise ExtensionsUnavailable(NO_EXTENSIONS) from ex
        raise
    finally:
        try:
            conn.enable_load_extension(False)
        except Exception:
            pass


def _has_function(conn, name):
    return bool(
        conn.execute(
            "select 1 from pragma_function_list where name = ?", [name]
        ).fetchone()
    )


def _has_module(conn, name):
    return bool(
        conn.execute("select 1 from pragma_module_list where name = ?", [name]).fetchone()
    )


def connect(path, check_same_thread=True):
    """Open a SQLite connection to ``path`` configured for graphrag.

    WAL journal, ``synchronous=NORMAL``, foreign keys on, a busy timeout, and the
    sqlite-vec and traversal extensions loaded.
    """
    path = str(path)
    if path != ":memory:":
        parent = pathlib.Path(path).parent
        if not parent.exists():
            raise FileNotFoundError(
                f"Directory {parent} does not exist: create it before using {path}"
            )
    conn = sqlite3.connect(path, check_same_thread=check_same_thread, cached_statements=CACHED_STATEMENTS)
    configure(conn)
    return conn


def configure(conn):
    """Apply graphrag's pragmas and extensions to an existing connection."""
    load_extensions(conn)
    conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    if conn.execute("PRAGMA page_count").fetchone()[0] == 0:
        # Only an empty database takes it, and only before WAL mode writes its first page.
        conn.execute(f"PRAGMA page_size={PAGE_SIZE}")
    if conn.execute("PRAGMA journal_mode").fetchone()[0] not in ("wal", "memory"):
        conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    # Index-heavy writes (extraction, vec0) slow down several times with SQLite's 2 MB default.
    conn.execute(f"PRAGMA cache_size=-{CACHE_SIZE_KIB}")
    return conn


@contextlib.contextmanager
def foreign_keys_off(db):
    """Turn foreign-key enforcement off for what runs inside, then back as it was.
    Inside a transaction the pragma does nothing, so neither does this."""
    if db.conn.in_transaction or not db.execute("pragma foreign_keys").fetchone()[0]:
        yield
        return
    db.execute("pragma foreign_keys = off")
    try:
        yield
    finally:
        db.execute("pragma foreign_keys = on")


# Pages the write-ahead log of a bulk extraction grows to before it is copied into the
# database (SQLite's default: 1,000). Each copy rewrites the pages the transactions since
# changed and waits for the disk twice; python3.11-doc's run copied after nearly every
# commit of its forty, and a page written by several of them was copied as many times.
BULK_CHECKPOINT_PAGES = 8192


@contextlib.contextmanager
def checkpoints_spaced(db, pages=BULK_CHECKPOINT_PAGES):
    """Let the write-ahead log grow to ``pages`` before SQLite checkpoints it, for what
    runs inside (a bulk write of many transactions), then back to what it was."""
    (before,) = db.conn.execute("pragma wal_autocheckpoint").fetchone()
    if before <= 0 or before >= pages:  # checkpoints off, or spaced already
        yield
        return
    db.conn.execute(f"pragma wal_autocheckpoint = {int(pages)}")
    try:
        yield
    finally:
        db.conn.execute(f"pragma wal_autocheckpoint = {int(before)}")


def wrap_connection(conn):
    """A ``sqlite_utils.Database`` over a connection someone else opened and configured
    (Datasette's, or one a SQL function runs on); plugins are not run again."""
    return sqlite_utils.Database(conn, execute_plugins=False)


def _refuse_other_databases(db, path):
    """Raise ``NotADatabase`` for an SQLite file whose tables are someone else's (no
    ``docs`` or ``chunks``): only a command that creates a database adds graphrag's."""
    tables = [
        name
        for (name,) in db.execute(
            "select name from sqlite_master where type = 'table' and name not like 'sqlite_%' order by name"
        )
    ]
    if tables and not {"docs", "chunks"} & set(tables):
        db.conn.close()
        shown = ", ".join(tables[:5]) + (", ..." if len(tables) > 5 else "")
        raise NotADatabase(
            f"{path} is an SQLite database but not a graphrag one (its tables: {shown}); "
            "it is left as it was: give -d a graphrag database file, or create one with "
            "'llm graphrag ingest FOLDER -d NEW.db'"
        )


def open_database(path, create=True):
    """Return a ``sqlite_utils.Database`` for ``path`` with the graphrag schema applied.

    With ``create=False`` a missing file, or an SQLite file with other tables and none of
    graphrag's, is an error rather than a new database.
    """
    from .schema import ensure_schema

    if not create and str(path) != ":memory:" and not pathlib.Path(path).exists():
        raise FileNotFoundError(
            f"Database {path} does not exist: create it with 'llm graphrag init -d {path}'"
        )
    try:
        db = sqlite_utils.Database(connect(path))
        if not create:
            _refuse_other_databases(db, path)
        ensure_schema(db)
    except sqlite3.DatabaseError as ex:
        if type(ex) is not sqlite3.DatabaseError:  # locked, constraint: not about the file
            raise
        raise NotADatabase(
            f"{path} is not an SQLite database ({ex}): give -d a graphrag database file, "
            "or a new path to create one"
        ) from ex
    return db
