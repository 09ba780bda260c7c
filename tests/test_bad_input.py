"""A folder of bad input: every file gets its own error or skip reason, the run finishes
and what was stored before is untouched (issue 20).

Small files are in tests/data/bad-input; the big and special ones (a 50 MB file, a 5 MB
line, 20,000-deep HTML, a FIFO, a socket, links) are made here, never committed.
"""

import json
import os
import pathlib
import shutil
import socket
import time

import pytest
from click.testing import CliRunner

from llm_graphrag.cli import graphrag
from llm_graphrag.db import open_database
from llm_graphrag.limits import Limits

DATA = pathlib.Path(__file__).parent / "data" / "bad-input"
HINT = "graphrag only follows links that stay inside the folder (ingest --follow-symlinks follows them)"
SPECIAL = "not a regular file; graphrag reads only regular files and never opens these"
# Tables whose rows the bad run must leave as they were (full-text and vector indexes
# are derived from them).
TABLES = ("docs", "chunks", "entities", "mentions", "relations", "relation_evidence", "embeddings")


def too_big(size):
    limit = Limits().max_file_bytes
    return (
        f"the file's size in bytes ({size:,}) is over the limit of {limit:,} "
        f"(limits.max_file_bytes); split the file, or raise the limit: "
        f"llm graphrag settings limits '{{\"max_file_bytes\": {size}}}'"
    )


@pytest.fixture
def bad_folder(tmp_path):
    folder = tmp_path / "bad"
    shutil.copytree(DATA, folder)
    with open(folder / "huge.txt", "wb") as fp:  # 50 MB of ordinary prose
        line = b"The heron watches the basin while the kestrel circles the dam.\n"
        fp.write(line * (50_000_000 // len(line)) + b"x" * (50_000_000 % len(line)))
    words = b"kestrel heron basin tidepool " * 200_000
    (folder / "one-line.txt").write_bytes(words[:5_000_000])  # 5 MB, no newline
    depth = 20_000
    (folder / "deep.html").write_text(
        "<html><body><main>" + "<div>" * depth + "<p>Deep text here.</p>" + "</div>" * depth
        + "</main></body></html>"
    )
    os.mkfifo(folder / "pipe.md")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(folder / "socket.md"))
    os.symlink("loop.md", folder / "loop.md")  # a link to itself
    outside = tmp_path / "outside.md"
    outside.write_text("# Outside\n\nNot in the folder.\n")
    os.symlink(outside, folder / "escape.md")
    (folder / "new\nline.md").write_text("# Newline name\n\nThe quillwort register counts ferns.\n")
    try:
        yield folder
    finally:
        sock.close()


def snapshot(db):
    return {table: sorted(map(tuple, db.execute(f"select * from {table}").fetchall())) for table in TABLES}


def test_every_bad_file_gets_a_reason_and_nothing_stored_is_lost(bad_folder, tmp_path):
    runner = CliRunner()
    database = str(tmp_path / "g.db")
    good = tmp_path / "good"
    good.mkdir()
    (good / "dams.md").write_text(
        "# Dams\n\nThe Basin Dam holds the Tidepool reservoir. Heron Corp runs the Basin Dam.\n"
    )
    (good / "kestrel.md").write_text("# Kestrel\n\nKestrel depends on Tidepool for storage.\n")
    first = runner.invoke(graphrag, ["ingest", str(good), "-d", database, "--json"])
    assert first.exit_code == 0, first.output
    db = open_database(database)
    before = snapshot(db)
    assert len(before["docs"]) == 2 and before["mentions"]

    started = time.monotonic()
    result = runner.invoke(graphrag, ["ingest", str(bad_folder), "-d", database, "--json"])
    elapsed = time.monotonic() - started
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    folder = bad_folder
    errors = {pathlib.Path(e["path"]).name: e["error"] for e in data["errors"]}
    assert errors == {
        "binary.txt": "binary content (a NUL byte at offset 8), not a text document; remove it "
        "from the ingest paths or convert it to text",
        "nul-bytes.md": "binary content (a NUL byte at offset 19), not a text document; remove it "
        "from the ingest paths or convert it to text",
        "invalid-utf8.md": "not valid UTF-8 (byte 0xe9 at offset 22); re-save the file as UTF-8",
        "empty.md": "the file is empty or only whitespace; add some text or leave it out of the ingest",
        "malformed.pdf": "not a readable PDF (PdfReadError: startxref not found); check that the "
        "file is a complete PDF",
        "malformed.docx": "not a readable .docx file (KeyError); check that it opens in a word processor",
        "truncated.docx": "not a readable .docx file (BadZipFile); check that it opens in a word processor",
        "huge.txt": too_big(50_000_000),
        "one-line.txt": too_big(5_000_000),
        "deep.html": "the HTML's nesting depth (20,003) is over the limit of 512 "
        "(limits.max_html_depth); flatten the markup, or raise the limit: "
        "llm graphrag settings limits '{\"max_html_depth\": 20003}'",
    }
    assert {pathlib.Path(s["path"]).name: s["reason"] for s in data["skipped_files"]} == {
        "pipe.md": f"skipped: a FIFO (named pipe), {SPECIAL}",
        "socket.md": f"skipped: a socket, {SPECIAL}",
        "loop.md": "skipped: a symbolic link loop (the link leads back to itself); fix or remove the link",
        "escape.md": f"skipped: a symbolic link to {tmp_path / 'outside.md'}, outside {folder}; {HINT}",
    }
    # Odd names are no reason to fail: those two files are stored under their names.
    assert (data["ingested"], data["skipped"]) == (2, 0)
    paths = [p for (p,) in db.execute("select path from docs order by id")]
    assert paths[2:] == [str(folder / "café-ünïcode.md"), str(folder / "new\nline.md")]
    assert elapsed < 60, elapsed

    after = snapshot(db)
    old_docs = {row[0] for row in before["docs"]}
    for table in TABLES:
        assert set(before[table]) <= set(after[table]), table
    assert [row for row in after["docs"] if row[0] in old_docs] == before["docs"]
    assert [row for row in after["chunks"] if row[1] in old_docs] == before["chunks"]
    assert db.execute("pragma integrity_check").fetchone()[0] == "ok"
    assert db.execute("pragma foreign_key_check").fetchall() == []


def test_limits_are_settings_with_clear_errors(tmp_path):
    runner = CliRunner()
    database = str(tmp_path / "g.db")
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "long.md").write_text(
        "# Long\n\n" + "\n\n".join(f"Paragraph {i} says the heron counts {i} fish." * 60 for i in range(40))
    )
    (folder / "short.md").write_text("# Short\n\nOne short note.\n")
    open_database(database).close()
    result = runner.invoke(graphrag, ["settings", "limits", '{"max_chunks": 2, "max_file_bytes": 150000}', "-d", database])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"max_chunks": 2, "max_file_bytes": 150000}
    result = runner.invoke(graphrag, ["ingest", str(folder), "-d", database, "--json", "--no-extract"])
    data = json.loads(result.output)
    chunks = data["errors"][0]["error"].split("(", 2)[1].split(")")[0]
    assert int(chunks.replace(",", "")) > 2
    assert data["errors"] == [
        {
            "path": str(folder / "long.md"),
            "error": f"the file's chunk count ({chunks}) is over the limit of 2 (limits.max_chunks); "
            f"split the file, or raise the limit: llm graphrag settings limits "
            f"'{{\"max_chunks\": {chunks.replace(',', '')}}}'",
        }
    ]
    assert data["ingested"] == 1
    for bad, message in [
        ('{"max_chunks": 0}', "limits: max_chunks must be a positive integer, not 0"),
        ('{"max_depth": 5}', "limits: unknown keys max_depth; use "
         '{"max_file_bytes": 4000000, "max_chunks": 1000, "max_html_depth": 512}'),
        ("[1]", 'limits must be a JSON object, e.g. '
         '{"max_file_bytes": 4000000, "max_chunks": 1000, "max_html_depth": 512}'),
    ]:
        result = runner.invoke(graphrag, ["settings", "limits", bad, "-d", database])
        assert result.exit_code == 1
        assert result.output == f"Error: {message}\n"


def test_extract_settings_of_the_wrong_kind_are_refused_and_change_nothing(tmp_path):
    runner = CliRunner()
    database = str(tmp_path / "g.db")
    open_database(database).close()
    good = '{"stated": false, "cooccurrence": "all", "link_threshold": 0.8, "llm_model": null}'
    result = runner.invoke(graphrag, ["settings", "extract", good, "-d", database])
    assert result.exit_code == 0, result.output
    for bad, message in [
        ('{"stated": "no"}', "stated must be true or false, not 'no'"),
        ('{"cooccurrence": "sometimes"}', "cooccurrence must be one of significant, all, off, not 'sometimes'"),
        ('{"ner": "maybe"}', "ner must be one of auto, off, not 'maybe'"),
        ('{"link_threshold": "high"}', "link_threshold must be a number, not 'high'"),
        ('{"gazetteer_topk": 1.5}', "gazetteer_topk must be a whole number, not 1.5"),
        ('{"cooccurrence_window": true}', "cooccurrence_window must be a whole number, not True"),
        ('{"llm_model": 3}', "llm_model must be a string or null, not 3"),
    ]:
        result = runner.invoke(graphrag, ["settings", "extract", bad, "-d", database])
        assert result.exit_code == 1
        assert result.output == f"Error: extract: {message}; nothing was changed\n"
    result = runner.invoke(graphrag, ["settings", "extract", "-d", database])
    assert json.loads(result.output) == json.loads(good)


def test_limits_from_the_yaml_configuration(tmp_path):
    from llm_graphrag.config import apply_to_database, load_config
    from llm_graphrag.schema import get_setting

    path = tmp_path / "graphrag.yaml"
    path.write_text("limits:\n  max_chunks: 300\n  max_html_depth: 64\n")
    db = open_database(tmp_path / "g.db")
    config = load_config(path, env={"GRAPHRAG_LIMITS_MAX_FILE_BYTES": "1000000"}, db=db)
    assert apply_to_database(config, db) == {
        "limits": {"max_chunks": 300, "max_html_depth": 64, "max_file_bytes": 1000000}
    }
    assert Limits.from_setting(get_setting(db, "limits")) == Limits(
        max_file_bytes=1_000_000, max_chunks=300, max_html_depth=64
    )


def test_a_path_given_that_cannot_be_read_fails_the_command(tmp_path):
    runner = CliRunner()
    database = str(tmp_path / "g.db")
    missing = str(tmp_path / "nowhere")
    # Nothing to read at all: an error, and no database is made.
    result = runner.invoke(graphrag, ["ingest", missing, "-d", database])
    assert result.exit_code == 1
    assert f"nothing to ingest: {missing}: no such file or directory" in result.output
    assert not os.path.exists(database)
    # Something to read: it is ingested, the missing path reported, and the status is 1.
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "lake.md").write_text("# Lakes\n\nA lake is a body of standing water.\n")
    result = runner.invoke(graphrag, ["ingest", str(folder), missing, "-d", database, "--json"])
    assert result.exit_code == 1
    data = json.loads(result.output)
    assert (data["ingested"], data["errors"]) == (1, [{"path": missing, "error": "no such file or directory"}])
    # A bad file found inside a folder is reported and leaves the status at 0.
    (folder / "binary.md").write_bytes(b"\x00\x01")
    result = runner.invoke(graphrag, ["ingest", str(folder), "-d", database, "--json"])
    assert result.exit_code == 0, result.output
    assert [pathlib.Path(e["path"]).name for e in json.loads(result.output)["errors"]] == ["binary.md"]
