"""Secrets are redacted before storage: each kind, every table, status and the allow-list."""

import json

import pytest
from click.testing import CliRunner

from llm_graphrag.cli import graphrag as graphrag_cli
from llm_graphrag.db import open_database
from llm_graphrag.ingest import ingest_docs
from llm_graphrag.redact import Redactor, check_setting
from llm_graphrag.tools import call_tool

AWS_ID = "AKIAQ7R4T2Y8U3W9E5X1"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8Lk3Tv2M"
GITHUB = "ghp_" + "R8sT2uV4wX6yZ8aB0cD2eF4gH6iJ8kL0mN2o"
GITHUB_OAUTH = "gho_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8"
GITHUB_PAT = "github_pat_11ABCDEFG0Zq9Xw8Vu7Ts6_Rq5Po4Nm3Lk2Ji1Hg0Fe9Dc8Ba7Zy6Xw5Vu4Ts3Rq2Po1Nm0Lk9J"
SLACK = "xoxb-284019372651-4920183746521-QmZx7Lp2Wd9Rk4Tn8Yc1Vb6H"
URL_PASSWORD = "Gr4nite-Sh0re"
ENV_PASSWORD = "hunter2Heron!"
API_KEY = "sk_live_7Hq2Lm9Zx4Rt8Wp1"
TOKEN = "tok-91Kd83Ls02Pq"
PEM_BODY = "MIIEowIBAAKCAQEAv8Ybq2Lr9Xt5Wm3Zk7Pq1Ns4Jd6Hf8Gc0Va2Tb5Ye9Uo3Ri7El1Kw4Mz"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJoZXJvbi1zdmMiLCJpYXQiOjE3MDAwMDAwMDB9"
    ".Vq3Xn8Lw2Rk5Tz9Pm1Hc4Jd7Fs0Gb6Ya3Ue8Oi2Kt"
)
SECRETS = [
    AWS_ID, AWS_SECRET, GITHUB, GITHUB_OAUTH, GITHUB_PAT, SLACK, URL_PASSWORD, ENV_PASSWORD,
    API_KEY, TOKEN, PEM_BODY, JWT,
]


@pytest.mark.parametrize(
    "text, redacted, kind",
    [
        (f"key id {AWS_ID} here", "key id [REDACTED:aws-access-key-id] here", "aws-access-key-id"),
        (
            f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}",
            "AWS_SECRET_ACCESS_KEY=[REDACTED:aws-secret-key]",
            "aws-secret-key",
        ),
        (f"token {GITHUB}.", "token [REDACTED:github-token].", "github-token"),
        (f"({GITHUB_OAUTH})", "([REDACTED:github-token])", "github-token"),
        (f"use {GITHUB_PAT} once", "use [REDACTED:github-token] once", "github-token"),
        (f"bot {SLACK}", "bot [REDACTED:slack-token]", "slack-token"),
        (
            f"postgres://heron:{URL_PASSWORD}@db.internal:5432/heron",
            "postgres://heron:[REDACTED:url-password]@db.internal:5432/heron",
            "url-password",
        ),
        (f"DB_PASSWORD={ENV_PASSWORD}", "DB_PASSWORD=[REDACTED:password]", "password"),
        (f'api_key: "{API_KEY}"', 'api_key: "[REDACTED:secret]"', "secret"),
        (f"export HERON_TOKEN='{TOKEN}'", "export HERON_TOKEN='[REDACTED:secret]'", "secret"),
        (
            f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\n-----END RSA PRIVATE KEY-----\nafter",
            "[REDACTED:private-key]\nafter",
            "private-key",
        ),
        (f"Authorization: Bearer {JWT}", "Authorization: Bearer [REDACTED:jwt]", "jwt"),
    ],
)
def test_each_kind_is_replaced_by_its_label(text, redacted, kind):
    redactor = Redactor()
    assert redactor.redact(text) == redacted
    assert dict(redactor.counts) == {kind: 1}


@pytest.mark.parametrize(
    "text",
    [
        "The token: the one from Lockbox.",
        "password: see Lockbox",
        "Set DB_PASSWORD=${DB_PASSWORD} in the shell.",
        "Secrets in it are references to Lockbox, never literal values.",
        "Browse https://example.com/a:b@c or ssh://deploy@host.",
        "api_key: <your key>",
    ],
)
def test_prose_and_placeholders_are_left_alone(text):
    redactor = Redactor()
    assert redactor.redact(text) == text
    assert redactor.counts == {}


DOCUMENT = f"""# Heron deployment

Heron reads from Basin. The deploy user's AWS key id is {AWS_ID} and the bot posts with
{SLACK}. Heron's CI token is {GITHUB}; the release job uses {GITHUB_PAT} and the
old app {GITHUB_OAUTH}. The database lives at postgres://heron:{URL_PASSWORD}@db.internal/heron.
Basin signs requests with {JWT}.

```
AWS_SECRET_ACCESS_KEY={AWS_SECRET}
DB_PASSWORD={ENV_PASSWORD}
api_key = {API_KEY}
HERON_TOKEN={TOKEN}
```

```
-----BEGIN RSA PRIVATE KEY-----
{PEM_BODY}
-----END RSA PRIVATE KEY-----
```

Heron depends on Basin for alerts.
"""
EXPECTED_COUNTS = {
    "aws-access-key-id": 1, "aws-secret-key": 1, "github-token": 3, "jwt": 1, "password": 1,
    "private-key": 1, "secret": 2, "slack-token": 1, "url-password": 1,
}


def stored_anywhere(db, secret):
    """``table.column`` of every column of every table (FTS and vector internals too)
    whose value holds ``secret``, as text or bytes."""
    found = []
    tables = [
        name for (name,) in db.execute("select name from sqlite_master where type = 'table'")
    ]
    for table in tables:
        try:
            columns = [row[1] for row in db.execute(f'pragma table_info("{table}")')]
            for column in columns:
                hit = db.execute(
                    f'select 1 from "{table}" where instr(cast("{column}" as blob), '
                    "cast(? as blob)) > 0 limit 1",
                    [secret],
                ).fetchone()
                if hit:
                    found.append(f"{table}.{column}")
        except Exception as ex:  # a virtual table that cannot be scanned must say so
            raise AssertionError(f"cannot scan {table}: {ex}")
    return found


@pytest.fixture
def folder(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "heron-deploy.md").write_text(DOCUMENT)
    return folder


def test_no_table_holds_a_secret_after_ingest(folder, tmp_path):
    db = open_database(tmp_path / "g.db")
    result = ingest_docs(db, [str(folder)])
    assert result.errors == [] and result.ingested == 1
    assert db["entities"].count > 0
    for secret in SECRETS:
        assert stored_anywhere(db, secret) == [], secret
        found = call_tool(db, "entity_lookup", {"q": secret})["entities"]
        assert [e for e in found if secret in json.dumps(e)] == [], secret
    content = db.execute("select group_concat(content, ' ') from chunks").fetchone()[0]
    for kind in EXPECTED_COUNTS:
        assert f"[REDACTED:{kind}]" in content
    status = call_tool(db, "status")
    assert status["redactions"] == EXPECTED_COUNTS
    # The fixture's words are stored: only the secrets went.
    assert "Heron depends on Basin for alerts." in content


def test_allow_list_and_switch_set_with_the_cli(folder, tmp_path, user_path):
    path = tmp_path / "g.db"
    open_database(path).close()
    runner = CliRunner()
    result = runner.invoke(
        graphrag_cli,
        ["settings", "redact", json.dumps({"allow": [AWS_ID], "enabled": True}), "-d", str(path)],
    )
    assert result.exit_code == 0, result.output
    result = runner.invoke(graphrag_cli, ["ingest", str(folder), "-d", str(path), "--json"])
    assert result.exit_code == 0, result.output
    db = open_database(path)
    assert stored_anywhere(db, AWS_ID) != []
    assert stored_anywhere(db, GITHUB) == []
    assert call_tool(db, "status")["redactions"] == {
        k: v for k, v in EXPECTED_COUNTS.items() if k != "aws-access-key-id"
    }
    db.close()

    result = runner.invoke(
        graphrag_cli, ["settings", "redact", '{"enabled": false}', "-d", str(path)]
    )
    assert result.exit_code == 0, result.output
    result = runner.invoke(graphrag_cli, ["ingest", str(folder), "-d", str(path), "--force"])
    assert result.exit_code == 0, result.output
    db = open_database(path)
    assert "chunks.content" in stored_anywhere(db, GITHUB)
    assert call_tool(db, "status")["redactions"] == {}
    db.close()


@pytest.mark.parametrize(
    "value, message",
    [
        ('["x"]', 'redact must be a JSON object, e.g. {"enabled": true, "allow": ["AKIAIOSFODNN7EXAMPLE"]}'),
        ('{"allow": "x"}', 'redact: allow must be a list of exact secret values, e.g. {"enabled": true, "allow": ["AKIAIOSFODNN7EXAMPLE"]}'),
        ('{"enabled": "yes"}', "redact: enabled must be true or false"),
        ('{"alow": []}', 'redact: unknown keys alow; use {"enabled": true, "allow": ["AKIAIOSFODNN7EXAMPLE"]}'),
    ],
)
def test_bad_redact_settings_are_refused(value, message, tmp_path, user_path):
    path = tmp_path / "g.db"
    open_database(path).close()
    result = CliRunner().invoke(graphrag_cli, ["settings", "redact", value, "-d", str(path)])
    assert result.exit_code == 1
    assert result.output == f"Error: {message}\n"
    with pytest.raises(ValueError):
        check_setting(json.loads(value))
