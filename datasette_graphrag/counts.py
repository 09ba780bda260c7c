"""Row counts of sqlite-vec tables that a time limit cannot break.

Datasette counts every table of a database for its home and database pages, each count
under a time limit of a few milliseconds. A ``vec0`` table counted by scanning its vectors
runs out of time on a busy machine, and sqlite-vec then reports ``SQL logic error`` rather
than an interruption, which Datasette logs for each count. A ``vec0`` table has exactly one
row in its ``<name>_rowids`` shadow table per vector: that count is an index lookup.
"""

from datasette.database import QueryInterrupted
from datasette.utils import escape_sqlite, sqlite3


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
