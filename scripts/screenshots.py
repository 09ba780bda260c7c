"""Regenerate the README's screenshots of the Datasette pages into docs/.

Ingests the bundled sample corpus into a temporary database (or uses ``-d``), serves it
with Datasette on a free local port and photographs, in Debian's chromium through
Playwright: the database page, an entity page, the graph explorer after expanding two
entities, and the ``hybrid_search`` canned query.

Example usage:
    python scripts/screenshots.py
    python scripts/screenshots.py -d graphrag.db --out docs
"""

import argparse
import contextlib
import pathlib
import socket
import sys
import tempfile
import threading
import time
import urllib.parse

ROOT = pathlib.Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
ENTITY = "tidepool"  # the sample corpus's storage engine, with plenty of relations
QUERY = "How does tidepool compaction work?"


@contextlib.contextmanager
def served(path):
    """Datasette serving ``path`` in a thread (uvicorn), yielding its base URL."""
    import uvicorn
    from datasette.app import Datasette

    datasette = Datasette([str(path)])
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(datasette.app(), log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("Datasette did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def ensure_database(path):
    from llm_graphrag.db import open_database
    from llm_graphrag.ingest import ingest_docs

    db = open_database(path)
    if not db["docs"].count:
        ingest_docs(db, [str(ROOT / "sample-corpus")])
    db.close()


def photograph(base, database, out):
    """Save the four pages as PNGs into ``out``; return their paths."""
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    saved = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 860})

        def shot(name, full_page=False):
            path = out / f"{name}.png"
            page.screenshot(path=str(path), full_page=full_page)
            saved.append(path)

        page.goto(f"{base}/{database}")
        shot("database")
        page.goto(f"{base}/{database}/-/graphrag/explore?entity={ENTITY}")
        page.wait_for_selector("#graphrag-panel h2")
        first = page.locator(".graphrag-node.graphrag-selected").get_attribute("data-entity-id")
        # Expand the best connected neighbour too
        neighbour = page.evaluate(
            """() => {
                const counts = {};
                document.querySelectorAll('.graphrag-edge').forEach(e => {
                    for (const key of [e.dataset.source, e.dataset.target]) counts[key] = (counts[key] || 0) + 1;
                });
                const selected = document.querySelector('.graphrag-node.graphrag-selected').dataset.key;
                return Object.keys(counts).filter(k => k !== selected && k.startsWith('entity:'))
                    .sort((a, b) => counts[b] - counts[a])[0].split(':')[1];
            }"""
        )
        page.locator(f'.graphrag-node[data-entity-id="{neighbour}"]').focus()
        page.keyboard.press("Enter")
        page.wait_for_function(
            f"document.querySelector('.graphrag-node.graphrag-selected')?.dataset.entityId === '{neighbour}'"
            " && !document.querySelector('#graphrag-panel .graphrag-loading')"
        )
        page.wait_for_function("!window.graphragExplorer.layout.running", timeout=30000)
        shot("explorer")
        page.goto(f"{base}/{database}/-/graphrag/entity/{first}")
        shot("entity")
        page.goto(f"{base}/{database}/hybrid_search?" + urllib.parse.urlencode({"_hide_sql": 1, "q": QUERY}))
        shot("canned-query")
        browser.close()
    return saved


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-d", "--database", help="A graphrag database (default: the sample corpus, ingested)")
    parser.add_argument("--out", default=str(ROOT / "docs"), help="Folder for the PNGs (default: docs/)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(args.database or pathlib.Path(tmp) / "graphrag.db")
        ensure_database(path)
        with served(path) as base:
            for saved in photograph(base, path.stem, pathlib.Path(args.out)):
                print(saved)


if __name__ == "__main__":
    sys.exit(main())
