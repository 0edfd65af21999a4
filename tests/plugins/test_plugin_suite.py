"""A plugin is first-class (issue 26): a package that ships its own config groups is found through
its entry point alone, and its suite gets `geoeval meta-eval`, `inspect eval`, `geoeval score` and
the main command, with keys its schema has and its YAML lacks.

The plugin is "installed" as `importlib.metadata` sees an installation: a `*.dist-info` folder with
an `entry_points.txt`, on PYTHONPATH with the package (nothing is written to the environment)."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "plugins" / "example"


def _dist_info(root: Path, dist: str, entry_points: dict[str, str]) -> None:
    """What pip writes for an installed distribution, as far as entry points go."""
    folder = root / f"{dist}-0.1.dist-info"
    folder.mkdir(parents=True)
    (folder / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    lines = "".join(f"{name} = {value}\n" for name, value in entry_points.items())
    (folder / "entry_points.txt").write_text(f"[geoeval.plugins]\n{lines}")


def test_a_plugin_conf_folder_is_found_through_its_entry_point_without_importing_it(tmp_path, monkeypatch):
    from geoeval.core.config.search_path import plugin_config_dirs

    package = tmp_path / "probe_conf_plugin"
    (package / "conf" / "suite").mkdir(parents=True)
    (package / "__init__.py").write_text("raise RuntimeError('imported')\n")
    (package / "conf" / "suite" / "probe.yaml").write_text("name: probe\n")
    _dist_info(tmp_path, "probe_conf_plugin", {"probe": "probe_conf_plugin.suite"})
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    assert (package / "conf").resolve() in plugin_config_dirs()
    assert "probe_conf_plugin" not in sys.modules
    assert all(
        not str(p).startswith(str(REPO / "conf")) for p in plugin_config_dirs()
    )  # geoeval's own is not a plugin's


def _run(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(list(args), cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"{args}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.mark.slow
def test_a_plugin_suite_with_its_own_configs_gets_every_entry_point(tmp_path):
    site = tmp_path / "site"
    _dist_info(site, "geoeval_example_plugins_fixture", {"station_lines": "geoeval_example_plugins"})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(EXAMPLE)]), "INSPECT_DISPLAY": "none"}
    work = tmp_path / "work"  # a fresh directory that is not the checkout: no experiments/, no searchpath
    work.mkdir()
    bin_dir = Path(sys.executable).parent

    meta = _run(work, env, str(bin_dir / "geoeval"), "meta-eval", "station_lines", "--output", "meta.json")
    report = json.loads((work / "meta.json").read_text())
    assert report["suite"] == "station_lines" and report["n_samples"] == 8
    assert report["metrics"]["line_set_acc"]["met"] and report["metrics"]["line_set_acc"]["pairs"] > 0
    assert "defect:extra_line" in report["tiers"] and "8/8 samples" in meta.stderr  # progress lines

    tools = "suite.solver=react suite.tools=[lines_of_station]"  # keys the suite's YAML leaves out
    _run(
        work,
        env,
        str(bin_dir / "inspect"),
        "eval",
        "geoeval/station_lines",
        "--model",
        "geoeval/table_baseline",
        "-T",
        f"overrides={tools}",
        "--log-dir",
        "inspect-logs",
    )
    from inspect_ai.log import list_eval_logs, read_eval_log

    (log_info,) = list_eval_logs(str(work / "inspect-logs"))
    log = read_eval_log(log_info)
    assert log.status == "success" and len(log.samples) == 8
    assert all(s.scores["geoeval"].value["line_set_acc"] == 1.0 for s in log.samples)
    called = [c.function for s in log.samples for m in s.messages if m.role == "assistant" for c in m.tool_calls or []]
    assert called.count("lines_of_station") == 8  # the offline agent asked the tool, one call a sample

    answers = work / "answers.jsonl"
    first, second = log.samples[0], log.samples[1]
    answers.write_text(
        json.dumps({"sample_id": first.id, "answer": f"Answer: {first.target}"})
        + "\n"
        + json.dumps({"sample_id": second.id, "answer": "Nowhere line"})
        + "\n"
    )
    scored = _run(work, env, str(bin_dir / "geoeval"), "score", "station_lines", "--answers", str(answers))
    rows = [json.loads(line) for line in scored.stdout.splitlines()]
    assert [r["scores"]["line_set_acc"] for r in rows] == [1.0, 0.0]
    assert rows[0]["protocol_disagreement"] == {"line_set_acc": {"robust": 1.0, "paper": 0.0}}

    run = _run(
        work,
        env,
        sys.executable,
        "-m",
        "geoeval",
        "suite=station_lines",
        "metrics=station_lines",
        "model=table_baseline",
        "tracking=none",
        *tools.split(),
    )
    assert "n_scored=8" in run.stdout + run.stderr
