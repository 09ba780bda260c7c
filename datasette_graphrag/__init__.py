"""Datasette plugin for graphrag databases."""

from datasette import hookimpl

from llm_graphrag.db import load_extensions


@hookimpl
def prepare_connection(conn):
    load_extensions(conn)
