import sys

import pytest

sys._called_from_test = True


@pytest.fixture
def user_path(tmp_path_factory, monkeypatch):
    """An empty llm user directory, so tests never touch the real one."""
    path = tmp_path_factory.mktemp("llm-user")
    monkeypatch.setenv("LLM_USER_PATH", str(path))
    return path
