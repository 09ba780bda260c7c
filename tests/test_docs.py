"""Keep the docs honest: every command is documented and in the README."""

import pathlib

import pytest

from llm_graphrag.cli import graphrag

README = (pathlib.Path(__file__).parent.parent / "README.md").read_text()


def commands(group, prefix=()):
    for name, command in group.commands.items():
        yield prefix + (name,), command
        if hasattr(command, "commands"):
            yield from commands(command, prefix + (name,))


@pytest.mark.parametrize("path,command", list(commands(graphrag)), ids=lambda v: str(v))
def test_command_has_help_and_is_in_readme(path, command):
    assert command.help and command.help.strip()
    if not hasattr(command, "commands"):
        assert "Example usage:" in command.help or len(path) > 1
    assert f"llm graphrag {' '.join(path)}" in README


def test_readme_has_no_placeholders():
    for marker in ("_SECTION", "EVAL_TABLE", "EXTRACTION_FIGURES", "TODO"):
        assert marker not in README
