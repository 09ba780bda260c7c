import hashlib
import io
import os
import pathlib
import sys

import pytest

from llm_graphrag import plugins
from llm_graphrag.hookspecs import hookimpl
from llm_graphrag.chunking import chunk_document
from llm_graphrag.default_plugins import loaders as default_loaders
from llm_graphrag.default_plugins.loaders import md_inline, rst_inline
from llm_graphrag.loaders import (
    Block,
    LoadedDocument,
    LoadError,
    expand_paths,
    guess_kind,
    guess_language,
    load_document,
    supported_suffixes,
)

DATA = pathlib.Path(__file__).parent / "data" / "loaders"
ROOT = DATA


def B(kind, text, level=0, headings=()):
    return Block(kind, text, level, headings)


def load(relative, **kwargs):
    return load_document(DATA / relative, root=ROOT, **kwargs)


def test_registries_hold_the_default_loaders_and_chunker():
    loaders = plugins.get_loaders()
    assert loaders[".md"] is default_loaders.load_markdown
    assert loaders[".rst.txt"] is default_loaders.load_rst
    assert loaders[".htm"] is default_loaders.load_html
    assert plugins.get_chunkers()["default"] is chunk_document
    assert supported_suffixes() == {
        ".md", ".markdown", ".mdown", ".mkd", ".txt", ".text", ".rst", ".rest", ".rst.txt",
        ".html", ".htm", ".xhtml", ".pdf", ".docx",
    }  # fmt: skip


def test_markdown_document():
    path = DATA / "wiki" / "ops" / "deploy.md"
    document = load("wiki/ops/deploy.md")
    raw = path.read_bytes()
    h1 = ("Deploying ingest-gateway",)
    assert document.blocks == [
        B("heading", "Deploying ingest-gateway", 1),
        B(
            "paragraph",
            "The **ingest-gateway** receives readings over MQTT and writes them to tidepool. "
            "This page is for the on-call engineer; see https://wiki.example/ops for the rest.",
            0,
            h1,
        ),
        B("heading", "Before you start", 2, h1),
        B(
            "list",
            "- Shell access to `gw-01` and `gw-02`.\n- The `operator` role in Heron:\n"
            "  - ask in `#platform` if you lack it.\n- A quiet hour (no open incident).",
            0,
            h1 + ("Before you start",),
        ),
        B("heading", "Steps", 2, h1),
        B(
            "list",
            "1. Drain the first host:\n  ```bash\n  gatewayctl drain gw-01\n  ```\n"
            "2. Deploy with `deployctl rollout gateway --host gw-01`.\n3. Check the spool.",
            0,
            h1 + ("Steps",),
        ),
        B(
            "table",
            "host | role | spool limit\ngw-01 | primary | 2 GiB\ngw-02 | standby | 2 GiB",
            0,
            h1 + ("Steps",),
        ),
        B(
            "quote",
            "Never deploy both hosts at once. The stations buffer for 72 hours, but do not test that.",
            0,
            h1 + ("Steps",),
        ),
        B("code", "curl -s localhost:9100/metrics", 0, h1 + ("Steps",)),
        B(
            "paragraph",
            "**Rollback**: Run `deployctl rollback gateway`; it takes about two minutes.",
            0,
            h1 + ("Steps",),
        ),
        B("heading", "After the deploy", 3, h1 + ("Steps",)),
        B(
            "paragraph",
            "Post a note in `#platform` with the version, as described in **the deploy log** guide.",
            0,
            h1 + ("Steps", "After the deploy"),
        ),
    ]
    assert (document.path, document.relpath, document.format) == (
        str(path),
        "wiki/ops/deploy.md",
        "md",
    )
    assert (document.title, document.tags, document.kind, document.lang) == (
        "Deploying the gateway",
        ["deploy", "gateway"],
        "general",
        "en",
    )
    assert document.breadcrumbs == ["wiki", "ops"]
    assert document.hash == hashlib.sha256(raw).hexdigest()
    assert document.size == len(raw)
    assert document.mtime_ms == int(path.stat().st_mtime * 1000)


def test_text_document():
    document = load("wiki/ops/oncall.txt")
    top = ("ON-CALL HANDBOOK",)
    assert document.blocks == [
        B("heading", "ON-CALL HANDBOOK", 1),
        B("paragraph", "Platform team", 0, top),
        B("paragraph", "Owner: Platform team\nReviewed: 2024-06-12", 0, top),
        B("heading", "Paging", 2, top),
        B(
            "paragraph",
            "Beacon pages the primary on-call engineer first. If nobody acknowledges within "
            "ten minutes, the secondary is paged.",
            0,
            top + ("Paging",),
        ),
        B(
            "list",
            "- Acknowledge in Beacon.\n- Open a channel in chat and post the alert link.",
            0,
            top + ("Paging",),
        ),
        B("heading", "ESCALATION", 3, top + ("Paging",)),
        B(
            "list",
            "1. Page the service owner.\n2. Page the Platform lead.",
            0,
            top + ("Paging", "ESCALATION"),
        ),
        B("code", "beaconctl page --team platform", 0, top + ("Paging", "ESCALATION")),
    ]
    assert (document.format, document.title, document.tags, document.lang) == (
        "txt",
        "ON-CALL HANDBOOK",
        [],
        "en",
    )


def test_rst_document():
    document = load("wiki/reference.rst")
    top = ("riffle API reference",)
    reading = top + ("Reading data",)
    options = reading + ("Options",)
    assert document.blocks == [
        B("heading", "riffle API reference", 1),
        B("heading", "Reading data", 2, top),
        B(
            "paragraph",
            "Use `riffle.read` or `riffle.Client.read` to fetch a series, as described in the "
            "tutorial and PEP 8. Pass `station` and `sensor` (see the API docs and Northwind).",
            0,
            reading,
        ),
        B(
            "paragraph",
            "`read(station, sensor, start=None)`\n`read_many(stations, sensor)`",
            0,
            reading,
        ),
        B("paragraph", "Return an Arrow table for station.", 0, reading),
        B("paragraph", "New in version 0.9.", 0, reading),
        B("paragraph", "Changed in version 0.9.2: Accepts `datetime` objects.", 0, reading),
        B("paragraph", "Note: Naive datetimes raise **NaiveTimeError**.", 0, reading),
        B("paragraph", "Example:", 0, reading),
        B("code", 'import riffle\ntable = riffle.read("AC-01", "turbidity")', 0, reading),
        B("code", 'riffle.read("LO-02", "temp", every="1h")', 0, reading),
        B("heading", "Options", 3, reading),
        B(
            "list",
            "- `every` -- bucket width.\n- `agg` -- one of:\n  - `mean`\n  - `max`",
            0,
            options,
        ),
        B("list", "1. Open a client.\n2. Read a series.", 0, options),
        B("table", "aggregate | meaning\nmean | average\nlast | latest value", 0, options),
        B("table", "Flag | Meaning\ngood | checked and valid", 0, options),
        B("paragraph", "station: A site with sensors.", 0, options),
        B("paragraph", "Stations are listed in Heron.", 0, options),
    ]
    assert (document.format, document.title, document.tags, document.breadcrumbs) == (
        "rst",
        "riffle API reference",
        ["reference", "riffle"],
        ["wiki"],
    )


def test_html_document_drops_boilerplate():
    document = load("wiki/heron.html")
    top = ("Heron",)
    use = top + ("What people use it for",)
    assert document.blocks == [
        B("heading", "Heron", 1),
        B(
            "paragraph",
            "**Heron** is the web dashboard. It reads from tidepool through `riffle` & caches nothing.",
            0,
            top,
        ),
        B("heading", "What people use it for", 2, top),
        B(
            "list",
            "1. Live charts per station.\n2. Annotations:\n  - manual notes\n  - alert notes from Basin",
            0,
            use,
        ),
        B("code", "GET /api/v2/stations\nGET /api/v2/series?station=AC-01", 0, use),
        B("table", "Role | May\nviewer | view charts", 0, use),
        B("quote", "Heron never writes readings.", 0, use),
    ]
    assert (document.format, document.title, document.tags, document.lang) == (
        "html",
        "Heron",
        ["heron", "dashboard"],
        "en",
    )
    # The breadcrumb trail of the page, without the page itself.
    assert document.breadcrumbs == ["Home", "Services"]


def test_html_title_falls_back_to_title_tag_without_site_name():
    document = load_document(
        "page.html",
        data=b"<html><head><title>Sonde care | Northwind wiki</title></head>"
        b"<body><p>Rinse the sonde after every visit.</p></body></html>",
    )
    assert (document.title, document.blocks) == (
        "Sonde care",
        [B("paragraph", "Rinse the sonde after every visit.")],
    )


def test_html_declared_charset_is_used():
    data = '<html><head><meta charset="iso-8859-1"></head><body><p>Café station</p></body></html>'
    document = load_document("cafe.html", data=data.encode("latin-1"))
    assert document.blocks == [B("paragraph", "Café station")]


def test_utf16_with_byte_order_mark():
    document = load_document("notes.md", data="# Notes\n\nUTF-16 text.\n".encode("utf-16"))
    assert document.blocks == [
        B("heading", "Notes", 1),
        B("paragraph", "UTF-16 text.", 0, ("Notes",)),
    ]


def test_document_text_renders_markdown():
    document = LoadedDocument(
        path="/x.md",
        format="md",
        blocks=[
            B("heading", "Title", 1),
            B("paragraph", "Intro."),
            B("heading", "Part", 2),
            B("code", "x = 1"),
            B("quote", "one\ntwo"),
            B("list", "- a\n- b"),
        ],
    )
    assert (
        document.text
        == "# Title\n\nIntro.\n\n## Part\n\n```\nx = 1\n```\n\n> one\n> two\n\n- a\n- b"
    )


def test_rst_txt_files_use_the_rst_loader(tmp_path):
    path = tmp_path / "library" / "json.rst.txt"
    path.parent.mkdir()
    path.write_text(
        ":mod:`json` --- JSON encoder\n============================\n\nUse :func:`json.dumps`.\n"
    )
    document = load_document(path)
    assert (document.format, document.title, document.relpath, document.breadcrumbs) == (
        "rst",
        "`json` — JSON encoder",
        str(path),
        [tmp_path.name, "library"],
    )
    assert document.blocks == [
        B("heading", "`json` — JSON encoder", 1),
        B("paragraph", "Use `json.dumps`.", 0, ("`json` — JSON encoder",)),
    ]


@pytest.mark.parametrize(
    "name,reason",
    [
        (
            "readings.md",
            "binary content (a NUL byte at offset 8), not a text document; remove it from "
            "the ingest paths or convert it to text",
        ),
        ("latin1.txt", "not valid UTF-8 (byte 0xe9 at offset 11); re-save the file as UTF-8"),
        (
            "empty.txt",
            "the file is empty or only whitespace; add some text or leave it out of the ingest",
        ),
        (
            "broken.html",
            "no readable text in this HTML (malformed markup, or only scripts and navigation); "
            "check the file in a browser",
        ),
    ],
)
def test_bad_files_raise_load_error(name, reason):
    with pytest.raises(LoadError) as error:
        load_document(DATA / "bad" / name)
    assert str(error.value) == reason


def test_broken_docx_raises_load_error():
    pytest.importorskip("docx")
    with pytest.raises(LoadError) as error:
        load_document(DATA / "bad" / "broken.docx")
    assert str(error.value) == (
        "not a readable .docx file (BadZipFile); check that it opens in a word processor"
    )


def test_broken_pdf_raises_load_error():
    pytest.importorskip("pypdf")
    with pytest.raises(LoadError) as error:
        load_document(DATA / "bad" / "broken.pdf")
    assert str(error.value).startswith("not a readable PDF (")
    assert str(error.value).endswith("); check that the file is a complete PDF")


def test_unreadable_file(tmp_path, monkeypatch):
    path = tmp_path / "secret.md"
    path.write_text("# Secret\n")

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("builtins.open", refuse)
    with pytest.raises(LoadError) as error:
        load_document(path)
    assert str(error.value) == (
        "permission denied when reading the file; make it readable (chmod +r) or leave it out"
    )


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads any file")
def test_unreadable_file_by_permissions(tmp_path):
    path = tmp_path / "secret.md"
    path.write_text("# Secret\n")
    path.chmod(0)
    with pytest.raises(LoadError) as error:
        load_document(path)
    assert "permission denied" in str(error.value)


def test_missing_folder_and_unsupported_paths(tmp_path):
    with pytest.raises(LoadError) as error:
        load_document(tmp_path / "nope.md")
    assert str(error.value) == "no such file; check the path"
    folder = tmp_path / "folder.md"
    folder.mkdir()
    with pytest.raises(LoadError) as error:
        load_document(folder)
    assert str(error.value) == "this is a folder, not a file; pass the folder to ingest instead"
    with pytest.raises(LoadError) as error:
        load_document(tmp_path / "photo.jpg", data=b"\xff\xd8")
    assert str(error.value).startswith("unsupported file type '.jpg'; graphrag loads .docx, .htm, ")


def test_pdf_and_docx_without_their_extras(monkeypatch):
    monkeypatch.setitem(sys.modules, "pypdf", None)
    monkeypatch.setitem(sys.modules, "docx", None)
    with pytest.raises(LoadError) as error:
        load_document("report.pdf", data=b"%PDF-1.4")
    assert (
        str(error.value)
        == "PDF support is not installed; run pip install 'datasette-graphrag[pdf]'"
    )
    with pytest.raises(LoadError) as error:
        load_document("report.docx", data=b"PK")
    assert (
        str(error.value)
        == "DOCX support is not installed; run pip install 'datasette-graphrag[docx]'"
    )


def _pdf_bytes(pages):
    """A minimal text PDF: one Helvetica line per string, one list of strings per page."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        None,
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    kids = []
    for lines in pages:
        ops = ["BT /F1 11 Tf 14 TL 72 760 Td"]
        ops += ["({}) Tj T*".format(line.replace("(", "\\(").replace(")", "\\)")) for line in lines]
        ops.append("ET")
        stream = "\n".join(ops).encode("latin-1")
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % len(objects)
        )
        kids.append(b"%d 0 R" % len(objects))
    objects[1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(kids), len(kids))
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n%s\nendobj\n" % (number, body))
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    out.write(b"".join(b"%010d 00000 n \n" % offset for offset in offsets))
    out.write(
        b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    )
    return out.getvalue()


def test_pdf_document(tmp_path):
    pypdf = pytest.importorskip("pypdf")
    reader = pypdf.PdfReader(
        io.BytesIO(
            _pdf_bytes(
                [
                    [
                        "Field visits",
                        "Every station is visited twice a year by the Field Operations",
                        "team. The visit checks sensors and batteries.",
                        "1. Clean the sonde.",
                        "2. Replace the desiccant.",
                        "Safety",
                    ],
                    ["Never work alone near", "a weir in high water."],
                ]
            )
        )
    )
    writer = pypdf.PdfWriter(clone_from=reader)
    writer.add_outline_item(title="Field visits", page_number=0)
    writer.add_outline_item(title="Safety", page_number=0)
    writer.add_metadata({"/Title": "Field visit guide", "/Keywords": "field, safety"})
    path = tmp_path / "visits.pdf"
    with open(path, "wb") as fp:
        writer.write(fp)
    document = load_document(path, root=tmp_path)
    assert document.blocks == [
        B("heading", "Field visits", 1),
        B(
            "paragraph",
            "Every station is visited twice a year by the Field Operations team. "
            "The visit checks sensors and batteries.",
            0,
            ("Field visits",),
        ),
        B("list", "1. Clean the sonde.\n2. Replace the desiccant.", 0, ("Field visits",)),
        B("heading", "Safety", 1),
        B("paragraph", "Never work alone near a weir in high water.", 0, ("Safety",)),
    ]
    assert (document.format, document.title, document.tags, document.breadcrumbs) == (
        "pdf",
        "Field visit guide",
        ["field", "safety"],
        [],
    )


def test_docx_document(tmp_path):
    docx = pytest.importorskip("docx")
    word = docx.Document()
    word.core_properties.title = "Sonde maintenance"
    word.core_properties.keywords = "sonde; maintenance"
    word.add_heading("Sonde maintenance", level=1)
    paragraph = word.add_paragraph("Sondes drift. ")
    paragraph.add_run("Calibrate monthly").bold = True
    paragraph.add_run(" and log it.")
    word.add_heading("Procedure", level=2)
    word.add_paragraph("Rinse the sensors.", style="List Number")
    word.add_paragraph("Calibrate turbidity.", style="List Number")
    word.add_paragraph("Check the wiper.", style="List Bullet")
    for command in ("sondectl calibrate --sensor turbidity", "sondectl log"):
        word.add_paragraph().add_run(command).font.name = "Courier New"
    word.add_paragraph("Readings after calibration are flagged good.", style="Intense Quote")
    table = word.add_table(rows=2, cols=2)
    for (row, column), text in {
        (0, 0): "Sensor",
        (0, 1): "Interval",
        (1, 0): "turbidity",
        (1, 1): "monthly",
    }.items():
        table.cell(row, column).text = text
    path = tmp_path / "sonde.docx"
    word.save(path)
    document = load_document(path)
    top = ("Sonde maintenance",)
    steps = top + ("Procedure",)
    assert document.blocks == [
        B("heading", "Sonde maintenance", 1),
        B("paragraph", "Sondes drift. **Calibrate monthly** and log it.", 0, top),
        B("heading", "Procedure", 2, top),
        B("list", "1. Rinse the sensors.\n2. Calibrate turbidity.", 0, steps),
        B("list", "- Check the wiper.", 0, steps),
        B("code", "sondectl calibrate --sensor turbidity\nsondectl log", 0, steps),
        B("quote", "Readings after calibration are flagged good.", 0, steps),
        B("table", "Sensor | Interval\nturbidity | monthly", 0, steps),
    ]
    assert (document.format, document.title, document.tags) == (
        "docx",
        "Sonde maintenance",
        ["sonde", "maintenance"],
    )


def test_expand_paths(tmp_path):
    (tmp_path / "docs" / "guides").mkdir(parents=True)
    (tmp_path / "docs" / ".git").mkdir()
    for name in ["docs/a.md", "docs/guides/b.rst", "docs/guides/c.rst.txt", "docs/.git/d.md",
                 "docs/.hidden.md", "docs/image.png", "other.html", "notes.txt"]:  # fmt: skip
        (tmp_path / name).write_text("text")
    files, errors = expand_paths(
        [
            str(tmp_path / "docs"),
            str(tmp_path / "**" / "*.html"),
            str(tmp_path / "notes.txt"),
            str(tmp_path / "docs" / "a.md"),  # named twice: listed once
            str(tmp_path / "missing"),
            str(tmp_path / "*.pdf"),
            str(tmp_path / "docs" / "image.png"),
        ]
    )
    assert [str(f.relative_to(tmp_path)) for f in files] == [
        "docs/a.md",
        "docs/guides/b.rst",
        "docs/guides/c.rst.txt",
        "notes.txt",
        "other.html",
    ]
    assert errors[:2] == [
        {"path": str(tmp_path / "missing"), "error": "no such file or directory"},
        {"path": str(tmp_path / "*.pdf"), "error": "no files match this pattern"},
    ]
    assert errors[2]["path"] == str(tmp_path / "docs" / "image.png")
    assert errors[2]["error"].startswith("unsupported file type '.png'; graphrag loads ")
    assert len(errors) == 3


def test_front_matter_sets_kind_and_language():
    document = load_document(
        "terms.md",
        data=b"---\nkind: faq\nlang: de\nkeywords: a, b\n---\n# Terms\n\nA short page about terms.\n",
    )
    assert (document.kind, document.lang, document.tags, document.title) == (
        "faq",
        "de",
        ["a", "b"],
        "Terms",
    )


@pytest.mark.parametrize(
    "blocks,title,expected",
    [
        ([B("paragraph", "Anything.")], "Glossary of terms", "faq"),
        (
            [B("heading", "FAQ-less title", 1)]
            + [B("heading", f"Why does {n} happen?", 2) for n in range(3)]
            + [B("heading", "Other", 2)],
            "Help",
            "faq",
        ),
        ([B("paragraph", f"**Term {n}**: meaning {n}.") for n in range(3)], "Words", "faq"),
        ([B("list", "\n".join(f"{n}. Do step {n}." for n in range(1, 6)))], "Notes", "procedure"),
        (
            [
                B("paragraph", "Step 1: Stop."),
                B("paragraph", "Step 2: Start."),
                B("paragraph", "Step 3: Check."),
            ]
            + [B("paragraph", "Long background text " * 20)],
            "Runbook: restart",
            "procedure",
        ),
        (
            [B("list", "\n".join(f"{n}. Rule {n}." for n in range(1, 6)))]
            + [B("paragraph", "Background " * 100)],
            "Policy",
            "general",
        ),
    ],
)
def test_guess_kind(blocks, title, expected):
    assert guess_kind(blocks, title, "/docs/page.md") == expected


@pytest.mark.parametrize(
    "text,expected",
    [
        ("The station sends its readings to the gateway, which is owned by the team.", "en"),
        ("Die Station sendet die Messwerte an das Gateway, und das ist nicht neu.", "de"),
        ("La station envoie les mesures vers la passerelle, qui est dans le réseau.", "fr"),
        ("El sensor envía los datos de la estación por la red, que es muy lenta.", "es"),
        ("x = f(y) + 2", ""),
    ],
)
def test_guess_language(text, expected):
    assert guess_language(text) == expected


@pytest.mark.parametrize(
    "text,expected",
    [
        ("See :func:`os.path.join` and :meth:`~dict.get`.", "See `os.path.join` and `dict.get`."),
        (":ref:`Reading <reading-data>` and :doc:`intro`", "Reading and intro"),
        (":pep:`8`, :rfc:`3339`, :gh:`101` and :issue:`12`", "PEP 8, RFC 3339, gh-101 and bpo-12"),
        ("``*args`` and ``**kwargs`` stay code", "`*args` and `**kwargs` stay code"),
        ("*emphasis* and **strong**", "emphasis and **strong**"),
        ("`Heron <https://heron.example>`_ and `tidepool`_", "Heron and tidepool"),
        ("a footnote [#]_ and a note [1]_.", "a footnote and a note."),
        ("default `role` text and an escaped \\*star", "default `role` text and an escaped *star"),
        ("two  spaces", "two spaces"),
    ],
)
def test_rst_inline(text, expected):
    assert rst_inline(text) == expected


@pytest.mark.parametrize(
    "text,expected",
    [
        ("[riffle](../riffle.md) and ![logo](logo.png)", "riffle and logo"),
        ("`a [b](c)` stays", "`a [b](c)` stays"),
        ("__bold__ *em* _em_ ~~gone~~", "**bold** em em gone"),
        ("a <span class='x'>tag</span> &amp; \\*escaped\\*", "a tag & *escaped*"),
        ("snake_case_name stays", "snake_case_name stays"),
    ],
)
def test_md_inline(text, expected):
    assert md_inline(text) == expected


def test_documents_without_text():
    with pytest.raises(LoadError) as error:
        load_document("draft.md", data=b"---\ntitle: Draft\ntags: [wip]\n---\n\n<!-- todo -->\n")
    assert str(error.value) == "no text found in the file; check that it is not empty or broken"
    with pytest.raises(LoadError) as error:
        load_document("index.rst", data=b".. toctree::\n\n   intro\n\n.. a comment\n")
    assert str(error.value) == "no text found in the file; check that it is not empty or broken"


class CsvPlugin:
    """A third-party loader for .csv, and a replacement for the .txt loader."""

    __name__ = "CsvPlugin"

    @staticmethod
    def load_csv(path, data):
        rows = data.decode("utf-8").strip().split("\n")
        return LoadedDocument(path=path, format="csv", blocks=[Block("table", "\n".join(rows))])

    @staticmethod
    def load_broken(path, data):
        raise ValueError("unbalanced quotes")

    @hookimpl
    def register_loaders(self, register):
        register([".csv"], self.load_csv)
        register([".txt"], self.load_broken)


def test_plugin_loaders(tmp_path):
    plugin = CsvPlugin()
    plugins.pm.register(plugin, name="csv-test")
    try:
        assert ".csv" in supported_suffixes()
        document = load_document("stations.csv", data=b"code,river\nAC-01,Orrin\n")
        assert (document.format, document.blocks, document.title, document.kind) == (
            "csv",
            [Block("table", "code,river\nAC-01,Orrin")],
            "stations",
            "general",
        )
        # A loader that fails in an unexpected way still gives a LoadError.
        with pytest.raises(LoadError) as error:
            load_document("notes.txt", data=b"Some notes.")
        assert str(error.value) == (
            "could not be parsed (ValueError: unbalanced quotes); check that the file is a "
            "valid .txt document"
        )
    finally:
        plugins.pm.unregister(name="csv-test")
    assert ".csv" not in supported_suffixes()
    assert load_document("notes.txt", data=b"Some notes.").format == "txt"
