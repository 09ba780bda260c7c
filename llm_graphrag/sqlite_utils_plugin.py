"""sqlite-utils plugin: sqlite-vec and the traversal extension in every connection.

llm opens its databases through sqlite-utils, so ``llm embed-multi`` writing into a
graphrag database can fire the triggers that mirror vectors into vec0 indexes.
"""

import sqlite_utils

from .db import ExtensionsUnavailable, load_extensions


@sqlite_utils.hookimpl
def prepare_connection(conn):
    try:
        load_extensions(conn)
    except ExtensionsUnavailable:
        # Plain sqlite-utils use must keep working; graphrag commands report the problem.
        pass
