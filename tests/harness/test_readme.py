"""The README and the docs work as written: the README's quick-start block runs command by command
in an empty directory, every other `python -m geoeval` command that the README or a page of `docs/`
shows composes and validates, and the config-group table of the docs names every shipped option."""

from __future__ import annotations

import re
import shlex
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
            precheck(overrides)
        except Exception as exc:  # noqa: BLE001 - the message is the point
            raise AssertionError(f"{page} command does not validate: {line}\n{exc}") from None


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
