"""schemathesis against ``/-/graphrag/openapi.json`` on a live ``datasette serve``.

Every check it has (no 5xx, response schemas, documented status codes and content types,
schema-valid requests accepted and invalid ones refused, ``Allow`` on 405s), for every
operation, GET and POST, with and without the database in the path, as a signed-in actor
who may write: the document and the server must agree.
"""

import json
import shutil
import subprocess
import sys

from datasette.app import Datasette

# Examples per operation in the fuzzing phase; the coverage phase adds its own fixed set.
MAX_EXAMPLES = 10
SECRET = "schemathesis-secret"


def test_openapi_document_agrees_with_the_server(sample_db, serve, tmp_path):
    path = tmp_path / "graphrag.db"
    shutil.copy(sample_db, path)
    root = tmp_path / "root"
    root.mkdir()
    (root / "note.md").write_text("# Kestrel\n\nKestrel depends on tidepool for storage.\n")
    metadata = tmp_path / "metadata.json"
    metadata.write_text(json.dumps({"plugins": {"datasette-graphrag": {"ingest_roots": [str(root)]}}}))
    cookie = Datasette(secret=SECRET).sign({"a": {"id": "root"}}, "actor")
    with serve(path, "-m", metadata, "--secret", SECRET) as url:
        result = subprocess.run(
            [
                sys.executable, "-m", "schemathesis.cli", "run", f"{url}/-/graphrag/openapi.json",
                "--checks", "all",
                "--max-examples", str(MAX_EXAMPLES),
                "--workers", "1",
                "--request-timeout", "60",
                "--header", f"Cookie: ds_actor={cookie}",
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=240,
        )
    report = result.stdout + result.stderr
    assert result.returncode == 0, report
    assert "Operations:       36 selected / 36 total" in report
    assert "No issues found" in report
