"""The Inspect logs of a sweep are told apart in `inspect view` (issue 40): each log carries its
sweep point, the swept values one a tag and the model, and no more tags (the viewer cuts a long
list, and Inspect keeps tags as a set, so order cannot say which matter); every setting is in its
task args, swept values first, and its metadata; and a Ray shard, whose worker does not know the
sweep point, gets it from the driver (the main sweep runs on Ray: its 50 logs had no point and
no task args)."""

from __future__ import annotations

import pytest
from inspect_ai.log import read_eval_log

from geoeval.core import registry
from geoeval.core.run.inspect_bridge import log_tags, run_shard
from geoeval.core.run.sweep_job import SweepJob, running_sweep_job
from tests.conftest import compose_spec

POINT = "resolution=0.25 setting=map"
OVERRIDES = ("model=oracle", "suite.categories=[map_only]", "env.n_maps=1", "suite.n_per_category=1")


@pytest.fixture
def in_sweep(tmp_path):
    with running_sweep_job(SweepJob(3, str(tmp_path / "sweep"), POINT)):
        yield


def test_the_tags_lead_with_the_point_and_its_swept_values(tmp_path):
    spec = compose_spec(tmp_path, *OVERRIDES, "suite.resolution=0.25", "suite.setting=map")
    assert log_tags(spec, POINT) == [f"sweep:{POINT}", "resolution=0.25", "setting=map", "model=geoeval/oracle"]
    outside = log_tags(spec)  # outside a sweep: the model and every setting
    assert outside[0] == "model=geoeval/oracle" and {"setting=map", "resolution=0.25"} <= set(outside)


def test_a_ray_shard_is_sent_the_sweep_point(tmp_path, in_sweep):
    from geoeval.core.run.runner import _job_context

    spec = compose_spec(tmp_path, *OVERRIDES, "runner=ray")
    assert _job_context(spec, None, tmp_path / "logs")["sweep_point"] == POINT


def test_a_shard_outside_the_sweeps_process_labels_its_log_with_the_point_it_was_sent(tmp_path):
    """As a Ray worker runs a shard: no sweep job in this process, the point given."""
    spec = compose_spec(tmp_path, *OVERRIDES, "suite.resolution=0.25", "suite.setting=map")
    suite = registry.get_suite("maptab")
    env = suite.build_env(spec)
    samples = suite.build_samples(spec, env)[:1]
    got: list = []
    (path,) = run_shard(spec, env, samples, shard=0, sink=got.append, log_dir=tmp_path / "logs", point=POINT)
    assert len(got) == 1 and got[0].status != "error"
    header = read_eval_log(path, header_only=True).eval
    assert set(header.tags) == {f"sweep:{POINT}", "resolution=0.25", "setting=map", "model=geoeval/oracle"}
    assert list(header.task_args)[:2] == ["resolution", "setting"], header.task_args
    assert header.task_args["resolution"] == 0.25 and header.task_args["model"] == "geoeval/oracle"
    assert header.metadata["geoeval_sweep_point"] == POINT
    assert header.task_display_name == f"maptab {POINT}"  # the viewer's TASK column
