"""The results warehouse: every run, sample and score of a project in one DuckDB file.

Three tables, one row shape for every suite:

- `runs`: one row per run (keyed by the config hash `run_hash`), with its config and status;
- `samples`: one row per evaluated (sample, epoch) of a run, with its answer and dimensions;
- `scores`: one row per (sample, epoch, metric), with the sample's dimensions repeated so that
  any split is a plain `GROUP BY` without a join.

plus `schema_version`, which records the schema the file was written with so that a later geoeval
can migrate it (see `MIGRATIONS` in `geoeval.core.warehouse.schema`).

Resume: the runner asks `finished_keys(run_hash)` before it starts and skips what is stored.
`write_results` writes a batch of samples and all their scores in one transaction, so a run that is
killed midway never leaves a sample without its scores: what is stored is finished.

Rewrites replace: writing a (run_hash, sample_id, epoch) that is already stored replaces the sample
row and its whole score set (a metric missing from the new write does not linger from the old one).
Writing the same result twice therefore leaves the file as one write would.

Concurrency: DuckDB lets one process hold a file open for writing, and no reader in while it
does. So a `Warehouse` holds its file only while it works, under a lock file beside it
(`<file>.lock`, `fcntl.flock`: exclusive for writes, shared for reads), and several geoeval runs
can write one warehouse at once (their batches interleave) while `geoeval results` reads it; each
waits at most `lock_timeout_s` for its turn. An open costs ~10-20 ms: `held()` shares one among a
job's bookkeeping steps, and a job's writer keeps the file open between its commits (`keep_open`)
until another process waits for it (`yield_to_waiters`): opens grow with contention, not samples.
The other designs considered: per-run Parquet parts attached at
read time (no lock, but every query unions many files and resume must read them all), and a
single writer service (one more process to run and find). Only the driver writes (Ray workers
return results to it).

Every value reaches DuckDB as a bound parameter, never interpolated into SQL text.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from geoeval.core.errors import GeoevalError
from geoeval.core.records import SampleResult
from geoeval.core.warehouse.lock import (
    CHECKED_FILES,
    LockedConnection,
    check_free_space,
    file_identity,
    first_line,
    probe_reads,
    write_failure,
)
from geoeval.core.warehouse.rows import batch_tables, parse_trajectories, rebuild_results, trajectory_table
from geoeval.core.warehouse.schema import (
    MIGRATIONS,
    REGISTERED,
    SAMPLE_TABLE_COLUMNS,
    SCHEMA_DDL,
    SCHEMA_VERSION,
    SCORE_TABLE_COLUMNS,
    SCORES_SELECT,
    TRAJECTORY_TABLE_COLUMNS,
    replace_delete_sql,
)

if TYPE_CHECKING:
    import pandas as pd


def _now() -> datetime:
    return datetime.now(timezone.utc)


class Warehouse:
    """One DuckDB results file.

    `Warehouse(path)` creates the file (and its parent folders) and the tables if missing;
    `Warehouse(":memory:")` keeps everything in memory. `Warehouse(path, read_only=True)` reads
    an existing file (the `geoeval results` CLI does this): a missing file is a `GeoevalError`.
    Use it as a context manager, or call `close()`. One object is safe to share between threads
    of one process (calls are serialised), and several processes may use one file at once (see
    the module doc: each operation holds the file only while it runs). `config_key` is how
    messages name the file (`--db` for the CLI, `results_db=` for a run). `check_readable=True`
    runs `check_readable` in the same open of the file as the schema's creation (a run's start),
    once per process and file (`CHECKED_FILES`).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        read_only: bool = False,
        config_key: str = "--db",
        lock_timeout_s: float = 120.0,
        check_readable: bool = False,
    ) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self.config_key = config_key
        self.lock_timeout_s = lock_timeout_s
        self._lock = threading.RLock()
        self._closed = False
        self._memory: duckdb.DuckDBPyConnection | None = None
        self._file = LockedConnection(self.path, read_only=read_only, timeout_s=lock_timeout_s, key=config_key)
        in_memory = str(path) == ":memory:"
        if read_only and not in_memory and not self.path.is_file():
            raise GeoevalError(
                f"no results database at {self.path}: run an evaluation first, or point --db "
                "(or GEOEVAL_DB) at an existing .duckdb file"
            )
        if in_memory:
            self._memory = duckdb.connect(":memory:")
        else:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                raise GeoevalError(
                    f"cannot create the folder of {self.path} ({error.strerror}): "
                    f"point {config_key} at a writable place"
                ) from None
            if not read_only and self.path.exists() and not os.access(self.path, os.W_OK):
                raise GeoevalError(f"{self.path} is read-only: point {config_key} at a writable file")
        if check_readable and not in_memory:
            check_free_space(self.path, config_key)
        identity = file_identity(self.path) if check_readable and not read_only else None
        if identity is not None and identity in CHECKED_FILES:
            return  # this process created its schema and checked it (a sweep's earlier job): no open
        with self._session() as con:
            self._prepare_schema(con)
            if check_readable and not in_memory:  # in the same open of the file (~20 ms each)
                probe_reads(con, self.path, self.config_key)
        identity = file_identity(self.path) if check_readable and not read_only else None
        if identity is not None:
            CHECKED_FILES.add(identity)

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        """Release the warehouse (idempotent). Later calls raise."""
        with self._lock:
            self._closed = True
            self._file.close()
            if self._memory is not None:
                self._memory.close()
                self._memory = None

    def __enter__(self) -> Warehouse:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        mode = "read-only" if self.read_only else "read-write"
        return f"Warehouse({str(self.path)!r}, {mode})"

    @contextmanager
    def _session(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection for one operation: the in-memory one, or the file's under the lock (shared
        by nested calls, closed afterwards unless kept open, so other processes get their turn)."""
        with self._lock:
            if self._closed:
                raise RuntimeError(f"{self!r} is closed")
            if self._memory is not None:
                yield self._memory
                return
            con, failed = self._file.enter(), True
            try:
                yield con
                failed = False
            finally:
                self._file.exit(failed)

    def keep_open(self, keep: bool) -> None:
        """Keep the file open between operations; the holder then calls `yield_to_waiters` often."""
        with self._lock:
            self._file.keep(keep)

    def yield_to_waiters(self) -> bool:
        """Close a kept file when another process (or another `Warehouse` here) waits for it."""
        with self._lock:
            return self._file.yield_to_waiters()

    @contextmanager
    def held(self) -> Iterator[Warehouse]:
        """Hold the file for a short run of operations: they share one connection and one turn of
        the lock instead of opening the file each (an open costs ~10-20 ms, a job makes a dozen).
        Other processes, and this object's other threads, wait until the block ends, so keep it to
        bookkeeping: never an evaluation."""
        with self._session():
            yield self

    def _prepare_schema(self, con: duckdb.DuckDBPyConnection) -> None:
        tables = {
            row[0]
            for row in con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'"
            ).fetchall()
        }
        if self.read_only:
            if "schema_version" not in tables:
                raise GeoevalError(
                    f"{self.path} is not a geoeval results database (it has no schema_version "
                    "table): point --db at the file a geoeval run wrote"
                )
        else:
            for statement in SCHEMA_DDL:
                con.execute(statement)
        row = con.execute("SELECT max(version) FROM schema_version").fetchone()
        version = row[0] if row else None
        if version is None:
            if self.read_only:
                raise GeoevalError(f"{self.path} has no schema version: it was not fully created")
            con.execute("INSERT INTO schema_version VALUES (?, ?)", [SCHEMA_VERSION, _now()])
            return
        if version > SCHEMA_VERSION:
            raise GeoevalError(
                f"{self.path} has schema version {version}, newer than this geoeval understands "
                f"({SCHEMA_VERSION}): upgrade geoeval, or use another --db path"
            )
        if version < SCHEMA_VERSION:
            if self.read_only:
                raise GeoevalError(
                    f"{self.path} has schema version {version}; this geoeval needs "
                    f"{SCHEMA_VERSION}: open it once for writing (any geoeval run) to migrate it"
                )
            self._migrate(con, version)

    def _migrate(self, con: duckdb.DuckDBPyConnection, version: int) -> None:
        con.begin()
        try:
            while version < SCHEMA_VERSION:
                for statement in MIGRATIONS[version]:
                    con.execute(statement)
                version += 1
                con.execute("INSERT INTO schema_version VALUES (?, ?)", [version, _now()])
            con.commit()
        except BaseException:
            con.rollback()
            raise

    # -- runs --------------------------------------------------------------------------------

    def register_run(
        self,
        run_hash: str,
        *,
        suite: str,
        model: str,
        config: dict[str, Any],
        experiment: str | None = None,
    ) -> None:
        """Insert the run, or update it if it exists (a resume): suite, model, config and
        `updated_at` are overwritten; `created_at`, `status` and `mlflow_run_id` are kept, and so
        is `experiment` when the new one is None. `config` must be JSON-serialisable (values that
        are not, such as paths, are stored as their `str`)."""
        config_json = json.dumps(config, sort_keys=True, default=str)
        now = _now()
        with self._session() as con:
            con.execute(
                """
                INSERT INTO runs (run_hash, suite, model, experiment, config_json, created_at,
                                  updated_at, status, mlflow_run_id)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)
                ON CONFLICT (run_hash) DO UPDATE SET
                    suite = excluded.suite,
                    model = excluded.model,
                    experiment = COALESCE(excluded.experiment, runs.experiment),
                    config_json = excluded.config_json,
                    updated_at = excluded.updated_at
                """,
                [run_hash, suite, model, experiment, config_json, now, now, REGISTERED],
            )

    def set_run_status(self, run_hash: str, status: str, mlflow_run_id: str | None = None) -> None:
        """Set the run's status (e.g. "running", "finished", "failed"); `mlflow_run_id` is kept
        when None. The run must be registered (a `LookupError` otherwise: that is a bug)."""
        with self._session() as con:
            row = con.execute(
                """
                UPDATE runs SET status = ?, mlflow_run_id = COALESCE(?, mlflow_run_id),
                                updated_at = ?
                WHERE run_hash = ?
                RETURNING run_hash
                """,
                [status, mlflow_run_id, _now(), run_hash],
            ).fetchall()
        if not row:
            raise LookupError(f"run {run_hash!r} is not registered: call register_run first")

    def runs(self, suite: str | None = None) -> list[dict[str, Any]]:
        """Every run that is registered or has samples, oldest first (then by hash), as dicts:
        run_hash, suite, model, experiment, config (dict), created_at, updated_at, status,
        mlflow_run_id, n_samples. A run with samples but no `runs` row takes its suite and model
        from its samples and has status None. `suite` keeps only that suite's runs."""
        sql = """
            WITH s AS (
                SELECT run_hash, min(suite) AS suite, min(model) AS model, count(*) AS n_samples
                FROM samples GROUP BY run_hash
            ),
            h AS (SELECT run_hash FROM runs UNION SELECT run_hash FROM s)
            SELECT h.run_hash,
                   COALESCE(r.suite, s.suite) AS suite,
                   COALESCE(NULLIF(r.model, ''), s.model, '') AS model,
                   r.experiment, CAST(r.config_json AS VARCHAR), r.created_at, r.updated_at,
                   r.status, r.mlflow_run_id, COALESCE(s.n_samples, 0)
            FROM h LEFT JOIN runs r USING (run_hash) LEFT JOIN s USING (run_hash)
            WHERE ? IS NULL OR COALESCE(r.suite, s.suite) = ?
            ORDER BY r.created_at NULLS LAST, h.run_hash
        """
        with self._session() as con:
            rows = con.execute(sql, [suite, suite]).fetchall()
        keys = (
            "run_hash",
            "suite",
            "model",
            "experiment",
            "config",
            "created_at",
            "updated_at",
            "status",
            "mlflow_run_id",
            "n_samples",
        )
        runs = []
        for row in rows:
            run = dict(zip(keys, row))
            run["config"] = json.loads(run["config"]) if run["config"] is not None else {}
            runs.append(run)
        return runs

    def add_run_logs(self, run_hash: str, paths: Sequence[str]) -> None:
        """Record Inspect log files written for `run_hash` (idempotent)."""
        now = _now()
        with self._session() as con:
            for path in paths:
                con.execute("INSERT INTO run_logs VALUES (?, ?, ?) ON CONFLICT DO NOTHING", [run_hash, str(path), now])

    def run_logs(self, run_hash: str) -> list[str]:
        """The Inspect logs recorded for `run_hash`, oldest first."""
        with self._session() as con:
            rows = con.execute(
                "SELECT path FROM run_logs WHERE run_hash = ? ORDER BY added_at, path", [run_hash]
            ).fetchall()
        return [row[0] for row in rows]

    # -- samples and scores ------------------------------------------------------------------

    def finished_keys(self, run_hash: str, *, include_errors: bool = True) -> set[tuple[str, int]]:
        """The (sample_id, epoch) pairs of `run_hash` already stored; the runner skips them on
        resume. With `include_errors=False`, samples stored with an error are left out, so a
        resume retries them (their new result then replaces the stored one)."""
        sql = "SELECT sample_id, epoch FROM samples WHERE run_hash = ?"
        if not include_errors:
            sql += " AND error IS NULL"
        with self._session() as con:
            rows = con.execute(sql, [run_hash]).fetchall()
        return {(sample_id, int(epoch)) for sample_id, epoch in rows}

    def check_readable(self) -> None:
        """Read what a write will read, before any work: the key columns of `samples` and `scores`
        (the join each write's replace step scans), in a transaction that changes nothing. A file
        that opens but is cut short or overwritten past its header fails here, named damaged, and
        not after every sample of a run has been evaluated; so does a disk with no room left."""
        if self._memory is None:
            check_free_space(Path(self.path), self.config_key)
        with self._session() as con:
            if self._memory is None:
                probe_reads(con, self.path, self.config_key)

    def write_results(self, results: Sequence[SampleResult], *, generation_hash: str | None = None) -> None:
        """Store a batch of results in ONE transaction: every sample row with all its score rows,
        or (on any error) nothing. A result whose (run_hash, sample_id, epoch) is already stored
        replaces it, score set included; within one batch the last of duplicates wins. With a
        `generation_hash`, each result's recorded model calls that include a new (not replayed)
        call are stored in `trajectories` in the same transaction, replacing what was stored."""
        latest: dict[tuple[str, str, int], SampleResult] = {}
        for result in results:
            latest[(result.run_hash, result.sample_id, result.epoch)] = result
        if not latest:
            return
        now = _now()
        samples, scores = batch_tables(list(latest.values()), completed_at=now)
        trajectories = trajectory_table(list(latest.values()), generation_hash=generation_hash, created_at=now)
        try:
            self._write_batch(samples, scores, trajectories)
        except duckdb.Error as error:
            named = write_failure(Path(self.path), error, self.config_key)
            if named is None:
                raise
            raise named from None

    def _write_batch(self, samples: Any, scores: Any, trajectories: Any) -> None:
        """`write_results`' one transaction."""
        with self._session() as con:
            # The batch reaches DuckDB as Arrow tables (bulk, and still never spliced into SQL).
            con.register("_geoeval_new_samples", samples)
            con.register("_geoeval_new_scores", scores)
            if trajectories is not None:
                con.register("_geoeval_new_trajectories", trajectories)
            try:
                con.begin()
                try:
                    # Delete first, then insert: a rewrite replaces the whole score set.
                    for table in ("scores", "samples"):
                        con.execute(replace_delete_sql(table, "_geoeval_new_samples"))
                    con.execute(
                        f"INSERT INTO samples ({', '.join(SAMPLE_TABLE_COLUMNS)}) "
                        f"SELECT {', '.join(SAMPLE_TABLE_COLUMNS)} FROM _geoeval_new_samples"
                    )
                    self._insert_scores(con)
                    if trajectories is not None:
                        con.execute(
                            f"INSERT OR REPLACE INTO trajectories ({', '.join(TRAJECTORY_TABLE_COLUMNS)}) "
                            f"SELECT {', '.join(TRAJECTORY_TABLE_COLUMNS)} FROM _geoeval_new_trajectories"
                        )
                    con.commit()
                except BaseException:
                    # a commit that failed (a full disk) has ended the transaction: rolling it back
                    # again raised "no transaction is active" over the error that says why
                    with contextlib.suppress(duckdb.Error):
                        con.rollback()
                    raise
            finally:
                con.unregister("_geoeval_new_samples")
                con.unregister("_geoeval_new_scores")
                if trajectories is not None:
                    con.unregister("_geoeval_new_trajectories")

    def trajectories(self, generation_hash: str, keys: Iterable[tuple[str, int]]) -> dict[tuple[str, int], list[dict]]:
        """The stored model calls of `generation_hash` for the (sample_id, epoch) pairs in `keys`
        (a row whose JSON cannot be read is left out: `read_trajectories` names it)."""
        return self.read_trajectories(generation_hash, keys)[0]

    def read_trajectories(
        self, generation_hash: str, keys: Iterable[tuple[str, int]]
    ) -> tuple[dict[tuple[str, int], list[dict]], dict[tuple[str, int], str]]:
        """The stored model calls of `generation_hash` for the (sample_id, epoch) pairs in `keys`,
        and, apart, the pairs whose stored JSON cannot be read (cut short, edited), with why."""
        wanted = set(keys)
        if not wanted:
            return {}, {}
        with self._session() as con:
            rows = con.execute(
                "SELECT sample_id, epoch, CAST(calls AS VARCHAR) FROM trajectories WHERE generation_hash = ?",
                [generation_hash],
            ).fetchall()
        return parse_trajectories(rows, wanted)

    def sample_costs(self, run_hash: str) -> list[tuple[float | None, dict[str, Any]]]:
        """What each stored sample of `run_hash` cost (every invocation of it): `(cost_usd, usage)`,
        `cost_usd` None where a price is unknown (what a budget counts, `core.cost.budget`)."""
        with self._session() as con:
            rows = con.execute(
                "SELECT cost_usd, CAST(usage AS VARCHAR) FROM samples WHERE run_hash = ?", [run_hash]
            ).fetchall()
        return [(cost, json.loads(usage) if usage else {}) for cost, usage in rows]

    def _insert_scores(self, con: duckdb.DuckDBPyConnection) -> None:
        """The second half of `write_results`' transaction (a seam the tests break on purpose)."""
        con.execute(
            f"INSERT INTO scores ({', '.join(SCORE_TABLE_COLUMNS)}) "
            f"SELECT {', '.join(SCORE_TABLE_COLUMNS)} FROM _geoeval_new_scores"
        )

    def results(self, run_hash: str) -> list[SampleResult]:
        """The stored results of `run_hash`, rebuilt as `SampleResult`s, ordered by
        (sample_id, epoch) (string order of sample_id). Scores keep their metric order sorted."""
        with self._session() as con:
            samples = con.execute(
                """
                SELECT sample_id, epoch, model, answer, explanation, error, input_tokens,
                       output_tokens, suite, task_family, task, level, setting, capabilities,
                       CAST(extra AS VARCHAR), status, CAST(details AS VARCHAR), cost_usd, judge_cost_usd,
                       cache_hits, replayed_calls, CAST(usage AS VARCHAR), completion, stop_reason
                FROM samples WHERE run_hash = ? ORDER BY sample_id, epoch
                """,
                [run_hash],
            ).fetchall()
            score_rows = con.execute(
                "SELECT sample_id, epoch, metric, value FROM scores WHERE run_hash = ? "
                "ORDER BY sample_id, epoch, metric",
                [run_hash],
            ).fetchall()
        return rebuild_results(run_hash, samples, score_rows)

    def scores_frame(self, run_hash: str | Sequence[str] | None = None) -> pd.DataFrame:
        """One row per stored score, with the columns `SCORE_COLUMNS` (dimensions, the run's
        model, the sample's error), ordered by run_hash, sample_id, epoch, metric. `run_hash`
        selects one run, a list of runs, or (None) all of them."""
        sql = SCORES_SELECT
        params: list[Any] = []
        if run_hash is not None:
            hashes = [run_hash] if isinstance(run_hash, str) else list(run_hash)
            sql += " WHERE list_contains(?, s.run_hash)"
            params.append(hashes)
        sql += " ORDER BY s.run_hash, s.sample_id, s.epoch, s.metric"
        with self._session() as con:
            cursor = con.execute(sql, params)
            columns = [d[0] for d in cursor.description]
            rows = cursor.fetchall()
        import pandas as pd  # only here: a run that never reads a frame starts without pandas

        frame = pd.DataFrame.from_records(rows, columns=columns)
        if frame.empty:
            frame = frame.astype({"epoch": "int64", "value": "float64"})
        return frame

    def export_parquet(self, run_hash: str, path: str | Path) -> Path:
        """Write the run's per-sample scores (one row per (sample, epoch, metric), columns
        `SCORE_COLUMNS`) to a Parquet file; parent folders are created. Returns the path."""
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        # COPY takes the target as text, so the path is the one non-parameter: it is ours (not
        # data from a sample) and quoted by doubling single quotes.
        target = str(out).replace("'", "''")
        with self._session() as con:
            con.execute(
                f"COPY ({SCORES_SELECT} WHERE s.run_hash = ? "
                "ORDER BY s.sample_id, s.epoch, s.metric) "
                f"TO '{target}' (FORMAT parquet)",
                [run_hash],
            )
        return out

    # -- raw SQL -----------------------------------------------------------------------------

    def query(self, sql: str, params: Sequence[Any] | None = None) -> tuple[list[str], list[tuple]]:
        """Run one SQL statement (the `geoeval results --sql` escape hatch) and return
        (column names, rows). A statement that returns nothing gives ([], []). Bad SQL is a
        `GeoevalError` carrying DuckDB's first message line."""
        with self._session() as con:
            try:
                cursor = con.execute(sql, list(params) if params is not None else None)
                if cursor.description is None:
                    return [], []
                columns = [d[0] for d in cursor.description]
                return columns, cursor.fetchall()
            except duckdb.Error as error:
                raise GeoevalError(f"SQL failed: {first_line(error)}") from None
