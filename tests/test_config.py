"""Configuration: defaults, overrides, and errors that name the key and the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from roundtable.config import Config, ConfigError, default_config_yaml, load_config, parse_config
from roundtable.errors import ConfigMissing


def test_empty_file_gives_defaults() -> None:
    assert parse_config("") == Config()


def test_starter_file_round_trips_to_defaults() -> None:
    assert parse_config(default_config_yaml()) == Config()


def test_defaults_match_the_spec() -> None:
    c = Config()
    assert c.storage.sqlite_path == ".roundtable/roundtable.db"
    assert c.mcp.http_address == "127.0.0.1:7117"
    assert c.mcp.socket_path == ".roundtable/mcp/roundtable.sock"
    assert c.mcp.tool_names == "underscore"
    assert c.mcp.require_tokens is False
    assert c.chair.turn_start_timeout == 120.0
    assert c.chair.turn_timeout == 600.0  # minutes, not half an hour: a hung harness is given up on sooner
    assert c.agents.implementers.count == 2
    assert c.adapters["generic"].command == "sh"
    assert c.adapters["claude"].resume_pattern == "claude --resume {{external_session_id}}"


def test_overrides_apply_and_durations_parse() -> None:
    c = parse_config(
        "mcp:\n  tool_names: dotted\n  http_address: 127.0.0.1:9000\n"
        "chair:\n  tick_interval: 500ms\n  turn_timeout: 2m\n"
        "agents:\n  reviewers:\n    count: 3\n"
        "adapters:\n  custom:\n    command: my-agent\n"
    )
    assert c.mcp.tool_names == "dotted"
    assert c.mcp.http_address == "127.0.0.1:9000"
    assert c.chair.tick_interval == 0.5
    assert c.chair.turn_timeout == 120.0
    assert c.agents.reviewers.count == 3
    assert c.adapters["custom"].command == "my-agent"
    assert c.adapters["codex"].command == "codex"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("foo: 1\n", "config.yaml:1: foo: unknown key"),
        ("mcp:\n  tool_names: camel\n", "config.yaml:2: mcp.tool_names: must be one of underscore, dotted"),
        ("mcp:\n  require_tokens: maybe\n", "config.yaml:2: mcp.require_tokens: expected true or false, got string"),
        ("chair:\n\n  tick_interval: soon\n", "config.yaml:3: chair.tick_interval: invalid duration"),
        (
            "agents:\n  implementers:\n    count: -1\n",
            "config.yaml:3: agents.implementers.count: must be from 0 to 1000 (got -1)",
        ),
        ("agents:\n  chair:\n    adapter: nope\n", 'agents.chair.adapter references unknown adapter "nope"'),
        ("mcp:\n  socket_path: [1, 2\n", "invalid YAML"),
        ("- a\n- b\n", "the top level must be a mapping"),
        ("mcp:\n  bogus: 1\n", "config.yaml:2: mcp.bogus: unknown key"),
        ("adapters:\n  codex:\n    command: ''\n", "adapters.codex.command must not be empty"),
        (
            "agents:\n  reviewers:\n    count: 1001\n",
            "config.yaml:3: agents.reviewers.count: must be from 0 to 1000 (got 1001)",
        ),
        ("version: 2\n", "config.yaml:1: version: this roundtable reads version 1 only (got 2)"),
        (
            "mcp:\n  http_address: nonsense\n",
            "config.yaml:2: mcp.http_address: expected host:port, e.g. 127.0.0.1:7117 (got 'nonsense')",
        ),
        (
            "mcp:\n\n  http_address: 127.0.0.1:99999\n",
            "config.yaml:3: mcp.http_address: the port must be a number from 0 to 65535 (got '127.0.0.1:99999')",
        ),
        ("mcp:\n  http_address: '[::1:80'\n", "config.yaml:2: mcp.http_address: expected [host]:port"),
        (
            "storage:\n  sqlite_path: /etc/passwd\n",
            "config.yaml:2: storage.sqlite_path: must be a relative path inside .roundtable/, e.g. .roundtable/roundtable.db (got '/etc/passwd')",
        ),
        (
            "storage:\n  sqlite_path: .roundtable/../../x.db\n",
            "config.yaml:2: storage.sqlite_path: must stay inside .roundtable/",
        ),
        ("storage:\n  sqlite_path: notes/x.db\n", "config.yaml:2: storage.sqlite_path: must stay inside .roundtable/"),
        ("repo:\n  max_read_bytes: 0\n", "config.yaml:2: repo.max_read_bytes: must be a positive integer (got 0)"),
    ],
)
def test_errors_name_key_and_line(text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(text)
    assert expected in str(info.value)


def test_missing_file_says_run_init(tmp_path: Path) -> None:
    with pytest.raises(ConfigMissing, match="roundtable init"):  # a ConfigError of its own kind
        load_config(tmp_path)
    (tmp_path / ".roundtable").mkdir()
    (tmp_path / ".roundtable" / "config.yaml").write_text("- not a mapping\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    assert not isinstance(info.value, ConfigMissing)


def test_sqlite_path_stays_in_the_private_state_directory(tmp_path: Path) -> None:
    c = parse_config("storage:\n  sqlite_path: .roundtable/db/other.db\n")
    assert c.sqlite_path(tmp_path) == tmp_path / ".roundtable" / "db" / "other.db"
    for bad in ("/abs/x.db", "../x.db", ".roundtable/../x.db", "x.db"):
        with pytest.raises(ConfigError, match=r"storage\.sqlite_path: must "):
            parse_config(f"storage:\n  sqlite_path: {bad}\n")


@pytest.mark.parametrize("address", ["127.0.0.1:0", "localhost:7117", "[::1]:7117", ":8080", "0.0.0.0:65535"])
def test_http_addresses_the_listener_accepts_load(address: str) -> None:
    assert parse_config(f"mcp:\n  http_address: '{address}'\n").mcp.http_address == address


def test_an_error_names_its_key_once() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config("agents:\n  implementers:\n    count: -1\n")
    assert str(info.value).count("agents.implementers.count") == 1


def test_autopilot_defaults_and_overrides() -> None:
    a = Config().autopilot
    assert (a.mode, a.max_sessions, a.max_sessions_per_role, a.max_attempts) == ("manual", 4, 2, 3)
    assert (a.retry_backoff_seconds, a.max_consecutive_failures, a.max_iterations, a.planner_agent) == (
        5.0,
        5,
        60,
        "",
    )
    c = parse_config(
        "autopilot:\n  mode: auto\n  max_sessions: 8\n  max_sessions_per_role: 3\n  max_attempts: 1\n"
        "  retry_backoff_seconds: 0\n  max_consecutive_failures: 2\n  max_iterations: 50\n"
        "  planner_agent: architect-2\n"
    )
    assert c.autopilot.mode == "auto"
    assert c.autopilot.max_sessions == 8
    assert c.autopilot.max_sessions_per_role == 3
    assert c.autopilot.max_attempts == 1
    assert c.autopilot.retry_backoff_seconds == 0.0
    assert isinstance(c.autopilot.retry_backoff_seconds, float)
    assert c.autopilot.max_consecutive_failures == 2
    assert c.autopilot.max_iterations == 50
    assert c.autopilot.planner_agent == "architect-2"


def test_starter_file_documents_the_autopilot() -> None:
    text = default_config_yaml()
    assert "autopilot:\n  mode: manual\n" in text
    assert "max_consecutive_failures: 5" in text
    assert "# Dispatches per run; 0 means unlimited." in text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("autopilot:\n  mode: yes-please\n", "config.yaml:2: autopilot.mode: must be one of manual, auto"),
        (
            "autopilot:\n  max_sessions: 0\n",
            "config.yaml:2: autopilot.max_sessions: must be a positive integer (got 0)",
        ),
        ("autopilot:\n  max_sessions_per_role: 0\n", "autopilot.max_sessions_per_role: must be a positive integer"),
        ("autopilot:\n  max_attempts: 0\n", "config.yaml:2: autopilot.max_attempts: must be a positive integer"),
        ("autopilot:\n  max_consecutive_failures: 0\n", "autopilot.max_consecutive_failures: must be a positive"),
        (
            "autopilot:\n  max_iterations: -1\n",
            "config.yaml:2: autopilot.max_iterations: must not be negative (got -1)",
        ),
        ("autopilot:\n  retry_backoff_seconds: -0.5\n", "autopilot.retry_backoff_seconds: must not be negative"),
        (
            "autopilot:\n  retry_backoff_seconds: soon\n",
            "autopilot.retry_backoff_seconds: expected a number, got string",
        ),
        (
            "autopilot:\n  retry_backoff_seconds: .nan\n",
            "autopilot.retry_backoff_seconds: input should be a finite number",
        ),
        ("autopilot:\n  max_attempts: 2.5\n", "autopilot.max_attempts: expected an integer, got number"),
        ("autopilot:\n  planner_agent: 3\n", "autopilot.planner_agent: expected a string, got integer"),
        (
            "autopilot:\n  turbo: true\n",
            "config.yaml:2: autopilot.turbo: unknown key (allowed: launches_per_minute, max_attempts",
        ),
    ],
)
def test_autopilot_errors_name_key_and_line(text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(text)
    assert expected in str(info.value)


def test_storage_wal_from_older_files_loads_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    # Nothing ever read `storage.wal` (SQLite always runs in WAL mode): an older file still
    # loads, and the warning names the line to delete.
    with caplog.at_level("WARNING", logger="roundtable.config"):
        c = parse_config("project_name: Old\n\nstorage:\n  wal: false\n  sqlite_path: .roundtable/x.db\n")
    assert c.storage.sqlite_path == ".roundtable/x.db"
    assert not hasattr(c.storage, "wal")
    assert "config.yaml:4: storage.wal: no longer read" in caplog.text
    assert "storage.wal" not in default_config_yaml()


def test_every_problem_is_reported_in_line_order() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config("repo:\n  max_read_bytes: 0\nmcp:\n  tool_names: camel\n  bogus: 1\n")
    lines = str(info.value).splitlines()
    assert lines[0] == "config.yaml:2: repo.max_read_bytes: must be a positive integer (got 0)"
    assert lines[1] == "config.yaml:4: mcp.tool_names: must be one of underscore, dotted (got 'camel')"
    assert lines[2].startswith("config.yaml:5: mcp.bogus: unknown key (allowed: auth, http_address,")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("storage: 5\n", "config.yaml:1: storage: expected a mapping, got integer"),
        ("agents:\n  chair: [a]\n", "config.yaml:2: agents.chair: expected a mapping, got list"),
        ("adapters:\n  mine:\n    command: x\n    resume: y\n", "config.yaml:4: adapters.mine.resume: unknown key"),
        ("agents:\n  pilots: {}\n", "config.yaml:2: agents.pilots: unknown key (allowed: architect, chair,"),
        (
            "tui:\n  bindings:\n    approve: ''\n",
            "config.yaml:3: tui.bindings.approve: expected a key name such as ctrl+a",
        ),
        ("project_name: null\n", "config.yaml:1: project_name: expected a string, got null"),
        ("1: x\n", "config.yaml:1: keys must be strings (got 1)"),
        ("agents:\n  chair:\n    adapter: nope\n", 'unknown adapter "nope" (configured: claude, codex, gemini'),
    ],
)
def test_model_errors_name_key_line_and_what_is_allowed(text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(text)
    assert expected in str(info.value)


def test_empty_sections_and_custom_adapters_keep_defaults() -> None:
    c = parse_config("storage:\nagents:\n  chair:\n    model: big\nadapters:\n  mine:\n")
    assert c.storage == Config().storage
    assert (c.agents.chair.role, c.agents.chair.adapter, c.agents.chair.model) == ("Chair", "claude", "big")
    assert c.adapters["mine"].command == "" and c.adapters["claude"].command == "claude"
    assert parse_config("tui:\n  bindings:\n    approve: ' ctrl+a '\n").tui.bindings == {"approve": "ctrl+a"}


def test_starter_file_quotes_addresses_and_keeps_its_comments() -> None:
    text = default_config_yaml()
    assert text.startswith("# roundtable's project configuration.")
    assert '  http_address: "127.0.0.1:7117"\n' in text
    assert "  # underscore (task_create) suits most MCP clients" in text
    assert "  turn_timeout: 10m\n" in text


def _project(tmp_path: Path, text: str | None) -> Path:
    state = tmp_path / ".roundtable"
    state.mkdir(exist_ok=True)
    if text is not None:
        (state / "config.yaml").write_text(text, encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize(
    ("text", "url"),
    [
        (default_config_yaml(), "http://127.0.0.1:7117/mcp"),
        ("", "http://127.0.0.1:7117/mcp"),
        ("mcp:\n  http_address: '[::1]:9000'\n", "http://[::1]:9000/mcp"),
        (
            "mcp:\n  http_address: 0.0.0.0:8443\n  tls_cert_file: c.pem\n  tls_key_file: k.pem\n",
            "https://0.0.0.0:8443/mcp",
        ),
        # the bridge reads only its keys: the owner refuses the rest of an invalid file itself
        ("chair:\n  tick_interval: soon\n", "http://127.0.0.1:7117/mcp"),
    ],
)
def test_the_bridge_reads_the_owner_url(tmp_path: Path, text: str, url: str) -> None:
    from roundtable.endpoint import bridge_url

    assert bridge_url(_project(tmp_path, text)) == url


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (None, "roundtable init"),
        ("mcp:\n  http_address: nonsense\n", "config.yaml:2: mcp.http_address: expected host:port"),
        ("mcp:\n  http_address: 7117\n", "config.yaml:2: mcp.http_address: expected a string, got integer"),
        ("mcp: [1\n", "invalid YAML"),
        ("mcp: on\n", "config.yaml:1: mcp: expected a mapping, got boolean"),
    ],
)
def test_the_bridge_reports_what_load_config_reports(tmp_path: Path, text: str | None, expected: str) -> None:
    from roundtable.endpoint import bridge_url

    with pytest.raises(ConfigError) as info:
        bridge_url(_project(tmp_path, text))
    assert expected in str(info.value)


def test_the_bridge_fast_path_imports_no_pydantic(tmp_path: Path) -> None:
    # The bridge starts for every agent session (budget ~250 ms); pydantic and the models cost
    # more than half of that, so a valid file is read without them.
    import subprocess
    import sys

    root = _project(tmp_path, default_config_yaml())
    code = (
        "import sys; from roundtable.endpoint import bridge_url; "
        f"print(bridge_url({str(root)!r}), 'pydantic' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["http://127.0.0.1:7117/mcp", "False"]
