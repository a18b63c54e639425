"""Exceptions for the answers the server refuses.

Every error the API gives is ``{"error": ..., "fields": {...}}`` with a status; the
client raises :class:`VerdictError` (or the subclass for its status) carrying both, so
``except verdict_client.UnprocessableError as e: e.fields`` names what to fix.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from .models import ErrorBody, RecordError

__all__ = [
    "ConflictError",
    "ForbiddenError",
    "NotFoundError",
    "UnauthorizedError",
    "UnprocessableError",
    "UploadError",
    "VerdictError",
]


class VerdictError(Exception):
    """An answer of the server that is not a success.

    Attributes:
        status: the HTTP status (``0`` when the answer was not HTTP at all).
        message: the server's ``error``, in words for a person.
        fields: field path to the reason it was refused (empty unless a 422 names some).
        body: the whole error body as parsed, or ``None`` when it was not JSON.
    """

    def __init__(
        self,
        status: int,
        message: str,
        fields: dict[str, str] | None = None,
        body: ErrorBody | None = None,
    ) -> None:
        self.status = status
        self.message = message
        self.fields = dict(fields or {})
        self.body = body
        super().__init__(self._text())

    def _text(self) -> str:
        text = f"{self.status}: {self.message}" if self.status else self.message
        if self.fields:
            named = "; ".join(f"{path}: {why}" for path, why in self.fields.items())
            text = f"{text} ({named})"
        return text


class UnauthorizedError(VerdictError):
    """401: no token, or one the server does not know (revoked, or of a deactivated
    account)."""


class ForbiddenError(VerdictError):
    """403: the token's role does not allow this."""


class NotFoundError(VerdictError):
    """404: no such thing, or one the caller may not see."""


class ConflictError(VerdictError):
    """409: the request clashes with what is stored (a taken name, a stale version)."""


class UnprocessableError(VerdictError):
    """422: the request was read, and refused; :attr:`fields` names each reason."""


class UploadError(UnprocessableError):
    """422 for an upload with bad records: nothing was stored.

    Attributes:
        errors: the bad records, each with its ``line`` and ``message`` (the server
            lists the first 100).
        error_count: how many records were bad in all.
    """

    def __init__(
        self,
        status: int,
        message: str,
        fields: dict[str, str] | None = None,
        body: ErrorBody | None = None,
    ) -> None:
        self.errors: list[RecordError] = list(body.errors) if body else []
        self.error_count: int = (
            body.error_count if body and body.error_count is not None else len(self.errors)
        )
        super().__init__(status, message, fields, body)

    def _text(self) -> str:
        lines = "; ".join(f"line {e.line}: {e.message}" for e in self.errors[:5])
        more = len(self.errors) - 5
        if more > 0:
            lines += f"; and {more} more"
        return f"{super()._text()}: {lines}" if lines else super()._text()


_BY_STATUS: dict[int, type[VerdictError]] = {
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    409: ConflictError,
    422: UnprocessableError,
}


def error_from(status: int, content: bytes) -> VerdictError:
    """The exception for an error answer of ``status`` with body ``content``."""
    body: ErrorBody | None = None
    try:
        parsed: Any = json.loads(content) if content else None
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and isinstance(parsed.get("error"), str):
        body = ErrorBody.model_validate(parsed)
    message = body.error if body else (content.decode("utf-8", "replace").strip() or "error")
    fields = body.fields if body else {}
    kind = _BY_STATUS.get(status, VerdictError)
    if status == 422 and body is not None and body.errors:
        kind = UploadError
    return kind(status, message, fields, body)


def raise_for(response: httpx.Response) -> None:
    """Raises the matching :class:`VerdictError` unless ``response`` succeeded.
    The body must have been read."""
    if response.is_success:
        return
    raise error_from(response.status_code, response.content)
