"""sqlite-vec tables under Datasette's time limits.

Datasette runs every query under a time limit, a few milliseconds for the table counts of
its home and database pages and for facet suggestions. A ``vec0`` table scanned when the
limit strikes answers ``SQL logic error`` or ``chunks iter error`` instead of SQLite's
``interrupted``, so Datasette logs an error for each count and a vec0 table page fails
with an HTTP 500 on a busy machine.
``adapt(db)`` makes a graphrag database's ``execute`` report those as the interruptions they
are, and its ``table_counts`` count a ``vec0`` table from its ``<name>_rowids`` shadow table,
one row per vector: an index lookup instead of a scan.
"""

import sys
import time

from datasette.database import QueryInterrupted
from datasette.utils import escape_sqlite, sqlite3

def adapt(db):
    """Adapt Datasette's ``Database`` object ``db`` of a graphrag file (see above)."""
    report_vec0_interruptions(db)
    count_vec0_tables_cheaply(db)


def report_vec0_interruptions(db):
    """Make ``db.execute`` raise ``QueryInterrupted`` for a vec0 scan cut by the time limit."""
    execute = db.execute

    async def execute_reporting_interruptions(sql, params=None, *args, log_sql_errors=True, **kwargs):
        limit_ms = db.ds.sql_time_limit_ms
        custom = kwargs.get("custom_time_limit") or (args[1] if len(args) > 1 else None)
        if custom and custom < limit_ms:
            limit_ms = custom
        start = time.perf_counter()
        try:
            return await execute(sql, params, *args, log_sql_errors=False, **kwargs)
        except sqlite3.DatabaseError as ex:
            elapsed_ms = (time.perf_counter() - start) * 1000
            # Past its time limit a query is interrupted: any error it ends with then is
            # that interruption, as an extension words it
            if elapsed_ms >= limit_ms:
                raise QueryInterrupted(ex, sql, params) from ex
            if log_sql_errors:
                sys.stderr.write(f"ERROR: sql = {sql}, params = {params}: {ex}\n")
                sys.stderr.flush()
            raise

    db.execute = execute_reporting_interruptions


def vec0_tables(conn):
    """Names of the ``vec0`` virtual tables in ``conn``'s main database."""
    return {
        name
        for (name,) in conn.execute(
            "select name from sqlite_master where type = 'table' "
            "and sql like 'create virtual table%using vec0%'"
        )
    }


def count_vec0_tables_cheaply(db):
    """Make Datasette's ``db.table_counts()`` count ``vec0`` tables from their rowids."""

    async def table_counts(limit=10):
        if not db.is_mutable and db.cached_table_counts is not None:
            return db.cached_table_counts
        vec0 = await db.execute_fn(vec0_tables)
        # Datasette 1.0 stops counting at count_limit rows; 0.65 has none
        count_limit = getattr(db, "count_limit", None)
        counts = {}
        for table in await db.table_names():
            if table in vec0:
                source = escape_sqlite(f"{table}_rowids")
            elif count_limit:
                source = f"(select * from {escape_sqlite(table)} limit {count_limit + 1})"
            else:
                source = escape_sqlite(table)
            try:
                results = await db.execute(
                    f"select count(*) from {source}", custom_time_limit=limit
                )
                counts[table] = results.rows[0][0]
            except (QueryInterrupted, sqlite3.OperationalError, sqlite3.DatabaseError):
                counts[table] = None
        if not db.is_mutable:
            db._cached_table_counts = counts
        return counts

    db.table_counts = table_counts
