"""A suite declares its CLI commands and MCP servers in the registry (`Suite.commands`,
`Suite.mcp_servers`, issue 42): `geoeval <suite> <command>`, `geoeval env build <suite>`,
`geoeval score <suite> FILE` and `python -m geoeval.mcp <suite>` find them by the suite's name, a
plugin suite's as a built-in's; a command's module is imported only when it runs."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap

import pytest

from geoeval.api import GeoevalError, register_suite
from geoeval.cli.main import main
from geoeval.cli.suite_commands import suites_with
from geoeval.core import registry
from tests.core.test_registry import ProbeSuite
from tests.core.test_registry import (
    _forget_probe_suites as _forget_probe_suites,  # autouse: the registry is one per process
)
from tests.plugins.test_plugin_suite import EXAMPLE, _dist_info


def _probe_commands(tmp_path, monkeypatch) -> str:
    """A plugin's command module on disk: each command prints its name and arguments."""
    package = tmp_path / "probe_commands_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "commands.py").write_text(
        "def hello(argv):\n    print('hello', *argv)\n\ndef env_build(argv):\n    print('built', *argv)\n    return 3\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("probe_commands_pkg.commands", None)
    importlib.invalidate_caches()
    return "probe_commands_pkg.commands"


def _register(commands: dict[str, str], mcp_servers: dict[str, str] | None = None) -> None:
    class ProbeCommands(ProbeSuite):
        name = "probe_commands"

    ProbeCommands.commands = commands
    ProbeCommands.mcp_servers = mcp_servers or {}
    register_suite(ProbeCommands)


def test_a_suites_declared_commands_run_by_its_name_and_load_only_when_run(tmp_path, monkeypatch, capsys):
    module = _probe_commands(tmp_path, monkeypatch)
    _register({"hello": f"{module}:hello", "env_build": f"{module}:env_build"})
    assert module not in sys.modules  # declaring a command imports nothing
    assert "probe_commands" in suites_with("env_build") and "probe_commands" not in suites_with("score")

    assert main(["probe_commands", "hello", "a", "--b"]) == 0
    assert capsys.readouterr().out == "hello a --b\n"
    assert main(["env", "build", "probe_commands", "--out", "x"]) == 3
    assert capsys.readouterr().out == "built --out x\n"

    assert main(["probe_commands", "nope"]) == 2
    err = capsys.readouterr().err
    assert (
        err.count("\n") == 1 and "suite 'probe_commands' has no `nope` command (its commands: hello, env_build)" in err
    )
    assert main(["score", "probe_commands", "results.json"]) == 2
    assert "has no `score` command" in capsys.readouterr().err
    assert main(["probe_commands"]) == 2
    assert "commands of suite 'probe_commands': hello, env_build" in capsys.readouterr().err


def test_a_command_that_names_no_function_is_refused_at_registration():
    with pytest.raises(GeoevalError, match=r"`commands` must map names to \"module:function\""):
        _register({"hello": "a_module_without_a_function"})
    with pytest.raises(GeoevalError, match="`mcp_servers`"):
        _register({}, {"standard": 42})  # type: ignore[dict-item]


def test_the_built_in_suites_declare_the_commands_that_were_found_by_module_path():
    assert suites_with("env_build") == ["lifeplanner"] and suites_with("score") == ["maptab"]
    lifeplanner = registry.get_suite("lifeplanner")
    assert list(lifeplanner.mcp_servers) == ["standard", "data_engine"]


_MCP_PLUGIN = textwrap.dedent(
    """
    import sys
    from pydantic import BaseModel
    from geoeval.api import Suite, register_suite

    class S(BaseModel):
        name: str = "x"

    def serve(db, *, transport, toolset, host, port, seed, token):
        print("served", db, transport, toolset, host, port, seed, token, file=sys.stderr)

    class ProbeMcp(Suite):
        name = "probe_mcp"
        config_schema = S
        env_schema = S
        mcp_servers = {"lines": "probe_mcp_plugin:serve", "other": "probe_mcp_plugin:serve"}
        def build_env(self, spec): return None
        def build_samples(self, spec, env): return []
        def build_task(self, spec, env, samples): return None

    register_suite(ProbeMcp)
    """
)


def test_a_plugin_suite_serves_its_mcp_server_by_its_name(tmp_path):
    (tmp_path / "probe_mcp_plugin.py").write_text(_MCP_PLUGIN)
    db = tmp_path / "env.duckdb"
    db.write_text("")
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "GEOEVAL_PLUGINS": "probe_mcp_plugin"}

    def mcp(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "geoeval.mcp", *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)

    served = mcp("probe_mcp", "--db", str(db), "--toolset", "other", "--seed", "4")
    assert served.returncode == 0, served.stderr
    assert served.stderr.strip() == f"served {db} stdio other 127.0.0.1 8765 4 None"
    default = mcp("probe_mcp", "--db", str(db))  # the first server the suite declares
    assert default.stderr.strip().split()[3] == "lines"
    wrong = mcp("probe_mcp", "--db", str(db), "--toolset", "nope")
    assert wrong.returncode == 2
    assert wrong.stderr.strip() == "error: argument --toolset: invalid choice: 'nope' (choose from lines, other)"


@pytest.mark.slow
def test_the_example_plugin_adds_a_command(tmp_path):
    """`plugins/example` declares `lines` (`StationLinesSuite.commands`): found through its entry
    point alone, in a fresh process, as a user runs it."""
    site = tmp_path / "site"
    _dist_info(site, "geoeval_example_plugins_fixture", {"station_lines": "geoeval_example_plugins"})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(EXAMPLE)])}
    geoeval = str(os.path.join(os.path.dirname(sys.executable), "geoeval"))
    proc = subprocess.run(
        [geoeval, "station_lines", "lines", "--seed", "1"], capture_output=True, text=True, timeout=300, env=env
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert len(lines) == 3 and all(": " in line and line.split(": ")[0].endswith("Line") for line in lines)
    assert all(len(line.split(": ")[1].split(", ")) >= 6 for line in lines)  # 6..10 stations a line
