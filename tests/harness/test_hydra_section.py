"""Experiment files are data: the `hydra:` section may name only geoeval's and Hydra's own code,
checked before Hydra starts (it instantiates callbacks, launchers, sweepers and logging handlers
before any job), for single runs and sweeps alike."""

from __future__ import annotations

import subprocess

import pytest
from hydra import compose, initialize_config_module

from geoeval.core.config.hydra_section import hydra_section_problems
from geoeval.core.config.search_path import register
from geoeval.core.errors import GeoevalError
from tests.conftest import REPO, geoeval_cmd


def _file_handler(filename: str) -> dict:
    return {"job_logging": {"handlers": {"h": {"class": "logging.FileHandler", "filename": filename, "mode": "w"}}}}


def test_geoeval_and_hydra_targets_and_logging_classes_are_allowed():
    section = {
        "callbacks": {
            "geoeval_sweep": {"_target_": "geoeval.cli.app.SweepCallback"},
            "log_return": {"_target_": "hydra.experimental.callbacks.LogJobReturnCallback"},
        },
        "launcher": {"_target_": "hydra_plugins.geoeval_launcher.GeoevalLauncher"},
        "sweeper": {"_target_": "hydra_plugins.hydra_optuna_sweeper.optuna_sweeper.OptunaSweeper"},
        "job_logging": {
            "handlers": {
                "console": {"class": "logging.StreamHandler", "stream": "ext://sys.stdout"},
                "file": {
                    "class": "logging.FileHandler",
                    "filename": "${hydra.runtime.output_dir}/${hydra.job.name}.log",
                },
                "more": {
                    "class": "logging.handlers.RotatingFileHandler",
                    "filename": "${hydra:runtime.output_dir}/a/b.log",
                },
            },
            "formatters": {"simple": {"format": "%(message)s"}},
        },
        "output_subdir": ".hydra",
    }
    assert hydra_section_problems(section) == []


@pytest.mark.parametrize(
    "section, key",
    [
        ({"callbacks": {"x": {"_target_": "shutil.copyfile", "src": "a", "dst": "b"}}}, "hydra.callbacks.x._target_"),
        ({"callbacks": {"x": {"_target_": "os.system", "command": "true"}}}, "hydra.callbacks.x._target_"),
        ({"launcher": {"_target_": "mypkg.EvilLauncher"}}, "hydra.launcher._target_"),
        ({"sweeper": {"_target_": "${oc.env:SWEEPER}"}}, "hydra.sweeper._target_"),  # named only at run time
        ({"job_logging": {"handlers": {"h": {"class": "shutil.copyfile"}}}}, "hydra.job_logging.handlers.h.class"),
        ({"hydra_logging": {"formatters": {"f": {"()": "os.system"}}}}, "hydra.hydra_logging.formatters.f.()"),
        ({"callbacks": {"x": {"_target_": "hydrant.Evil"}}}, "hydra.callbacks.x._target_"),  # not hydra's package
        # logging writes only inside the run's output folder (issue 43: `mode: w` truncated a file outside it)
        (_file_handler("/home/me/notes.txt"), "hydra.job_logging.handlers.h.filename"),
        (_file_handler("notes.log"), "hydra.job_logging.handlers.h.filename"),  # relative to the cwd
        (_file_handler("${hydra.runtime.output_dir}/../../notes.txt"), "hydra.job_logging.handlers.h.filename"),
        (_file_handler("${oc.env:HOME}/notes.txt"), "hydra.job_logging.handlers.h.filename"),
        (_file_handler("${hydra.runtime.output_dir}/${oc.env:X}"), "hydra.job_logging.handlers.h.filename"),
        ({"job_logging": {"handlers": {"h": {"()": "logging.basicConfig"}}}}, "hydra.job_logging.handlers.h.()"),
        (
            {"job_logging": {"handlers": {"h": {"class": "logging.handlers.SMTPHandler"}}}},
            "hydra.job_logging.handlers.h.class",
        ),
        (
            {"job_logging": {"handlers": {"h": {"class": "logging.StreamHandler", "stream": "ext://os.x"}}}},
            "hydra.job_logging.handlers.h.stream",
        ),
        ({"output_subdir": "/home/me"}, "hydra.output_subdir"),
        ({"output_subdir": "../.."}, "hydra.output_subdir"),
        ({"job": {"name": "../../notes"}}, "hydra.job.name"),
    ],
)
def test_any_other_target_is_refused_naming_its_key(section, key):
    problems = hydra_section_problems(section)
    assert len(problems) == 1 and problems[0].startswith(f"{key}: ")


def test_the_shipped_config_and_every_shipped_experiment_pass():
    register()
    names = sorted(p.stem for p in (REPO / "conf" / "experiment").glob("*.yaml"))
    assert len(names) >= 10
    with initialize_config_module(config_module="geoeval.conf", version_base="1.3"):
        for overrides in [[], *([f"+experiment={n}"] for n in names)]:
            cfg = compose(config_name="config", overrides=overrides, return_hydra_config=True)
            assert hydra_section_problems(cfg.hydra) == [], overrides


EVIL = """# @package _global_
hydra:
  callbacks:
    copier:
      _target_: shutil.copyfile
      src: {src}
      dst: {dst}
"""


@pytest.mark.parametrize("sweep", [False, True], ids=["single run", "sweep"])
def test_an_experiment_that_names_other_code_stops_before_hydra_runs_it(tmp_path, sweep):
    src, dst = tmp_path / "secret.txt", tmp_path / "copied.txt"
    src.write_text("not for copying")
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "evil.yaml").write_text(EVIL.format(src=src, dst=dst))
    args = ["+experiment=evil", "tracking=none", "runner=local"]
    if sweep:
        args = ["-m", *args, "model=oracle,table_baseline"]
    proc = subprocess.run(geoeval_cmd(*args), cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "hydra.callbacks.copier._target_: 'shutil.copyfile' is not allowed" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not dst.exists()  # the callback never ran
    assert not (tmp_path / "outputs").exists() and not (tmp_path / "multirun").exists()  # nor did Hydra


def test_precheck_raises_the_error_type_a_user_can_fix(tmp_path, monkeypatch):
    from geoeval.core.config.precheck import precheck

    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "evil.yaml").write_text(EVIL.format(src=tmp_path / "a", dst=tmp_path / "b"))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(GeoevalError, match=r"hydra\.callbacks\.copier\._target_"):
        precheck(["+experiment=evil"])
    assert not (tmp_path / "b").exists()
