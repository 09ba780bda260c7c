"""Confinement: HTTP and MCP read only files that resolve under ``ingest_roots``; the CLI
follows links out of its folders only with --follow-symlinks (issue 20)."""

import json
import os
import pathlib

import httpx
import pytest
from click.testing import CliRunner
from datasette.app import Datasette
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from llm_graphrag.cli import graphrag
from llm_graphrag.db import open_database
from llm_graphrag.ingest import ingest_docs

SECRET = "The vault code is heron-kestrel-42."
HINT = "graphrag only follows links that stay inside the folder (ingest --follow-symlinks follows them)"


@pytest.fixture
def layout(tmp_path, monkeypatch):
    """An ingest root with a note, and five ways out of it (issue 20's five routes)."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "note.md").write_text("# Note\n\nHeron uses the Basin API.\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(f"# Secret\n\n{SECRET}\n")
    (tmp_path / "elsewhere.md").write_text(f"# Elsewhere\n\n{SECRET} Twice.\n")
    os.symlink(tmp_path / "elsewhere.md", root / "link.md")  # a link to a file outside
    os.symlink(outside, root / "sub")  # a link to a folder outside
    sibling = tmp_path / "root-sibling"  # matched by <root>*
    sibling.mkdir()
    (sibling / "sibling.md").write_text(f"# Sibling\n\n{SECRET} Sibling.\n")
    home = tmp_path / "home"
    home.mkdir()
    (home / "home.md").write_text(f"# Home\n\n{SECRET} Home.\n")
    monkeypatch.setenv("HOME", str(home))
    return tmp_path


def refused(path, real, root):
    return {
        "path": str(path),
        "error": f"refused: resolves to {real}, outside the ingest roots ({root}); "
        "only files under ingest_roots are read over HTTP and MCP",
    }


def routes(base):
    """(paths, expected errors) for each route out of ``base / "root"``."""
    root = base / "root"
    link_out = refused(root / "link.md", base / "elsewhere.md", root)
    folder_out = refused(root / "sub", base / "outside", root)
    secret_out = refused(root / "sub" / "secret.md", base / "outside" / "secret.md", root)
    return {
        "a root holding links to a file and a folder outside": ([str(root)], [folder_out, link_out]),
        "a glob through a linked folder": ([f"{root}/*/secret.md"], [secret_out]),
        "a recursive glob": ([f"{root}/**/*.md"], [link_out, secret_out]),
        "a sibling match": (
            [f"{root}*/*.md"],
            [refused(base / "root-sibling" / "sibling.md", base / "root-sibling" / "sibling.md", root), link_out],
        ),
        "the home folder": (["~/*.md"], [refused(base / "home" / "home.md", base / "home" / "home.md", root)]),
    }


def stored(path):
    db = open_database(path, create=False)
    try:
        paths = [p for (p,) in db.execute("select path from docs order by path")]
        leaked = db.execute("select count(*) from chunks where content like '%heron-kestrel%'").fetchone()[0]
        return paths, leaked
    finally:
        db.close()


@pytest.mark.parametrize("route", list(routes(pathlib.Path("/x"))))
def test_engine_refuses_every_file_outside_the_roots(layout, route):
    paths, errors = routes(layout)[route]
    db = open_database(layout / "g.db")
    result = ingest_docs(db, paths, within=[layout / "root"], extract=False, workers=0)
    assert result.errors == errors
    expected = [] if route == "the home folder" or "linked folder" in route else [str(layout / "root" / "note.md")]
    assert stored(layout / "g.db") == (expected, 0)


@pytest.mark.asyncio
async def test_http_refuses_every_route_out_of_the_roots(layout):
    path = layout / "graphrag.db"
    open_database(path).close()
    ds = Datasette(
        [str(path)],
        metadata={"plugins": {"datasette-graphrag": {"ingest_roots": [str(layout / "root")]}}},
    )
    await ds.invoke_startup()
    cookies = {"ds_actor": ds.sign({"a": {"id": "editor"}}, "actor")}
    for route, (paths, errors) in routes(layout).items():
        response = await ds.client.post(
            "/graphrag/-/graphrag/ingest_docs", json={"paths": paths, "extract": False}, cookies=cookies
        )
        if route == "the home folder":
            # Its base, ~ expanded, is outside the roots: refused before any file is read.
            assert response.status_code == 403
            assert response.json()["error"] == (
                f"paths: '~/*.md' is outside the allowed ingest roots {[str(layout / 'root')]}"
            )
            continue
        assert response.status_code == 200, response.text
        assert response.json()["errors"] == errors, route
    assert stored(path) == ([str(layout / "root" / "note.md")], 0)


def test_home_inside_a_root_is_still_confined(layout, monkeypatch):
    """``~`` expanded into a root, with a link out of it: the file is refused, not read."""
    home = layout / "root" / "home"
    home.mkdir()
    os.symlink(layout / "home" / "home.md", home / "escape.md")
    monkeypatch.setenv("HOME", str(home))
    db = open_database(layout / "g.db")
    result = ingest_docs(db, ["~/*.md"], within=[layout / "root"], extract=False, workers=0)
    assert result.errors == [refused(home / "escape.md", layout / "home" / "home.md", layout / "root")]
    assert (result.ingested, stored(layout / "g.db")) == (0, ([], 0))


def test_a_link_put_in_place_after_the_walk_is_refused_when_read(layout, monkeypatch):
    """The check is made again when the file is read, so swapping a file for a link
    between the walk and the read reaches nothing outside."""
    from llm_graphrag import ingest, loaders

    root = layout / "root"
    (root / "swap.md").write_text("# Swap\n\nAn ordinary note.\n")
    real_expand = loaders.expand_paths

    def expand_then_swap(*args, **kwargs):
        found = real_expand(*args, **kwargs)
        (root / "swap.md").unlink()
        os.symlink(layout / "outside" / "secret.md", root / "swap.md")
        return found

    monkeypatch.setattr(ingest, "expand_paths", expand_then_swap)
    db = open_database(layout / "g.db")
    result = ingest_docs(db, [str(root / "note.md"), str(root / "swap.md")], within=[root], extract=False, workers=0)
    assert result.errors == [refused(root / "swap.md", layout / "outside" / "secret.md", root)]
    assert stored(layout / "g.db") == ([str(root / "note.md")], 0)


MCP_PLUGIN = '''
def actor_from_request(datasette, request):
    if request.headers.get("authorization") == "Bearer editor-token":
        return {"id": "editor"}
'''

@pytest.mark.asyncio
async def test_mcp_refuses_every_route_out_of_the_roots(layout, serve):
    path = layout / "graphrag.db"
    open_database(path).close()
    plugins = layout / "plugins"
    plugins.mkdir()
    (plugins / "tokens.py").write_text("from datasette import hookimpl\n\n@hookimpl" + MCP_PLUGIN)
    metadata = layout / "metadata.json"
    metadata.write_text(json.dumps({"plugins": {"datasette-graphrag": {"ingest_roots": [str(layout / "root")]}}}))
    with serve(path, "-m", metadata, "--plugins-dir", plugins) as url:
        async with httpx.AsyncClient(headers={"authorization": "Bearer editor-token"}, timeout=120) as client:
            async with streamable_http_client(url + "/-/mcp", http_client=client) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    for route, (paths, errors) in routes(layout).items():
                        result = await session.call_tool("ingest_docs", {"paths": paths, "extract": False})
                        if route == "the home folder":
                            assert result.is_error is True
                            assert result.content[0].text == (
                                "Error executing tool ingest_docs: "
                                f"paths: '~/*.md' is outside the allowed ingest roots {[str(layout / 'root')]}"
                            )
                            continue
                        assert result.is_error is False, result.content[0].text
                        assert result.structured_content["errors"] == errors, route
    assert stored(path) == ([str(layout / "root" / "note.md")], 0)


def test_cli_skips_links_out_of_its_folders_unless_asked(layout):
    runner = CliRunner()
    root = layout / "root"
    database = str(layout / "cli.db")
    result = runner.invoke(graphrag, ["ingest", str(root), "-d", database, "--json", "--no-extract", "--workers", "0"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert (data["ingested"], data["errors"]) == (1, [])
    assert data["skipped_files"] == [
        {
            "path": str(root / "sub"),
            "reason": f"skipped: a symbolic link to the folder {layout / 'outside'}, outside {root}; {HINT}",
        },
        {
            "path": str(root / "link.md"),
            "reason": f"skipped: a symbolic link to {layout / 'elsewhere.md'}, outside {root}; {HINT}",
        },
    ]
    glob = runner.invoke(graphrag, ["ingest", f"{root}/*/*.md", "-d", database, "--json", "--no-extract"])
    assert json.loads(glob.output)["skipped_files"] == [
        {
            "path": str(root / "sub" / "secret.md"),
            "reason": f"skipped: reached through a symbolic link (it leads to {layout / 'outside'}, "
            f"outside {root}); {HINT}",
        }
    ]
    assert stored(database) == ([str(root / "note.md")], 0)

    os.symlink(root, root / "again")  # a loop: followed, it would never end
    result = runner.invoke(
        graphrag,
        ["ingest", str(root), "-d", database, "--json", "--no-extract", "--follow-symlinks", "--workers", "0"],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert (data["ingested"], data["skipped"], data["errors"]) == (2, 1, [])
    assert data["skipped_files"] == [
        {
            "path": str(root / "again"),
            "reason": f"skipped: a symbolic link loop (to {root}, a folder already walked); "
            "remove the link or ingest the folder once",
        }
    ]
    assert stored(database) == (
        sorted([str(root / "link.md"), str(root / "note.md"), str(root / "sub" / "secret.md")]),
        2,
    )
    assert "--follow-symlinks" in runner.invoke(graphrag, ["ingest", "--help"]).output
