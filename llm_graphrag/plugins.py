"""The graphrag plugin manager and the registries built from its hooks."""

import importlib
import sys

import pluggy

from . import hookspecs

pm = pluggy.PluginManager("graphrag")
pm.add_hookspecs(hookspecs)

DEFAULT_PLUGINS = (
    "llm_graphrag.default_plugins.loaders",
    "llm_graphrag.default_plugins.chunkers",
    "llm_graphrag.default_plugins.extractors",
)

_loaded = False


def load_plugins():
    """Register the default plugins and any installed under the ``graphrag`` entry point."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for name in DEFAULT_PLUGINS:
        module = importlib.import_module(name)
        if not pm.is_registered(module):
            pm.register(module, name=name)
    if not getattr(sys, "_called_from_test", False):
        pm.load_setuptools_entrypoints("graphrag")


def _collect(hook):
    load_plugins()
    registry = {}

    def register(key, value):
        if isinstance(key, (list, tuple)):
            for k in key:
                registry.setdefault(k, value)
        else:
            registry.setdefault(key, value)

    # pluggy calls the most recently registered plugin first, so with setdefault
    # a third-party plugin overrides the defaults it registers the same key as.
    getattr(pm.hook, hook)(register=register)
    return registry


def get_loaders():
    """Map of lower-case file suffix to loader function."""
    return _collect("register_loaders")


def get_chunkers():
    return _collect("register_chunkers")


def get_mention_extractors():
    return _collect("register_mention_extractors")


def get_relation_extractors():
    return _collect("register_relation_extractors")
