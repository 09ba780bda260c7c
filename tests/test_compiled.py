"""The Cython build of the extraction modules, and the source taking over when it changed."""

import hashlib
import importlib
import importlib.machinery
import json
import pathlib
import shutil
import subprocess
import sys

import pytest

import llm_graphrag
from llm_graphrag import compiled

PACKAGE = pathlib.Path(llm_graphrag.__file__).parent
COMPILED = ["extraction", "relations", "extract", "linking"]  # as setup.py lists them
SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]


def _binary(folder, name):
    return [folder / f"{name}{suffix}" for suffix in importlib.machinery.EXTENSION_SUFFIXES if (folder / f"{name}{suffix}").exists()]


def test_the_build_compiles_the_extraction_modules():
    setup = (PACKAGE.parent / "setup.py").read_text()
    assert f"COMPILED = {json.dumps(COMPILED)}" in setup
    assert sorted(compiled.recorded_sources()) == sorted(COMPILED)
    stale = compiled.stale_modules()
    for name in COMPILED:
        assert _binary(PACKAGE, name), f"{name}.py was not compiled: run pip install -e ."
        module = importlib.import_module(f"llm_graphrag.{name}")
        if f"llm_graphrag.{name}" in stale:
            assert module.__file__.endswith(".py")
        else:
            assert not module.__file__.endswith(".py"), module.__file__


def _folder(tmp_path, source="x = 1\n", recorded=True):
    (tmp_path / "mod.py").write_text(source)
    (tmp_path / f"mod{SUFFIX}").write_bytes(b"not really a module")
    (tmp_path / f"_native{SUFFIX}").write_bytes(b"a compiled module with no source beside it")
    if recorded:
        digest = hashlib.sha256(source.encode()).hexdigest()
        (tmp_path / "compiled_sources.json").write_text(json.dumps({"mod": digest}))
    return tmp_path


def test_a_build_of_the_current_source_is_not_stale(tmp_path):
    assert compiled.stale_modules(_folder(tmp_path)) == {}


def test_an_edited_source_or_an_unrecorded_build_is_stale(tmp_path):
    folder = _folder(tmp_path)
    (folder / "mod.py").write_text("x = 2\n")
    assert compiled.stale_modules(folder) == {"llm_graphrag.mod": folder / "mod.py"}
    (folder / "compiled_sources.json").unlink()
    (folder / "mod.py").write_text("x = 1\n")
    assert compiled.stale_modules(folder) == {"llm_graphrag.mod": folder / "mod.py"}


def test_the_source_finder_imports_the_listed_source(tmp_path):
    source = tmp_path / "fresh.py"
    source.write_text("VALUE = 'from source'\n")
    finder = compiled.SourceFinder({"llm_graphrag.fresh_for_test": source})
    assert finder.find_spec("llm_graphrag.other") is None
    sys.meta_path.insert(0, finder)
    try:
        module = importlib.import_module("llm_graphrag.fresh_for_test")
        assert module.VALUE == "from source" and module.__file__ == str(source)
    finally:
        sys.meta_path.remove(finder)
        sys.modules.pop("llm_graphrag.fresh_for_test", None)


def test_an_installed_package_whose_source_was_edited_imports_the_source(tmp_path):
    if not _binary(PACKAGE, "relations"):
        pytest.fail("relations.py was not compiled: run pip install -e .")
    copy = tmp_path / "llm_graphrag"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("model", "__pycache__"))
    script = (
        "import warnings, llm_graphrag.relations as r, llm_graphrag.extraction as e; "
        "print(r.__file__.endswith('.py'), e.__file__.endswith('.py'), getattr(r, 'EDITED', None))"
    )

    def run():
        return subprocess.run(
            [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, check=True,
            env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
        )

    unchanged = run()
    assert unchanged.stdout.split() == ["False", "False", "None"]
    assert "changed since the build" not in unchanged.stderr
    with open(copy / "relations.py", "a") as fp:
        fp.write("\nEDITED = 'yes'\n")
    edited = run()
    assert edited.stdout.split() == ["True", "False", "yes"]
    assert "relations.py changed since the build: importing the source" in edited.stderr
