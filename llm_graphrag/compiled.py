"""Modules compiled from changed sources are not imported: their source is.

``pip install`` compiles a few modules with Cython (``COMPILED`` in setup.py) and puts
each next to its source, where Python imports the compiled one first. The build records
each source's hash in ``compiled_sources.json``; a module whose source no longer matches
(edited in a checkout since ``pip install -e .``) is imported from its source instead.
"""

import hashlib
import importlib.machinery
import importlib.util
import json
import pathlib
import sys
import warnings

HERE = pathlib.Path(__file__).resolve().parent
SOURCES_FILE = "compiled_sources.json"  # written by setup.py's build_ext


def recorded_sources(folder=HERE):
    """``{module name: SHA-256 of its source}`` as the build compiled them (empty: none)."""
    try:
        return json.loads((folder / SOURCES_FILE).read_text())
    except (FileNotFoundError, ValueError):
        return {}


def stale_modules(folder=HERE):
    """``{module name: source path}`` of compiled modules in ``folder`` built from other source."""
    built = recorded_sources(folder)
    stale = {}
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        for binary in folder.glob(f"*{suffix}"):
            name = binary.name[: -len(suffix)]
            source = folder / f"{name}.py"
            if source.exists() and built.get(name) != hashlib.sha256(source.read_bytes()).hexdigest():
                stale[f"{__package__}.{name}"] = source
    return stale


class SourceFinder:
    """A meta path finder that imports the listed modules from their source files."""

    def __init__(self, sources):
        self.sources = sources

    def find_spec(self, fullname, path=None, target=None):
        source = self.sources.get(fullname)
        if source is None:
            return None
        return importlib.util.spec_from_file_location(fullname, source)


def prefer_changed_sources():
    """Import stale compiled modules from their source, with a warning that says so."""
    stale = stale_modules()
    if not stale:
        return
    names = ", ".join(sorted(name.rpartition(".")[2] + ".py" for name in stale))
    warnings.warn(
        f"{names} changed since the build: importing the source, which is slower than the "
        "compiled build. Run 'pip install -e .' to compile again.",
        stacklevel=2,
    )
    sys.meta_path.insert(0, SourceFinder(stale))
