"""Normalization on real documentation: titles, boilerplate, generated pages, ingest reasons.

The Sphinx pages under tests/data/sphinx are copies of Debian's python3.11-doc and
python-django-doc (their licences are beside them), so these tests need neither package.
"""

import json
import pathlib

import pytest
from click.testing import CliRunner
from llm.cli import cli

from llm_graphrag.db import open_database
from llm_graphrag.loaders import Block, load_document
from llm_graphrag.normalize import PageStats, page_kind, page_title

DATA = pathlib.Path(__file__).parent / "data"
PYTHON = DATA / "sphinx" / "python3.11-doc"
DJANGO = DATA / "sphinx" / "python-django-doc"
MARKDOWN = DATA / "markdown-site"
PYTHON_CRUMBS = ["Python", "3.11.2 Documentation"]


def load(root, name):
    return load_document(root / name, root=root)


@pytest.mark.parametrize(
    "root,name,title,breadcrumbs",
    [
        (
            PYTHON,
            "library/json.html",
            "json — JSON encoder and decoder",
            PYTHON_CRUMBS + ["The Python Standard Library", "Internet Data Handling"],
        ),
        (DJANGO, "ref/middleware.html", "Middleware", ["ref"]),
        (DJANGO, "ref/csrf.html", "Cross Site Request Forgery protection", ["ref"]),
        (DJANGO, "index.html", "Django documentation", []),
    ],
)
def test_sphinx_pages_have_their_own_titles(root, name, title, breadcrumbs):
    document = load(root, name)
    assert (document.title, document.breadcrumbs, document.kind, document.generated) == (
        title,
        breadcrumbs,
        "general",
        "",
    )


def test_django_page_has_no_header_sidebar_or_footer():
    document = load(DJANGO, "ref/middleware.html")
    # The site banner ("Django 3.2.25 documentation") and the navigation bar are gone.
    assert document.blocks[:3] == [
        Block("heading", "Middleware", 1),
        Block(
            "paragraph",
            "This document explains all middleware components that come with Django. For "
            "information on how to use them and how to write your own middleware, see the "
            "middleware usage guide.",
            0,
            ("Middleware",),
        ),
        Block("heading", "Available middleware", 2, ("Middleware",)),
    ]
    last = document.blocks[-1]
    assert (last.kind, last.headings, last.text.split("\n")[0]) == (
        "list",
        ("Middleware", "Middleware ordering"),
        "1. `SecurityMiddleware` It should go near the top of the list if you’re going to "
        "turn on the SSL redirect as that avoids running through a bunch of other "
        "unnecessary middleware.",
    )
    text = document.text
    for boilerplate in (
        "Django 3.2.25 documentation",  # the banner
        "Table of contents",  # the global navigation
        "Previous topic",  # the sidebar
        "Quick search",
        "Last update",
        "previous",  # the footer
        "[source]",  # links to the source listing
        "¶",
    ):
        assert boilerplate not in text, boilerplate
    # Section ids made from headings ("s-related-...") are content, not boilerplate.
    assert "CsrfViewMiddleware" in text


def test_python_page_has_no_navigation_or_footer():
    document = load(PYTHON, "library/json.html")
    assert document.blocks[:2] == [
        Block("heading", "`json` — JSON encoder and decoder", 1),
        Block(
            "paragraph",
            "**Source code:** Lib/json/__init__.py",
            0,
            ("`json` — JSON encoder and decoder",),
        ),
    ]
    text = document.text
    for boilerplate in (
        "Navigation",
        "Table of Contents",
        "Previous topic",
        "This Page",
        "Report a Bug",
        "Show Source",
        "© Copyright",
        "Python Software Foundation",
        "Last updated on",
        "Quick search",
        "Theme",
    ):
        assert boilerplate not in text, boilerplate


@pytest.mark.parametrize(
    "root,name,kind,reason",
    [
        (PYTHON, "genindex.html", "index", "index page (77% of the text is links, 77% is in items that start with one)"),
        (PYTHON, "genindex-J.html", "index", "index page (95% of the text is links, 95% is in items that start with one)"),
        (PYTHON, "py-modindex.html", "index", "index page (22% of the text is links, 100% is in items that start with one)"),
        (PYTHON, "index.html", "index", "index page (39% of the text is links, 88% is in items that start with one)"),
        (PYTHON, "search.html", "search", "search page (a search form and 12 words of text)"),
        (DJANGO, "genindex.html", "index", "index page (93% of the text is links, 100% is in items that start with one)"),
        (DJANGO, "py-modindex.html", "index", "index page (47% of the text is links, 99% is in items that start with one)"),
        (DJANGO, "topics/http/index.html", "index", "index page (73% of the text is links, 73% is in items that start with one)"),
        (DJANGO, "search.html", "search", "search page (a search form and 12 words of text)"),
        (DJANGO, "_modules/django/middleware/csrf.html", "code", "source code listing (100% of the text is one code listing)"),
        (MARKDOWN, "all-pages.md", "index", "index page (100% of the text is links, 100% is in items that start with one)"),
        (MARKDOWN, "collector.md", "code", "source code listing (100% of the text is one code listing)"),
    ],
)  # fmt: skip
def test_generated_pages_are_told_apart(root, name, kind, reason):
    document = load(root, name)
    assert (document.kind, document.generated) == (kind, reason)


def test_generated_pages_keep_their_links():
    # Kept by choice, an index page keeps the link lists a written page drops.
    document = load(DJANGO, "topics/http/index.html")
    assert (document.title, document.blocks[:2]) == (
        "Handling HTTP requests",
        [
            Block("heading", "Handling HTTP requests", 1),
            Block(
                "paragraph", "Information on handling HTTP requests in Django:", 0,
                ("Handling HTTP requests",),
            ),
        ],
    )
    assert document.blocks[2].kind == "list"
    assert document.blocks[2].text.startswith("- URL dispatcher\n")


def test_markdown_page_drops_navigation_and_table_of_contents():
    document = load(MARKDOWN, "handbook.md")
    top = ("Tidepool handbook",)
    assert document.blocks == [
        Block("heading", "Tidepool handbook", 1),
        # "## Contents" and its links to the sections are gone, and so is the navigation bar.
        Block("heading", "Installing", 2, top),
        Block(
            "paragraph",
            "Tidepool is the time-series store of the field stations. Install it with pip:",
            0,
            top + ("Installing",),
        ),
        Block("code", "pip install tidepool", 0, top + ("Installing",)),
        Block("heading", "Running the collector", 2, top),
        Block(
            "paragraph",
            "The collector polls each station and writes its readings to Tidepool. "
            "See the guide for its options.",
            0,
            top + ("Running the collector",),
        ),
        Block("heading", "Schedules", 3, top + ("Running the collector",)),
        # A list with a link in it is still prose.
        Block(
            "list",
            "- Stations poll every ten minutes.\n"
            "- Basin stations poll every hour because their radios are slow.",
            0,
            top + ("Running the collector", "Schedules"),
        ),
        # Links to other pages are not a table of contents: "See also" stays.
        Block("heading", "See also", 2, top),
        Block("list", "- Collector guide\n- Basin stations", 0, top + ("See also",)),
    ]
    assert (document.title, document.breadcrumbs, document.tags, document.generated) == (
        "Tidepool handbook",
        ["Docs", "Handbook"],
        ["handbook", "tidepool"],
        "",
    )


@pytest.mark.parametrize(
    "title,heading,names,expected",
    [
        # The main heading wins, without its inline markup.
        ("json — JSON encoder and decoder — Python 3.11.x documentation",
         "`json` — JSON encoder and decoder", [], "json — JSON encoder and decoder"),
        ("Heron dashboard - Northwind wiki", "Heron", [], "Heron"),
        # No heading: the part naming the site goes, wherever it is.
        ("json — JSON encoder and decoder — Python 3.11.x documentation", "", [],
         "json — JSON encoder and decoder"),
        ("Northwind wiki | Sonde care", "", ["Northwind wiki"], "Sonde care"),
        ("Sonde care | Northwind wiki", "", [], "Sonde care"),
        ("Sonde care", "", [], "Sonde care"),
        # A heading that is the site's banner is not the page's title.
        ("Middleware — Django 3.2.25 documentation", "Django 3.2.25 documentation",
         ["Django 3.2.25 documentation"], "Middleware"),
        # A generator's placeholder is no title.
        ("<no title> — Python 3.11.2 documentation", "", [], ""),
    ],
)  # fmt: skip
def test_page_title(title, heading, names, expected):
    assert page_title(title, heading, names) == expected


@pytest.mark.parametrize(
    "stats,kind",
    [
        (PageStats(chars=1000, link_chars=700, units=20), "index"),
        (PageStats(chars=1000, link_chars=300, units=20, led_chars=900), "index"),
        # Few items: a short "see also" page is not an index.
        (PageStats(chars=1000, link_chars=300, units=5, led_chars=900), ""),
        # An introduction of 2,000 characters over a long list of links is written.
        (PageStats(chars=6000, link_chars=4000, units=300, led_chars=4000), ""),
        (PageStats(chars=100, code_chars=900, largest_code=900), "code"),
        # Many code blocks with prose between them: an example page, not a listing.
        (PageStats(chars=1000, code_chars=4000, largest_code=500), ""),
        (PageStats(chars=80, words=12, search_form=True), "search"),
        (PageStats(chars=3000, words=500, search_form=True), ""),
        # A short page with a form in it: items and code are more than a search page has.
        (PageStats(chars=200, words=40, units=7, search_form=True), ""),
        (PageStats(chars=150, code_chars=40, largest_code=40, words=30, units=1, search_form=True), ""),
    ],
)
def test_page_kind(stats, kind):
    assert page_kind(stats)[0] == kind


def ingest(args, path):
    result = CliRunner().invoke(
        cli, ["graphrag", "ingest", *args, "-d", str(path), "--no-extract", "--json"],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def docs(path):
    db = open_database(path)
    rows = db.execute("select path, title, meta from docs order by path").fetchall()
    return {
        path.split("/data/", 1)[1]: (title, json.loads(meta)["kind"], json.loads(meta)["breadcrumbs"])
        for path, title, meta in rows
    }


def skipped(data):
    return [(item["path"].split("/data/", 1)[1], item["reason"].split(" (")[0]) for item in data["skipped_files"]]


def test_ingest_skips_generated_pages_with_reasons(tmp_path, user_path):
    path = tmp_path / "docs.db"
    data = ingest([str(DATA / "sphinx"), str(MARKDOWN)], path)
    assert (data["ingested"], data["skipped"], data["errors"]) == (5, 0, [])
    assert skipped(data) == [
        ("markdown-site/all-pages.md", "index page"),
        ("markdown-site/collector.md", "source code listing"),
        ("sphinx/python-django-doc/_modules/django/middleware/csrf.html", "source code listing"),
        ("sphinx/python-django-doc/genindex.html", "index page"),
        ("sphinx/python-django-doc/py-modindex.html", "index page"),
        ("sphinx/python-django-doc/search.html", "search page"),
        ("sphinx/python-django-doc/topics/http/index.html", "index page"),
        ("sphinx/python3.11-doc/genindex-J.html", "index page"),
        ("sphinx/python3.11-doc/genindex.html", "index page"),
        ("sphinx/python3.11-doc/index.html", "index page"),
        ("sphinx/python3.11-doc/py-modindex.html", "index page"),
        ("sphinx/python3.11-doc/search.html", "search page"),
    ]
    assert data["skipped_files"][0]["reason"] == (
        "index page (100% of the text is links, 100% is in items that start with one)"
    )
    assert docs(path) == {
        "markdown-site/handbook.md": ("Tidepool handbook", "general", ["Docs", "Handbook"]),
        # Folder breadcrumbs where the page has no trail of its own.
        "sphinx/python-django-doc/index.html": (
            "Django documentation", "general", ["python-django-doc"],
        ),
        "sphinx/python-django-doc/ref/csrf.html": (
            "Cross Site Request Forgery protection", "general", ["python-django-doc", "ref"],
        ),
        "sphinx/python-django-doc/ref/middleware.html": (
            "Middleware", "general", ["python-django-doc", "ref"],
        ),
        "sphinx/python3.11-doc/library/json.html": (
            "json — JSON encoder and decoder",
            "general",
            PYTHON_CRUMBS + ["The Python Standard Library", "Internet Data Handling"],
        ),
    }
    # Ingested again: the written pages are unchanged, the generated ones skipped again.
    again = ingest([str(DATA / "sphinx"), str(MARKDOWN)], path)
    assert (again["ingested"], again["skipped"], skipped(again)) == (0, 5, skipped(data))


def test_ingest_includes_generated_pages_when_asked(tmp_path, user_path):
    path = tmp_path / "docs.db"
    data = ingest(["--include-source-listings", str(DJANGO), str(MARKDOWN)], path)
    assert skipped(data) == [
        ("markdown-site/all-pages.md", "index page"),
        ("sphinx/python-django-doc/genindex.html", "index page"),
        ("sphinx/python-django-doc/py-modindex.html", "index page"),
        ("sphinx/python-django-doc/search.html", "search page"),
        ("sphinx/python-django-doc/topics/http/index.html", "index page"),
    ]
    stored = docs(path)
    assert stored["sphinx/python-django-doc/_modules/django/middleware/csrf.html"] == (
        "Source code for django.middleware.csrf", "code", ["_modules", "django", "middleware"],
    )
    assert stored["markdown-site/collector.md"] == ("collector.py", "code", [])
    data = ingest(["--include-index-pages", str(DJANGO), str(MARKDOWN)], path)
    # The source listings stored before are left out now, and deleted.
    assert skipped(data) == [
        ("markdown-site/collector.md", "source code listing"),
        ("sphinx/python-django-doc/_modules/django/middleware/csrf.html", "source code listing"),
    ]
    stored = docs(path)
    assert {name: value[:2] for name, value in stored.items()} == {
        "markdown-site/all-pages.md": ("All pages", "index"),
        "markdown-site/handbook.md": ("Tidepool handbook", "general"),
        "sphinx/python-django-doc/genindex.html": ("Index", "index"),
        "sphinx/python-django-doc/index.html": ("Django documentation", "general"),
        "sphinx/python-django-doc/py-modindex.html": ("Python Module Index", "index"),
        "sphinx/python-django-doc/ref/csrf.html": ("Cross Site Request Forgery protection", "general"),
        "sphinx/python-django-doc/ref/middleware.html": ("Middleware", "general"),
        "sphinx/python-django-doc/search.html": ("Search", "search"),
        "sphinx/python-django-doc/topics/http/index.html": ("Handling HTTP requests", "index"),
    }


INSTALLED_DJANGO = pathlib.Path("/usr/share/doc/python-django-doc/html")


@pytest.mark.skipif(not INSTALLED_DJANGO.is_dir(), reason="apt-get install python-django-doc")
def test_installed_django_documentation():
    """Over Debian's whole python-django-doc: no page is titled after the site."""
    titles, generated = [], {}
    for page in sorted(INSTALLED_DJANGO.rglob("*.html")):
        document = load_document(page, root=INSTALLED_DJANGO)
        name = page.relative_to(INSTALLED_DJANGO).as_posix()
        if document.generated:
            generated[name] = document.kind
        else:
            titles.append(document.title)
    assert "Django 3.2.25 documentation" not in titles
    assert len(set(titles)) >= 0.98 * len(titles)
    listings = {name for name, kind in generated.items() if kind == "code"}
    assert listings == {
        page.relative_to(INSTALLED_DJANGO).as_posix()
        for page in (INSTALLED_DJANGO / "_modules").rglob("*.html")
    } - {"_modules/index.html"}
    assert (generated["genindex.html"], generated["py-modindex.html"], generated["search.html"]) == (
        "index", "index", "search",
    )
    assert generated["_modules/index.html"] == "index"


def test_ingest_docs_tool_takes_the_kinds_to_include(tmp_path, user_path):
    import jsonschema

    from llm_graphrag.tools import TOOLS, ToolInputError, call_tool

    db = open_database(tmp_path / "docs.db")
    arguments = {"paths": [str(MARKDOWN)], "extract": False, "include": ["code"]}
    data = call_tool(db, "ingest_docs", arguments)
    jsonschema.validate(data, TOOLS["ingest_docs"].output_schema)
    assert (data["ingested"], data["skipped_files"]) == (
        2,
        [
            {
                "path": str(MARKDOWN / "all-pages.md"),
                "reason": "index page (100% of the text is links, "
                "100% is in items that start with one)",
            }
        ],
    )
    with pytest.raises(ToolInputError) as error:
        call_tool(db, "ingest_docs", {"paths": [str(MARKDOWN)], "include": ["toc"]})
    assert str(error.value) == "ingest_docs: include.0: 'toc' is not one of ['index', 'search', 'code']"


def test_ingest_docs_rejects_unknown_kinds(tmp_path, user_path):
    from llm_graphrag.ingest import ingest_docs

    with pytest.raises(ValueError) as error:
        ingest_docs(open_database(tmp_path / "docs.db"), [str(MARKDOWN)], include=["toc"])
    assert str(error.value) == "unknown page kinds to include: toc; choose from index, search, code"


def test_html_table_of_contents_and_navigation_bar_go_see_also_stays():
    page = b"""<html><head><title>Sonde care | Northwind wiki</title></head><body>
    <p><a href="/">Home</a> | <a href="/guides">Guides</a> | <a href="/teams">Teams</a></p>
    <h1>Sonde care</h1>
    <h2>On this page</h2>
    <ul><li><a href="#rinse">Rinsing</a></li><li><a href="#store">Storing</a></li></ul>
    <h2 id="rinse">Rinsing</h2>
    <p>Rinse the sonde after every visit.</p>
    <h2>See also</h2>
    <ul><li><a href="heron.html">Heron</a></li><li><a href="basin.html">Basin</a></li></ul>
    </body></html>"""
    document = load_document("sonde.html", data=page)
    assert document.blocks == [
        Block("heading", "Sonde care", 1),
        Block("heading", "Rinsing", 2, ("Sonde care",)),
        Block("paragraph", "Rinse the sonde after every visit.", 0, ("Sonde care", "Rinsing")),
        Block("heading", "See also", 2, ("Sonde care",)),
        Block("list", "- Heron\n- Basin", 0, ("Sonde care", "See also")),
    ]
    assert (document.title, document.kind, document.generated) == ("Sonde care", "general", "")
