"""`geoeval compare A B`: pairs, intervals and tests from a warehouse built here by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from geoeval.cli.compare import compare_results, main, pair_results
from geoeval.core.records import Dimensions, SampleResult
from geoeval.core.warehouse.store import Warehouse

RUN_A = "aaaa1111aaaa1111"
RUN_B = "bbbb2222bbbb2222"
RUN_B2 = "bbbb3333bbbb3333"  # shares the prefix "bbbb" with RUN_B
RUN_OTHER = "cccc4444cccc4444"  # other samples entirely


def result(
    run: str, sample: str, ema: float, pma: float, level: str, map_name: str, status: str = "scored"
) -> SampleResult:
    return SampleResult(
        run_hash=run,
        sample_id=sample,
        model=run[:4],
        status=status,
        scores={"ema": ema, "pma": pma},
        dims=Dimensions(suite="maptab", level=level, extra={"map": map_name}),
    )


def paired_runs() -> tuple[list[SampleResult], list[SampleResult]]:
    """12 common scored samples, each on its own map: A alone right on 8 (s01-s08, easy), B alone
    on 2 (s09-s10, hard), both on 2 (s11-s12, hard). PMA: B = A + 0.1 on the hard ones. Plus
    s13 only in A, s14 only in B, s15 errored in A, s16 errored in B."""
    runs_a, runs_b = [], []
    for i in range(1, 13):
        sample, level = f"s{i:02d}", "easy" if i <= 8 else "hard"
        a_right, b_right = i <= 8 or i >= 11, i >= 9
        pma_a = 0.5
        pma_b = 0.5 if level == "easy" else 0.6
        runs_a.append(result(RUN_A, sample, float(a_right), pma_a, level, f"m{i:02d}"))
        runs_b.append(result(RUN_B, sample, float(b_right), pma_b, level, f"m{i:02d}"))
    runs_a.append(result(RUN_A, "s13", 1.0, 1.0, "easy", "m13"))
    runs_b.append(result(RUN_B, "s14", 1.0, 1.0, "easy", "m14"))
    runs_a.append(result(RUN_A, "s15", 0.0, 0.0, "easy", "m15", status="error"))
    runs_b.append(result(RUN_B, "s15", 1.0, 1.0, "easy", "m15"))
    runs_a.append(result(RUN_A, "s16", 1.0, 1.0, "easy", "m16"))
    runs_b.append(result(RUN_B, "s16", 0.0, 0.0, "easy", "m16", status="error"))
    return runs_a, runs_b


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "results" / "geoeval.duckdb"
    runs_a, runs_b = paired_runs()
    with Warehouse(path) as wh:
        for run, model in ((RUN_A, "weak"), (RUN_B, "strong"), (RUN_B2, "other"), (RUN_OTHER, "x")):
            wh.register_run(run, suite="maptab", model=model, config={})
        wh.write_results(runs_a + runs_b)
        wh.write_results([result(RUN_OTHER, "z1", 1.0, 1.0, "easy", "m1")])
    return path


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_pairing_counts_what_is_left_out() -> None:
    pairs, counts = pair_results(*paired_runs())
    assert len(pairs) == 12
    assert counts == {"common": 14, "pairs": 12, "only_a": 1, "only_b": 1, "errored_a": 1, "errored_b": 1}


def test_compare_table_with_mcnemar_and_sign_flip(db: Path, capsys) -> None:
    code, out, err = run_cli(capsys, RUN_A, RUN_B, "--db", str(db))
    assert code == 0, err
    assert "A = aaaa1111aaaa (model weak, suite maptab, 15 samples)" in out
    assert (
        "paired on 12 common scored samples; left out: 1 only in A, 1 only in B, 1 errored in A, 1 errored in B"
    ) in out
    ema = next(line for line in out.splitlines() if line.startswith("| ema"))
    cells = [cell.strip() for cell in ema.strip("|").split("|")]
    # n, mean A 10/12, mean B 4/12, B - A, CI, McNemar b=8 c=2 -> 0.109375
    assert cells[:6] == ["ema", "12", "12", "0.833", "0.333", "-0.500"]
    assert cells[7:] == ["mcnemar_exact", "0.109"]
    pma = next(line for line in out.splitlines() if line.startswith("| pma"))
    cells = [cell.strip() for cell in pma.strip("|").split("|")]
    # four hard pairs differ by +0.1 each: the sign-flip test sees 2 of 16 patterns at |0.4|
    assert cells[:6] == ["pma", "12", "12", "0.500", "0.533", "0.033"]
    assert cells[7:] == ["sign_flip_exact", "0.125"]


def test_compare_by_level_and_json(db: Path, capsys, tmp_path: Path) -> None:
    out_file = tmp_path / "out" / "cmp.json"
    code, out, err = run_cli(
        capsys, "aaaa", "bbbb2", "--db", str(db), "--metrics", "ema", "--by", "level", "--json", str(out_file)
    )
    assert code == 0, err
    report = json.loads(out_file.read_text())
    assert report["a"]["run_hash"] == RUN_A and report["b"]["model"] == "strong"
    assert report["pairing"]["only_a"] == 1
    rows = {row["level"]: row for row in report["rows"]}
    assert list(rows) == ["(all)", "easy", "hard"]
    assert rows["(all)"]["p_value"] == 0.109375 and rows["(all)"]["only_a"] == 8
    assert rows["easy"]["n"] == 8 and rows["easy"]["difference"] == -1.0
    assert rows["easy"]["p_value"] == pytest.approx(2 / 2**8)  # McNemar b=8, c=0
    # all 8 easy differences are -1: every bootstrap mean is -1
    assert (rows["easy"]["ci_low"], rows["easy"]["ci_high"]) == (-1.0, -1.0)
    assert rows["hard"]["n"] == 4 and rows["hard"]["difference"] == 0.5
    assert "| level" in out and "| easy" in out


def test_clusters_change_the_test_and_the_interval() -> None:
    runs_a, runs_b = paired_runs()
    # put the 12 samples on two maps: McNemar no longer applies
    by_map = compare_results(runs_a, runs_b, metrics=["ema"], cluster_key="level")
    row = by_map["rows"][0]
    assert (row["n_clusters"], row["test"]) == (2, "sign_flip_exact")
    # two cluster totals (-8 easy, +2 hard): sums -6, -10, 10, 6 -> every |sum| >= 6
    assert row["p_value"] == 1.0
    independent = compare_results(runs_a, runs_b, metrics=["ema"], cluster_key="sample")["rows"][0]
    assert independent["test"] == "mcnemar_exact"
    assert (independent["ci_high"] - independent["ci_low"]) < (row["ci_high"] - row["ci_low"])


@pytest.mark.parametrize(
    "argv, message",
    [
        (["zzzz", RUN_B], "geoeval: error: no run 'zzzz' in "),
        (
            [RUN_A, "bbbb"],
            (
                "geoeval: error: run prefix 'bbbb' is ambiguous: it matches bbbb2222bbbb, "
                "bbbb3333bbbb; give more characters"
            ),
        ),
        ([RUN_A, "cccc"], "geoeval: error: the two runs have no common scored sample (0 in common"),
        ([RUN_A, RUN_B, "--metrics", "acc"], "geoeval: error: metric 'acc' is not in both runs: choose from ema, pma"),
        ([RUN_A, RUN_B, "--by", "colour"], "geoeval: error: unknown dimension 'colour': split by one of "),
    ],
)
def test_mistakes_are_one_line_and_exit_2(db: Path, capsys, argv: list[str], message: str) -> None:
    code, out, err = run_cli(capsys, *argv, "--db", str(db))
    assert code == 2 and out == ""
    assert err.startswith(message) and err.count("\n") == 1


def test_missing_database_is_an_error(tmp_path: Path, capsys) -> None:
    code, _, err = run_cli(capsys, RUN_A, RUN_B, "--db", str(tmp_path / "none.duckdb"))
    assert code == 2 and err.startswith("geoeval: error: no results database at ")


def test_geoeval_cli_dispatches_compare_and_data(db: Path, capsys) -> None:
    from geoeval.cli.main import main as geoeval_main

    assert geoeval_main(["compare", RUN_A, RUN_B, "--db", str(db), "--metrics", "ema"]) == 0
    assert "mcnemar_exact" in capsys.readouterr().out
    assert geoeval_main(["data", "path", "maptab-sample", "--cache", "/tmp/x"]) == 0
    assert capsys.readouterr().out.strip() == "/tmp/x/maptab-sample"


def test_few_clusters_get_a_note(db: Path, capsys) -> None:
    code, out, _ = run_cli(capsys, RUN_A, RUN_B, "--db", str(db), "--cluster", "level", "--metrics", "ema")
    assert code == 0
    assert "note: some rows rest on fewer than 10 clusters (2): bootstrap intervals from so few understate" in out
    code, out, _ = run_cli(capsys, RUN_A, RUN_B, "--db", str(db), "--metrics", "ema")
    assert "note:" not in out  # 12 independent pairs
