"""The asyncio client: the same calls, awaited, against the same server."""

from __future__ import annotations

import uuid

import datasets
import pandas as pd
import pytest
from helpers import rate, tasks

from verdict_client import (
    AsyncClient,
    Batch,
    Metrics,
    NotFoundError,
    UnauthorizedError,
    UploadError,
)


@pytest.mark.asyncio
async def test_the_async_client_does_what_the_blocking_one_does(server, rater, name, tmp_path):
    async with server.async_client("admin") as admin:
        assert (await admin.me()).username == "admin"
        assert "rater2" in {u.username for u in await admin.users()}
        batch = await admin.upload_batch(name, pd.DataFrame(tasks(3)), randomize=False)
        assert isinstance(batch, Batch) and batch.progress.tasks == 3
        assert batch.id in {b.id for b in await admin.batches()}
        more = await admin.upload(name, datasets.Dataset.from_list(tasks(4)))
        assert (more.created, more.unchanged) == (1, 3)
        changed = await admin.update_batch(batch.id, lease_minutes=45)
        assert changed.lease_minutes == 45
        with pytest.raises(UploadError) as raised:
            await admin.upload_batch(name, [{"external_id": "x"}])
        assert [e.line for e in raised.value.errors] == [1]
        uploads = [e async for e in admin.audit(action="batch.upload", limit=1)]
        assert uploads[0].target == name

    rated = {rate(rater, batch.id) for _ in range(4)}
    async with server.async_client("rater") as async_rater:
        mine = [r async for r in async_rater.ratings(limit=3)]
        assert rated <= {str(r.id) for r in mine}

    async with server.async_client("lead") as lead:
        seen = [b async for b in lead.watch(batch.id, every=0.05, timeout=5)]
        assert seen[-1].progress.finished and seen[-1].progress.tasks_done == 4
        metrics = await lead.metrics(batch.id)
        assert isinstance(metrics, Metrics) and metrics.counts.included == 4
        queue = [item async for item in lead.review_queue(batch=batch.id, limit=3)]
        assert sorted(str(i.rating_id) for i in queue) == sorted(rated)
        frame = await lead.export(batch.id)
        assert len(frame) == 4 and set(frame["answers.sxs"]) == {2}
        dataset = await lead.export(batch.id, as_="datasets")
        assert dataset.num_rows == 4
        path = await lead.export(batch.id, path=tmp_path / "r.parquet")
        assert len(pd.read_parquet(path)) == 4
        majority = await lead.export(batch.id, aggregate="majority")
        assert set(majority[majority["question"] == "sxs"]["answer"]) == {2}
        with pytest.raises(NotFoundError):
            await lead.batch(uuid.uuid4())
        assert (await lead.request("GET", f"/batches/{batch.id}"))["name"] == name


@pytest.mark.asyncio
async def test_the_async_client_raises_for_an_unknown_token(server):
    async with AsyncClient(server.base_url, "not-a-token") as stranger:
        with pytest.raises(UnauthorizedError) as raised:
            await stranger.me()
    assert raised.value.status == 401
