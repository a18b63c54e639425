"""``Client`` (blocking, on ``httpx.Client``) and ``AsyncClient`` (on
``httpx.AsyncClient``): the same methods, one waiting for each answer, the other awaited.

What does not touch the network (building queries and bodies, reading answers) is shared
in ``_Common``; each class only sends.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from datetime import date, datetime
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote, urlsplit
from uuid import UUID

import httpx
from pydantic import BaseModel

from . import _export, _tasks
from .errors import raise_for
from .models import (
    AuditEntry,
    Batch,
    Metrics,
    Page,
    RatingSummary,
    ReviewItem,
    UploadResult,
    User,
)

__all__ = ["AsyncClient", "Client"]

M = TypeVar("M", bound=BaseModel)

Id = str | UUID
When = str | date | datetime | None
Timeout = float | httpx.Timeout | None

#: Seconds to wait for the server, for each step of a request (connecting, sending,
#: each read of the answer), unless the client is told otherwise.
DEFAULT_TIMEOUT = 30.0


def _segment(value: Id) -> str:
    """``value`` as one segment of a path, every character that means something in a URL
    (``/``, ``?``, ``#``, ``%``) percent-encoded, so an id cannot climb out of its place
    (``"x/../../steal"``). ``.`` and ``..`` would still climb, and an empty id names
    nothing, so those are refused."""
    text = str(value)
    if text in ("", ".", ".."):
        raise ValueError(f"{text!r} is not an id")
    return quote(text, safe="")


class _Common:
    """Settings and the parts of each call that do not depend on how it is sent."""

    def __init__(self, base_url: str, token: str) -> None:
        if not token:
            raise ValueError("token is empty: make one with `verdict token create`")
        root = base_url.rstrip("/")
        if root.endswith("/api/v1"):
            root = root[: -len("/api/v1")]
        self.base_url = root
        self._api = root + "/api/v1"
        self._headers = {
            "Authorization": f"Bearer {token}",
            "Accept": "application/json",
            "User-Agent": "verdict-client-python",
        }

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_url!r})"

    def _target(self, path: str) -> str:
        """``path`` if the token may go there: a path (under ``/api/v1``, written with or
        without that prefix), or a whole URL on ``base_url``'s own scheme, host and port.
        A URL anywhere else is refused before anything is sent, so the token never leaves
        for another host."""
        if path == "/api/v1" or path.startswith("/api/v1/"):
            path = path[len("/api/v1") :] or "/"
        parts = urlsplit(path)
        if parts.scheme or parts.netloc:
            base = urlsplit(self.base_url)
            if (parts.scheme.lower(), parts.netloc.lower()) != (
                base.scheme.lower(),
                base.netloc.lower(),
            ):
                raise ValueError(
                    f"{path!r} is not on {self.base_url}: the client sends its token there only"
                )
        return path

    @staticmethod
    def _query(**filters: Any) -> dict[str, str]:
        """A query of the filters given (``None``: left out), booleans as the API
        writes them."""
        return {
            key: (str(value).lower() if isinstance(value, bool) else str(value))
            for key, value in filters.items()
            if value is not None
        }

    @staticmethod
    def _page_params(
        params: dict[str, Any], cursor: str | None, limit: int | None
    ) -> dict[str, Any]:
        """``params`` with the page wanted: from ``cursor`` (the start when ``None``),
        ``limit`` rows (the server's default when ``None``)."""
        paged = dict(params)
        if cursor is not None:
            paged["cursor"] = cursor
        if limit is not None:
            paged["limit"] = limit
        return paged


def _json(response: httpx.Response) -> Any:
    """The answer's JSON (``None`` for an empty answer, such as a 204), or the error."""
    raise_for(response)
    return response.json() if response.content else None


class Client(_Common):
    """A blocking client of verdict's API.

    ``base_url`` is the server's address (``http://verdict.example:8080``; a trailing
    ``/api/v1`` is allowed), ``token`` an API token (``verdict token create``, or the
    tokens page). ``timeout`` is the seconds each step of a request may take (a float,
    an ``httpx.Timeout`` or ``None`` for no limit). Use it in a ``with`` block, or call
    :meth:`close` when done::

        with Client("http://localhost:8080", token) as verdict:
            print(verdict.me().username)

    Every method raises :class:`~verdict_client.VerdictError` (a subclass per status)
    when the server refuses.
    """

    def __init__(self, base_url: str, token: str, *, timeout: Timeout = DEFAULT_TIMEOUT) -> None:
        super().__init__(base_url, token)
        self._http = httpx.Client(base_url=self._api, headers=self._headers, timeout=timeout)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Closes the connections."""
        self._http.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        json: Any = None,
    ) -> Any:
        """Any API call: ``path`` under ``/api/v1`` (``"/batches/…/next"``, or with the
        prefix written, ``"/api/v1/batches/…/next"``), the answer's
        JSON back (``None`` when it has no body), an error raised. For what the client
        has no method for, such as rating."""
        target = self._target(path)
        return _json(self._http.request(method, target, params=params, json=json))

    def _paged(
        self, path: str, model: type[M], params: dict[str, Any], limit: int | None
    ) -> Iterator[M]:
        """Every item of a paged list, a page at a time as the iteration asks: each page
        starts at the ``next_cursor`` of the one before, until that is ``null``."""
        cursor: str | None = None
        while True:
            body = self.request("GET", path, params=self._page_params(params, cursor, limit))
            page = Page[model].model_validate(body)  # type: ignore[valid-type]
            yield from page.items
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def me(self) -> User:
        """The account the token belongs to."""
        return User.model_validate(self.request("GET", "/me"))

    def users(self) -> list[User]:
        """Every account (admin)."""
        return [User.model_validate(u) for u in self.request("GET", "/users")]

    def upload(
        self,
        name: str,
        tasks: _tasks.Tasks,
        rubric: str | None = None,
        overlap: int | None = None,
        max_overlap: int | None = None,
        route_by: str | None = None,
        routing: str | None = None,
        randomize: bool | None = None,
        *,
        escalate: str | None = None,
        raters_see_external_ids: bool | None = None,
    ) -> UploadResult:
        """As :meth:`upload_batch`, returning what the upload did (the batch's id and
        name, the tasks it created and those already there, unchanged)."""
        body, content_type = _tasks.upload_body(tasks)
        params = self._query(
            name=name,
            rubric=rubric,
            overlap=overlap,
            max_overlap=max_overlap,
            escalate=escalate,
            route_by=route_by,
            routing=routing,
            randomize=randomize,
            raters_see_external_ids=raters_see_external_ids,
        )
        response = self._http.post(
            "/batches", params=params, content=body, headers={"Content-Type": content_type}
        )
        return UploadResult.model_validate(_json(response))

    def upload_batch(
        self,
        name: str,
        tasks: _tasks.Tasks,
        rubric: str | None = None,
        overlap: int | None = None,
        max_overlap: int | None = None,
        route_by: str | None = None,
        routing: str | None = None,
        randomize: bool | None = None,
        *,
        escalate: str | None = None,
        raters_see_external_ids: bool | None = None,
    ) -> Batch:
        """Uploads ``tasks`` into the batch ``name`` (created if it does not exist) and
        returns the batch (admin).

        ``tasks`` is a list of dicts (one per task, as in the README's "Task files"), a
        pandas DataFrame (one task per row), a ``datasets.Dataset``, or the path of a
        ``.jsonl``, ``.json`` or ``.csv`` file. Settings left as ``None`` take the
        server's default for a new batch (rubric ``blackhat``, overlap 1, no routing,
        randomised A/B) and must be left out, or equal the batch's own, when adding to an
        existing batch. If any record is bad, nothing is stored and
        :class:`~verdict_client.UploadError` lists the bad lines (for records in memory,
        line N is the N-th record).
        """
        uploaded = self.upload(
            name,
            tasks,
            rubric,
            overlap,
            max_overlap,
            route_by,
            routing,
            randomize,
            escalate=escalate,
            raters_see_external_ids=raters_see_external_ids,
        )
        return self.batch(uploaded.id)

    def batches(self) -> list[Batch]:
        """Every batch the caller may see, with progress (a rater: the open batches
        opened to them)."""
        return [Batch.model_validate(b) for b in self.request("GET", "/batches")]

    def batch(self, batch_id: Id) -> Batch:
        """One batch with its settings and progress."""
        return Batch.model_validate(self.request("GET", f"/batches/{_segment(batch_id)}"))

    def update_batch(self, batch_id: Id, **settings: Any) -> Batch:
        """Changes a batch's settings (admin) and returns the batch: any of ``state``,
        ``overlap``, ``max_overlap``, ``escalate``, ``route_by``, ``routing``,
        ``randomize``, ``raters_see_external_ids``, ``lease_minutes``,
        ``min_explanation_len``, ``bradley_terry_prior``, ``final_method``,
        ``classifications``, ``raters``, ``leads`` (``None`` where the API takes ``null``:
        everyone, or no routing)."""
        url = f"/batches/{_segment(batch_id)}"
        return Batch.model_validate(self.request("PATCH", url, json=settings))

    def watch(
        self, batch_id: Id, *, every: float = 5.0, timeout: float | None = None
    ) -> Iterator[Batch]:
        """Polls the batch every ``every`` seconds, yielding it each time, until every
        task is done; ``TimeoutError`` if that takes more than ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            batch = self.batch(batch_id)
            yield batch
            if batch.progress.finished:
                return
            if deadline is not None and time.monotonic() + every > deadline:
                raise TimeoutError(f"batch {batch.name} is not done after {timeout} s")
            time.sleep(every)

    def metrics(self, batch_id: Id) -> Metrics:
        """The batch's metrics (a lead of the batch)."""
        url = f"/batches/{_segment(batch_id)}/metrics"
        return Metrics.model_validate(self.request("GET", url))

    def ratings(self, *, limit: int | None = None) -> Iterator[RatingSummary]:
        """The caller's own ratings, drafts included, newest first; every page, read
        ``limit`` (at most 200) at a time as the iteration goes."""
        return self._paged("/ratings", RatingSummary, {}, limit)

    def review_queue(
        self,
        *,
        batch: Id | None = None,
        rater: str | None = None,
        outcome: str | None = None,
        status: str | None = None,
        question: str | None = None,
        answer: str | None = None,
        disagrees: bool | None = None,
        warning: str | None = None,
        review_first: bool | None = None,
        limit: int | None = None,
    ) -> Iterator[ReviewItem]:
        """The review queue under these filters (a lead), oldest first, every page."""
        params = self._query(
            batch=batch,
            rater=rater,
            outcome=outcome,
            status=status,
            question=question,
            answer=answer,
            disagrees=disagrees,
            warning=warning,
            review_first=review_first,
        )
        return self._paged("/review", ReviewItem, params, limit)

    def audit(self, *, action: str | None = None, limit: int | None = None) -> Iterator[AuditEntry]:
        """The audit log (admin), newest first, every page; ``action`` keeps one kind
        (``batch.upload``, ``rating.review``, ...)."""
        return self._paged("/audit", AuditEntry, self._query(action=action), limit)

    def export(
        self,
        batch_id: Id,
        *,
        as_: _export.As = "pandas",
        path: str | Path | None = None,
        aggregate: _export.Aggregate | None = None,
        counted: bool | None = None,
        final: bool | None = None,
        outcome: str | None = None,
        status: str | None = None,
        rater: str | None = None,
        since: When = None,
        until: When = None,
    ) -> Any:
        """The batch's ratings (a lead of the batch), one row per rating that is not a
        draft, in the task's own A/B order, read as the server streams them.

        Returns a pandas DataFrame, or with ``as_="datasets"`` a ``datasets.Dataset``;
        with ``path``, writes Parquet there and returns the path. ``counted=True`` keeps
        only the ratings that count in the metrics (as many as ``counts.included``: the
        rows to average); ``outcome``, ``status``, ``rater``, ``since`` and ``until``
        filter the ratings; ``aggregate="majority"`` or ``"dawid_skene"`` gives instead
        one aggregated answer per task and question (columns ``external_id``,
        ``question``, ``answer``, ``tied``, ``confidence``, ``mean``, ``method``,
        ``raters``; a tie has no ``answer`` and lists the tied ones), from the ratings
        the metrics count; ``final=True`` gives the final dataset, one row per task
        (``external_id``, ``source``: ``adjudicated``, the batch's final method, or
        ``none``; ``tied``; and its answers in ``answers.`` columns).
        """
        _export.check_as(as_)
        params = _export.export_params(
            aggregate, counted, final, outcome, status, rater, since, until
        )
        rows = _export.Rows(aggregated=aggregate is not None)
        url = f"/batches/{_segment(batch_id)}/export"
        with self._http.stream("GET", url, params=params) as response:
            if not response.is_success:
                response.read()
                raise_for(response)
            for line in response.iter_lines():
                rows.add(line)
        return rows.finish(as_, path)


class AsyncClient(_Common):
    """The client for asyncio: the methods of :class:`Client`, awaited (the paged lists
    are async iterators). Use it in an ``async with`` block, or await :meth:`aclose`::

        async with AsyncClient("http://localhost:8080", token) as verdict:
            me = await verdict.me()
            async for rating in verdict.ratings():
                ...
    """

    def __init__(self, base_url: str, token: str, *, timeout: Timeout = DEFAULT_TIMEOUT) -> None:
        super().__init__(base_url, token)
        self._http = httpx.AsyncClient(base_url=self._api, headers=self._headers, timeout=timeout)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Closes the connections."""
        await self._http.aclose()

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        json: Any = None,
    ) -> Any:
        """As :meth:`Client.request`."""
        target = self._target(path)
        return _json(await self._http.request(method, target, params=params, json=json))

    async def _paged(
        self, path: str, model: type[M], params: dict[str, Any], limit: int | None
    ) -> AsyncIterator[M]:
        """As :meth:`Client._paged`, an async iterator."""
        cursor: str | None = None
        while True:
            body = await self.request("GET", path, params=self._page_params(params, cursor, limit))
            page = Page[model].model_validate(body)  # type: ignore[valid-type]
            for item in page.items:
                yield item
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def me(self) -> User:
        """As :meth:`Client.me`."""
        return User.model_validate(await self.request("GET", "/me"))

    async def users(self) -> list[User]:
        """As :meth:`Client.users`."""
        return [User.model_validate(u) for u in await self.request("GET", "/users")]

    async def upload(
        self,
        name: str,
        tasks: _tasks.Tasks,
        rubric: str | None = None,
        overlap: int | None = None,
        max_overlap: int | None = None,
        route_by: str | None = None,
        routing: str | None = None,
        randomize: bool | None = None,
        *,
        escalate: str | None = None,
        raters_see_external_ids: bool | None = None,
    ) -> UploadResult:
        """As :meth:`Client.upload`."""
        body, content_type = _tasks.upload_body(tasks)
        params = self._query(
            name=name,
            rubric=rubric,
            overlap=overlap,
            max_overlap=max_overlap,
            escalate=escalate,
            route_by=route_by,
            routing=routing,
            randomize=randomize,
            raters_see_external_ids=raters_see_external_ids,
        )
        response = await self._http.post(
            "/batches", params=params, content=body, headers={"Content-Type": content_type}
        )
        return UploadResult.model_validate(_json(response))

    async def upload_batch(
        self,
        name: str,
        tasks: _tasks.Tasks,
        rubric: str | None = None,
        overlap: int | None = None,
        max_overlap: int | None = None,
        route_by: str | None = None,
        routing: str | None = None,
        randomize: bool | None = None,
        *,
        escalate: str | None = None,
        raters_see_external_ids: bool | None = None,
    ) -> Batch:
        """As :meth:`Client.upload_batch`."""
        uploaded = await self.upload(
            name,
            tasks,
            rubric,
            overlap,
            max_overlap,
            route_by,
            routing,
            randomize,
            escalate=escalate,
            raters_see_external_ids=raters_see_external_ids,
        )
        return await self.batch(uploaded.id)

    async def batches(self) -> list[Batch]:
        """As :meth:`Client.batches`."""
        return [Batch.model_validate(b) for b in await self.request("GET", "/batches")]

    async def batch(self, batch_id: Id) -> Batch:
        """As :meth:`Client.batch`."""
        return Batch.model_validate(await self.request("GET", f"/batches/{_segment(batch_id)}"))

    async def update_batch(self, batch_id: Id, **settings: Any) -> Batch:
        """As :meth:`Client.update_batch`."""
        body = await self.request("PATCH", f"/batches/{_segment(batch_id)}", json=settings)
        return Batch.model_validate(body)

    async def watch(
        self, batch_id: Id, *, every: float = 5.0, timeout: float | None = None
    ) -> AsyncIterator[Batch]:
        """As :meth:`Client.watch`, an async iterator."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            batch = await self.batch(batch_id)
            yield batch
            if batch.progress.finished:
                return
            if deadline is not None and time.monotonic() + every > deadline:
                raise TimeoutError(f"batch {batch.name} is not done after {timeout} s")
            await asyncio.sleep(every)

    async def metrics(self, batch_id: Id) -> Metrics:
        """As :meth:`Client.metrics`."""
        url = f"/batches/{_segment(batch_id)}/metrics"
        return Metrics.model_validate(await self.request("GET", url))

    def ratings(self, *, limit: int | None = None) -> AsyncIterator[RatingSummary]:
        """As :meth:`Client.ratings`, an async iterator."""
        return self._paged("/ratings", RatingSummary, {}, limit)

    def review_queue(
        self,
        *,
        batch: Id | None = None,
        rater: str | None = None,
        outcome: str | None = None,
        status: str | None = None,
        question: str | None = None,
        answer: str | None = None,
        disagrees: bool | None = None,
        warning: str | None = None,
        review_first: bool | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[ReviewItem]:
        """As :meth:`Client.review_queue`, an async iterator."""
        params = self._query(
            batch=batch,
            rater=rater,
            outcome=outcome,
            status=status,
            question=question,
            answer=answer,
            disagrees=disagrees,
            warning=warning,
            review_first=review_first,
        )
        return self._paged("/review", ReviewItem, params, limit)

    def audit(
        self, *, action: str | None = None, limit: int | None = None
    ) -> AsyncIterator[AuditEntry]:
        """As :meth:`Client.audit`, an async iterator."""
        return self._paged("/audit", AuditEntry, self._query(action=action), limit)

    async def export(
        self,
        batch_id: Id,
        *,
        as_: _export.As = "pandas",
        path: str | Path | None = None,
        aggregate: _export.Aggregate | None = None,
        counted: bool | None = None,
        final: bool | None = None,
        outcome: str | None = None,
        status: str | None = None,
        rater: str | None = None,
        since: When = None,
        until: When = None,
    ) -> Any:
        """As :meth:`Client.export`."""
        _export.check_as(as_)
        params = _export.export_params(
            aggregate, counted, final, outcome, status, rater, since, until
        )
        rows = _export.Rows(aggregated=aggregate is not None)
        async with self._http.stream(
            "GET", f"/batches/{_segment(batch_id)}/export", params=params
        ) as response:
            if not response.is_success:
                await response.aread()
                raise_for(response)
            async for line in response.aiter_lines():
                rows.add(line)
        return rows.finish(as_, path)
