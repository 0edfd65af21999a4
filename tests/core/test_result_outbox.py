"""`ResultOutbox`: a shard's results reach the queue in batches, all of them before `close`
returns, and a failed send fails the shard instead of losing results silently."""

from __future__ import annotations

import threading
import time

import pytest

from geoeval.core.records import Dimensions, SampleResult
from geoeval.core.run.runner import ResultOutbox


class FakeQueue:
    def __init__(self, fail: bool = False) -> None:
        self.batches: list[list[dict]] = []
        self.fail = fail
        self.lock = threading.Lock()

    def put_nowait_batch(self, items: list[dict]) -> None:
        if self.fail:
            raise ConnectionError("queue actor gone")
        with self.lock:
            self.batches.append(list(items))


def result(i: int) -> SampleResult:
    return SampleResult(
        run_hash="h", sample_id=f"s{i}", epoch=1, model="m", scores={"ema": 1.0}, dims=Dimensions(suite="maptab")
    )


def test_every_result_arrives_once_in_order_and_in_few_calls():
    queue = FakeQueue()
    outbox = ResultOutbox(queue, interval=0.05)
    for i in range(30):
        outbox.put(result(i))
        if i == 14:
            time.sleep(0.2)  # the thread sends what has gathered meanwhile
    outbox.close()
    sent = [item["sample_id"] for batch in queue.batches for item in batch]
    assert sent == [f"s{i}" for i in range(30)]
    assert 2 <= len(queue.batches) < 30  # batched, and streamed before the end


def test_a_failed_send_fails_the_shard():
    outbox = ResultOutbox(FakeQueue(fail=True), interval=0.01)
    outbox.put(result(0))
    time.sleep(0.1)
    with pytest.raises(ConnectionError):
        outbox.close()
