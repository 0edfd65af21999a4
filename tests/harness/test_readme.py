"""The README and the docs work as written: the README's quick-start block runs command by command
in an empty directory, every other `python -m geoeval` command that the README or a page of `docs/`
shows composes and validates, and the config-group table of the docs names every shipped option."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")
DOCS = sorted((REPO / "docs").glob("*.md"))


def documentation() -> dict[str, str]:
    """The README and every page of docs/, by path relative to the repository."""
    pages = {"README.md": README}
    pages.update({f"docs/{page.name}": page.read_text(encoding="utf-8") for page in DOCS})
    return pages


QUICK = re.search(r"<!-- quick-commands:start -->\n```bash\n(.*?)```\n<!-- quick-commands:end -->", README, re.DOTALL)


def quick_commands() -> list[str]:
    assert QUICK, "README.md lost its quick-commands block"
    return [line for line in QUICK.group(1).splitlines() if line.strip()]


def argv_of(line: str) -> list[str]:
    """A README line as the activated venv runs it: `python` is this interpreter and `geoeval`
    its console script (installed next to it by `pip install -e .`)."""
    words = shlex.split(line, comments=True)
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
        words = words[1:]  # KEY=value prefixes (API keys in examples)
    if words[0] == "python":
        return [sys.executable, *words[1:]]
    if words[0] == "geoeval":
        script = Path(sys.executable).with_name("geoeval")
        return [
            str(script) if script.exists() else sys.executable,
            *([] if script.exists() else ["-m", "geoeval"]),
            *words[1:],
        ]
    raise AssertionError(f"not a geoeval command: {line}")


@pytest.mark.slow
def test_the_quick_start_block_runs_as_written(tmp_path):
    for line in quick_commands():
        proc = subprocess.run(argv_of(line), check=False, cwd=tmp_path, capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, f"README command failed: {line}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
        if "model=oracle" in line:
            overall = proc.stdout.split("## Overall")[1].split("\n\n")[1]
            assert "| 1.000 |" in overall and not re.search(r"\|\s*0\.\d+\s*\|", overall), overall
        if "--by model,setting" in line:
            header = proc.stdout.splitlines()[0]
            assert header.count("setting") == 1 and "runs" in header
        if "--sql" in line:
            assert "geoeval/oracle" in proc.stdout and "geoeval/table_baseline" in proc.stdout


def _shown_run_commands(text: str) -> list[str]:
    """Every `python -m geoeval <overrides>` line a page shows (code lines, not prose)."""
    lines = []
    for raw in text.splitlines():
        line = raw.strip()
        line = re.sub(r"^(\.venv/bin/|[A-Z_]+=\S+ )+", "", line)
        if re.match(r"^python -m geoeval( |$)", line) and "<" not in line:
            lines.append(line)
    return lines


@pytest.mark.slow
def test_every_run_command_the_readme_and_docs_show_is_a_valid_config():
    from geoeval.core.config.precheck import precheck

    shown_by_page = {page: _shown_run_commands(text) for page, text in documentation().items()}
    shown = [(page, line) for page, lines in shown_by_page.items() for line in lines]
    # the README's own tour shows a handful; with the reference pages (running, real models,
    # cluster, performance) they are the 20-odd commands the single-page README used to show
    assert len(shown_by_page["README.md"]) >= 8, shown_by_page["README.md"]
    assert len(shown) >= 25, shown
    for page, line in shown:
        overrides = argv_of(line)[3:]  # after python -m geoeval
        overrides = [o for o in overrides if o != "-m"]
        if any("," in o and "=" in o and not o.startswith(("suite.categories", "+")) for o in overrides):
            overrides = [o.split(",")[0] if "," in o and "[" not in o else o for o in overrides]  # one job of a sweep
        try:
            as_run = precheck(overrides)
            hydra_composes(as_run)  # what Hydra is handed composes too (a key the YAML lacks needs `+`)
        except Exception as exc:  # noqa: BLE001 - the message is the point
            raise AssertionError(f"{page} command does not validate: {line}\n{exc}") from None


def hydra_composes(overrides: list[str]) -> None:
    """Plain Hydra composes `overrides` as `python -m geoeval` hands them to it after precheck
    (no retry): `model.serve.prompt_log_path=x` without the `+` once failed only here."""
    from hydra import compose, initialize_config_module

    from geoeval.core.config.search_path import register

    register()
    from hydra.errors import MissingConfigException

    with initialize_config_module(config_module="geoeval.conf", version_base="1.3"):
        try:
            compose(config_name="config", overrides=overrides)
        except MissingConfigException as exc:
            if "experiment/my_" not in str(exc):  # the docs' example of your own experiment file
                raise


def test_the_docs_exist_that_the_readme_and_test_rely_on():
    assert (REPO / "docs" / "running.md") in DOCS, "docs/running.md (the config-group table) is gone"
    for page in DOCS:
        assert f"(docs/{page.name})" in README, f"README's Documentation list does not link docs/{page.name}"


@pytest.mark.parametrize("group", ["env", "suite", "model", "judge", "metrics", "runner", "tracking", "experiment"])
def test_the_running_table_names_every_shipped_option(group):
    rows = [
        (page, line)
        for page, text in documentation().items()
        for line in text.splitlines()
        if line.startswith(f"| `{group}` |")
    ]
    assert any(page == "docs/running.md" for page, _ in rows), (
        f"docs/running.md's config-group table has no row for {group}"
    )
    shipped = sorted(p.stem for p in (REPO / "conf" / group).glob("*.yaml"))
    assert shipped, f"conf/{group}/ ships no option"
    for page, row in rows:  # every table that lists the group's options lists all of them
        missing = [name for name in shipped if f"`{name}`" not in row]
        assert not missing, f"{page}'s {group} row leaves out {missing}"


#: README run commands that need what a test machine has not (a key, a served or local model, a
#: shared disk, four Ray workers) or repeat another one with more processes
NOT_CHEAP = re.compile(
    r"model=(openai|openai_api|local_llm)|results_db=/shared|num_workers=4|max_concurrent_jobs|maptab-full"
)


def cheap_readme_commands() -> list[str]:
    """The `python -m geoeval` and `geoeval data fetch` commands of the README (code blocks and
    the suites table) and of docs/data.md that a fresh machine runs offline in a minute or two."""
    pages = README + (REPO / "docs" / "data.md").read_text(encoding="utf-8")
    shown = _shown_run_commands(pages) + re.findall(r"`(python -m geoeval [^`]*)`", pages)
    shown += [f"geoeval data fetch {name}" for name in re.findall(r"geoeval data fetch ([a-z-]+)", pages)]
    shown = [re.sub(r"\s+#.*$", "", line).strip() for line in shown]  # one run per command, comments aside
    return [line for line in dict.fromkeys(shown) if not NOT_CHEAP.search(line)]


@pytest.mark.slow
@pytest.mark.conformance
def test_every_cheap_readme_command_runs_from_a_fresh_directory(tmp_path):
    """From a directory that is not the checkout, with the authors' data in a cache copied from
    another machine (docs/data.md: `geoeval data fetch` verifies it offline)."""
    from tests.conftest import PEERS

    if not PEERS.is_dir():
        pytest.skip("../shared/peers (the authors' files, copied into the cache) is not present")
    cache = tmp_path / "cache"
    shutil.copytree(PEERS / "maptab", cache / "maptab-sample")
    shutil.copytree(PEERS / "mapsatisfy", cache / "mapsatisfy-demo")
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    assert REPO not in fresh.parents and fresh != REPO
    commands = cheap_readme_commands()
    fetches = [c for c in commands if c.startswith("geoeval data fetch")]
    assert "python -m geoeval +experiment=mapsatisfy_demo" in commands and len(fetches) == 2, commands
    env = {**os.environ, "GEOEVAL_DATA_DIR": str(cache)}
    for line in fetches + [c for c in commands if c not in fetches]:  # the data first, as the README says
        proc = subprocess.run(
            argv_of(line), check=False, cwd=fresh, env=env, capture_output=True, text=True, timeout=900
        )
        assert proc.returncode == 0, f"README command failed: {line}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
        assert "warning: resumed MLflow run" not in proc.stderr, line
