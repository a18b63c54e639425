"""A Python client for verdict's JSON API (``/api/v1``).

    from verdict_client import Client

    with Client("http://localhost:8080", token) as verdict:
        batch = verdict.upload_batch("week-48", "tasks.jsonl", overlap=2)
        frame = verdict.export(batch.id)

:class:`Client` blocks; :class:`AsyncClient` has the same methods for asyncio. Answers
come back as the typed models of :mod:`verdict_client.models`, refusals as
:class:`VerdictError` and its subclasses.
"""

from ._client import AsyncClient, Client
from .errors import (
    ConflictError,
    ForbiddenError,
    NotFoundError,
    UnauthorizedError,
    UnprocessableError,
    UploadError,
    VerdictError,
)
from .models import (
    AuditEntry,
    Batch,
    Counts,
    ErrorBody,
    Metrics,
    Page,
    Progress,
    RaterStats,
    RatingSummary,
    RecordError,
    ReviewItem,
    RubricRef,
    UploadResult,
    User,
)

__all__ = [
    "AsyncClient",
    "AuditEntry",
    "Batch",
    "Client",
    "ConflictError",
    "Counts",
    "ErrorBody",
    "ForbiddenError",
    "Metrics",
    "NotFoundError",
    "Page",
    "Progress",
    "RaterStats",
    "RatingSummary",
    "RecordError",
    "ReviewItem",
    "RubricRef",
    "UnauthorizedError",
    "UnprocessableError",
    "UploadError",
    "UploadResult",
    "User",
    "VerdictError",
]
