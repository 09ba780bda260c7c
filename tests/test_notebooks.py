"""Every notebook in notebooks/ runs top to bottom against a real database, and is
committed without outputs.

Each notebook's cell tagged ``parameters`` is followed by a cell that overrides them (as
papermill does): the database goes to a temporary folder, and the evaluation notebook runs
on small files cut from the QASC file the repository ships (all its gold sentences plus
others) so that the suite stays quick.
"""

import json
import pathlib
import re

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = pathlib.Path(__file__).parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
QASC = ROOT / "eval" / "qasc-dev.json"
MULTIRC = ROOT.parent / "shared" / "eval" / "multirc-dev.json"


def test_the_three_notebooks_exist():
    assert [p.name for p in NOTEBOOKS] == [
        "01-quickstart.ipynb",
        "02-graph-in-sql.ipynb",
        "03-evaluation.ipynb",
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_without_outputs(path):
    book = nbformat.read(path, as_version=4)
    nbformat.validate(book)
    code = [cell for cell in book.cells if cell.cell_type == "code"]
    assert [(c.outputs, c.execution_count) for c in code] == [([], None)] * len(code)
    assert [c for c in book.cells if "parameters" in c.metadata.get("tags", [])]


def test_readme_names_files_a_fresh_clone_has():
    readme = (ROOT / "README.md").read_text()
    evaluated = re.findall(r"^llm graphrag eval (\S+)", readme, re.M)
    pictures = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", readme)
    assert evaluated == ["eval/qasc-dev.json", "eval/python-docs-qa.json"]
    assert sorted(pictures) == ["docs/explorer.png", "docs/recall-at-k.png"]
    assert [(ROOT / p).is_file() for p in evaluated + pictures] == [True] * 4
    assert (ROOT / "scripts" / "notebook_figure.py").is_file()


def small_eval_file(source, folder, questions=15, others=150):
    """The first ``questions`` of ``source`` over their gold sentences and ``others`` more."""
    data = json.loads(source.read_text())
    queries = data["queries"][:questions]
    keep = sorted({g for q in queries for g in q["gold"]} | set(range(others)))
    index = {old: new for new, old in enumerate(keep)}
    small = {
        "corpus": [data["corpus"][i] for i in keep],
        "queries": [dict(q, gold=[index[g] for g in q["gold"]]) for q in queries],
    }
    path = folder / source.name
    path.write_text(json.dumps(small))
    return path


def run(path, tmp_path, **parameters):
    """Execute the notebook at ``path`` in its folder with ``parameters`` overridden."""
    book = nbformat.read(path, as_version=4)
    at = next(
        i for i, cell in enumerate(book.cells) if "parameters" in cell.metadata.get("tags", [])
    )
    overrides = "\n".join(f"{name} = {value!r}" for name, value in parameters.items())
    book.cells.insert(at + 1, nbformat.v4.new_code_cell(overrides))
    NotebookClient(
        book, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    ).execute()
    return book


def outputs(book, mime):
    return [
        output["data"][mime]
        for cell in book.cells
        if cell.cell_type == "code"
        for output in cell.outputs
        if mime in output.get("data", {})
    ]


def printed(book):
    return "".join(
        output.get("text", "")
        for cell in book.cells
        if cell.cell_type == "code"
        for output in cell.outputs
        if output["output_type"] == "stream"
    )


@pytest.fixture(scope="module")
def database(tmp_path_factory):
    """One database the first two notebooks share (the second finds the corpus ingested)."""
    return str(tmp_path_factory.mktemp("notebooks") / "graphrag.db")


def test_quickstart(database, tmp_path):
    book = run(ROOT / "notebooks" / "01-quickstart.ipynb", tmp_path, DATABASE=database)
    svgs = outputs(book, "image/svg+xml")
    assert len(svgs) == 2  # the subgraph and the path
    assert all(svg.startswith("<svg xmlns") and svg.count('class="node"') >= 2 for svg in svgs)
    tables = outputs(book, "text/html")
    assert any("dams-and-reservoirs.md" in html for html in tables)
    assert "graph LR" in printed(book)


def test_graph_in_sql(database, tmp_path):
    book = run(ROOT / "notebooks" / "02-graph-in-sql.ipynb", tmp_path, DATABASE=database)
    assert len(outputs(book, "image/png")) == 2  # degree distribution and typed relations
    text = printed(book)
    assert "components; the largest holds" in text
    assert "typed relations only:" in text
    html = "".join(outputs(book, "text/html"))
    assert "co-occurrence" in html and "typed" in html


def test_evaluation(tmp_path):
    qasc = small_eval_file(QASC, tmp_path)
    multirc = small_eval_file(MULTIRC, tmp_path) if MULTIRC.exists() else tmp_path / "absent.json"
    book = run(
        ROOT / "notebooks" / "03-evaluation.ipynb", tmp_path,
        QASC=str(qasc), MULTIRC=str(multirc), QUESTIONS=None, KEEP=None,
    )
    text = printed(book)
    assert "QASC: 15 questions over" in text
    if MULTIRC.exists():
        assert "MultiRC: 15 questions over" in text
    else:
        assert f"MultiRC skipped: {multirc} not found" in text
    assert len(outputs(book, "image/png")) == 1  # the R@k figure
    assert "R@10 both" in outputs(book, "text/html")[0]


def test_figure_script(tmp_path):
    """scripts/notebook_figure.py, which draws the README's picture, on a small file."""
    import subprocess
    import sys

    from PIL import Image

    source = small_eval_file(QASC, tmp_path, questions=5, others=20)
    output = tmp_path / "figure.png"
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "notebook_figure.py"), "--file", str(source),
         "--questions", "4", "-o", str(output)],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("4 questions over ")
    assert [line.split()[0] for line in lines[1:5]] == ["bm25", "vector", "hybrid", "graph"]
    assert lines[-1] == f"Wrote {output}"
    assert Image.open(output).size == (1000, 400)
