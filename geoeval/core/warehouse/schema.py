"""The warehouse's schema: the DuckDB tables (`runs`, `samples`, `scores`, `run_logs`,
`invocations`, `trajectories`, `claims`, `schema_version`), the migrations between schema versions, and the Arrow schemas rows travel in.

One set of Arrow fields describes both the rows a batch writes (`SAMPLES_ARROW`, `SCORES_ARROW`)
and the per-sample score export (`SCORE_ARROW_SCHEMA`): the export is the `scores` row plus the
run's model and the sample's error and status, so it is derived from the same fields.
"""

from __future__ import annotations

import pyarrow as pa

#: The schema this code writes. Bump it, and add the step to `MIGRATIONS`, when a table changes.
SCHEMA_VERSION = 4

#: `MIGRATIONS[n]` holds the statements that take a file from schema version n to n + 1.
MIGRATIONS: dict[int, list[str]] = {
    # 1 -> 2: each sample has a status ('scored' | 'error') and details (judge votes, raw replies).
    # Version-1 files stored errored samples with 0 on every metric: those scores become NULL.
    1: [
        "ALTER TABLE samples ADD COLUMN status VARCHAR DEFAULT 'scored'",
        "ALTER TABLE samples ADD COLUMN details JSON DEFAULT '{}'",
        "UPDATE samples SET status = 'error' WHERE error IS NOT NULL",
        """UPDATE scores SET value = NULL FROM samples p
           WHERE p.status = 'error' AND scores.run_hash = p.run_hash
             AND scores.sample_id = p.sample_id AND scores.epoch = p.epoch""",
    ],
    # 2 -> 3: the model's raw last output and its stop reason beside the extracted answer; what each sample cost (USD; NULL: unknown price, or stored before prices), its cache
    # hits and replayed calls, its tokens by model; the `trajectories` table is created by the DDL
    2: [
        "ALTER TABLE samples ADD COLUMN cost_usd DOUBLE",
        "ALTER TABLE samples ADD COLUMN judge_cost_usd DOUBLE",
        "ALTER TABLE samples ADD COLUMN cache_hits INTEGER DEFAULT 0",
        "ALTER TABLE samples ADD COLUMN replayed_calls INTEGER DEFAULT 0",
        "ALTER TABLE samples ADD COLUMN usage JSON DEFAULT '{}'",
        "ALTER TABLE samples ADD COLUMN completion VARCHAR DEFAULT ''",
        "ALTER TABLE samples ADD COLUMN stop_reason VARCHAR DEFAULT ''",
    ],
    # 3 -> 4: who ran what: one row per invocation of a run (the `invocations` table, created by
    # the DDL), so a warehouse several researchers share says whose run evaluated which samples
    3: [],
}

_DIMENSION_COLUMNS_DDL = """
    suite VARCHAR NOT NULL,
    task_family VARCHAR NOT NULL,
    task VARCHAR NOT NULL,
    level VARCHAR NOT NULL,
    setting VARCHAR NOT NULL,
    capabilities VARCHAR[] NOT NULL,
    extra JSON NOT NULL"""

SCHEMA_DDL = [
    """CREATE TABLE IF NOT EXISTS schema_version (
        version INTEGER NOT NULL,
        applied_at TIMESTAMPTZ NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS runs (
        run_hash VARCHAR PRIMARY KEY,
        suite VARCHAR NOT NULL,
        model VARCHAR NOT NULL,
        experiment VARCHAR,
        config_json JSON NOT NULL,
        created_at TIMESTAMPTZ NOT NULL,
        updated_at TIMESTAMPTZ NOT NULL,
        status VARCHAR NOT NULL,
        mlflow_run_id VARCHAR
    )""",
    f"""CREATE TABLE IF NOT EXISTS samples (
        run_hash VARCHAR NOT NULL,
        sample_id VARCHAR NOT NULL,
        epoch INTEGER NOT NULL,
        model VARCHAR NOT NULL,
        answer VARCHAR NOT NULL,
        explanation VARCHAR NOT NULL,
        error VARCHAR,
        input_tokens BIGINT NOT NULL,
        output_tokens BIGINT NOT NULL,{_DIMENSION_COLUMNS_DDL},
        completed_at TIMESTAMPTZ NOT NULL,
        status VARCHAR DEFAULT 'scored',
        details JSON DEFAULT '{{}}',
        cost_usd DOUBLE,
        judge_cost_usd DOUBLE,
        cache_hits INTEGER DEFAULT 0,
        replayed_calls INTEGER DEFAULT 0,
        usage JSON DEFAULT '{{}}',
        completion VARCHAR DEFAULT '',
        stop_reason VARCHAR DEFAULT '',
        PRIMARY KEY (run_hash, sample_id, epoch)
    )""",
    f"""CREATE TABLE IF NOT EXISTS scores (
        run_hash VARCHAR NOT NULL,
        sample_id VARCHAR NOT NULL,
        epoch INTEGER NOT NULL,
        metric VARCHAR NOT NULL,
        value DOUBLE,{_DIMENSION_COLUMNS_DDL},
        PRIMARY KEY (run_hash, sample_id, epoch, metric)
    )""",
    # each sample's model calls (the evaluated model's and its simulated roles'), keyed by the
    # generation identity, so that a run that scores differently replays them instead of paying
    # for them again (`core/run/replay.py`); `calls` is a JSON list of {role, model, digest, output}
    """CREATE TABLE IF NOT EXISTS trajectories (
        generation_hash VARCHAR NOT NULL,
        sample_id VARCHAR NOT NULL,
        epoch INTEGER NOT NULL,
        run_hash VARCHAR NOT NULL,
        n_calls INTEGER NOT NULL,
        calls JSON NOT NULL,
        created_at TIMESTAMPTZ NOT NULL,
        PRIMARY KEY (generation_hash, sample_id, epoch)
    )""",
    # the Inspect logs each run wrote (every invocation of it): a run lists and logs only its own
    """CREATE TABLE IF NOT EXISTS run_logs (
        run_hash VARCHAR NOT NULL,
        path VARCHAR NOT NULL,
        added_at TIMESTAMPTZ NOT NULL,
        PRIMARY KEY (run_hash, path)
    )""",
    # who ran what: one row per invocation of a run (a first run, a resume, a rerun by a
    # colleague on a shared warehouse), with how many samples it evaluated and how many it took
    # from the warehouse as they were
    """CREATE TABLE IF NOT EXISTS invocations (
        invocation_id VARCHAR PRIMARY KEY,
        run_hash VARCHAR NOT NULL,
        researcher VARCHAR NOT NULL,
        host VARCHAR NOT NULL,
        pid INTEGER NOT NULL,
        started_at TIMESTAMPTZ NOT NULL,
        ended_at TIMESTAMPTZ,
        status VARCHAR NOT NULL,
        n_evaluated INTEGER,
        n_reused INTEGER,
        mlflow_run_id VARCHAR
    )""",
    # who is evaluating which sample now (`warehouse/claims.py`): a second process on the same
    # config waits for another's claimed samples instead of paying for them twice. A new table
    # only, created on every read-write open: no schema version step (older geoeval ignores it)
    """CREATE TABLE IF NOT EXISTS claims (
        run_hash VARCHAR NOT NULL,
        sample_id VARCHAR NOT NULL,
        epoch INTEGER NOT NULL,
        owner VARCHAR NOT NULL,
        host VARCHAR NOT NULL,
        pid INTEGER NOT NULL,
        started_at TIMESTAMPTZ NOT NULL,
        heartbeat_at TIMESTAMPTZ NOT NULL,
        PRIMARY KEY (run_hash, sample_id, epoch)
    )""",
]

#: Status a run gets when it is first registered; the runner moves it on with `set_run_status`.
REGISTERED = "registered"

# The Arrow fields of the tables' rows. A batch reaches DuckDB as Arrow tables with these types.
_DIMENSION_FIELDS = (
    ("suite", pa.string()),
    ("task_family", pa.string()),
    ("task", pa.string()),
    ("level", pa.string()),
    ("setting", pa.string()),
    ("capabilities", pa.list_(pa.string())),
    ("extra", pa.string()),  # a JSON object as text; DuckDB casts it to JSON on insert
)
_KEY_FIELDS = (("run_hash", pa.string()), ("sample_id", pa.string()), ("epoch", pa.int32()))
_VALUE_FIELDS = (("metric", pa.string()), ("value", pa.float64()))
SAMPLES_ARROW = pa.schema(
    [
        *_KEY_FIELDS,
        ("model", pa.string()),
        ("answer", pa.string()),
        ("explanation", pa.string()),
        ("error", pa.string()),
        ("input_tokens", pa.int64()),
        ("output_tokens", pa.int64()),
        *_DIMENSION_FIELDS,
        ("completed_at", pa.timestamp("us", tz="UTC")),
        ("status", pa.string()),
        ("details", pa.string()),  # a JSON object as text
        ("cost_usd", pa.float64()),
        ("judge_cost_usd", pa.float64()),
        ("cache_hits", pa.int32()),
        ("replayed_calls", pa.int32()),
        ("usage", pa.string()),  # a JSON object as text
        ("completion", pa.string()),
        ("stop_reason", pa.string()),
    ]
)
SCORES_ARROW = pa.schema([*_KEY_FIELDS, *_VALUE_FIELDS, *_DIMENSION_FIELDS])
TRAJECTORIES_ARROW = pa.schema(
    [
        ("generation_hash", pa.string()),
        ("sample_id", pa.string()),
        ("epoch", pa.int32()),
        ("run_hash", pa.string()),
        ("n_calls", pa.int32()),
        ("calls", pa.string()),  # a JSON list as text
        ("created_at", pa.timestamp("us", tz="UTC")),
    ]
)
SAMPLE_TABLE_COLUMNS = tuple(SAMPLES_ARROW.names)
SCORE_TABLE_COLUMNS = tuple(SCORES_ARROW.names)
TRAJECTORY_TABLE_COLUMNS = tuple(TRAJECTORIES_ARROW.names)

#: The columns of `scores_frame`, `export_parquet` and `analysis.reports.write_per_sample_parquet`, with
#: their Arrow types as `export_parquet` writes them (DuckDB names a list's item "element"), so a
#: Parquet file written from results in memory reads back the same: one row per
#: (sample, epoch, metric); `capabilities` is a list of strings, `extra` a JSON object as text,
#: `error` the sample's error (null when it did not error), `status` 'scored' or 'error'.
#: It is a `scores` row with the run's model after the key and the sample's error and status last.
SCORE_ARROW_SCHEMA = pa.schema(
    [
        *_KEY_FIELDS,
        ("model", pa.string()),
        *_VALUE_FIELDS,
        *(
            (name, pa.list_(pa.field("element", pa.string()))) if name == "capabilities" else (name, type_)
            for name, type_ in _DIMENSION_FIELDS
        ),
        ("error", pa.string()),
        ("status", pa.string()),
    ]
)
SCORE_COLUMNS: tuple[str, ...] = tuple(SCORE_ARROW_SCHEMA.names)

# The run's model wins over the sample's (they agree unless a scorer left the sample's empty).
SCORES_SELECT = """
    SELECT s.run_hash, s.sample_id, s.epoch,
           COALESCE(NULLIF(r.model, ''), p.model, '') AS model,
           s.metric, s.value, s.suite, s.task_family, s.task, s.level, s.setting,
           s.capabilities, CAST(s.extra AS VARCHAR) AS extra, p.error, p.status
    FROM scores s
    LEFT JOIN samples p USING (run_hash, sample_id, epoch)
    LEFT JOIN runs r USING (run_hash)
"""


def replace_delete_sql(table: str, keys: str) -> str:
    """The DELETE of a write's replace step: the rows of `table` whose key (run_hash, sample_id,
    epoch) is in `keys` (a table, or a subquery in parentheses). Both are geoeval's own names,
    never user text; the read check (`lock.probe_reads`) runs the same statement on no key."""
    return f"""
        DELETE FROM {table} USING {keys} AS n
        WHERE {table}.run_hash = n.run_hash
          AND {table}.sample_id = n.sample_id
          AND {table}.epoch = n.epoch
    """
