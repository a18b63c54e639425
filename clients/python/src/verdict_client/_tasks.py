"""Turning the tasks handed to ``upload_batch`` into an upload body.

Records in memory (dicts, a pandas DataFrame, a Hugging Face ``datasets.Dataset``) go
as JSON Lines, one record per line, so the server's line numbers in a refusal are the
records' positions (1-based). A file goes as it is, with the content type of its
extension, so its line numbers are its own.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

JSONL = "application/x-ndjson"
JSON = "application/json"
CSV = "text/csv"

_BY_EXTENSION = {".jsonl": JSONL, ".ndjson": JSONL, ".json": JSON, ".csv": CSV}

#: A file path, records as dicts, or a table of them (a DataFrame, a datasets.Dataset).
Tasks = str | Path | Iterable[Mapping[str, Any]] | Any


def upload_body(tasks: Tasks) -> tuple[bytes, str]:
    """The body and content type that upload ``tasks``: a path to a ``.jsonl``, ``.json``
    or ``.csv`` file, a pandas DataFrame, a ``datasets.Dataset``, or an iterable of dicts
    (one per task)."""
    if isinstance(tasks, (str, Path)):
        path = Path(tasks)
        kind = _BY_EXTENSION.get(path.suffix.lower())
        if kind is None:
            raise ValueError(
                f"{path}: name a .jsonl, .json or .csv file (its extension picks the format)"
            )
        return path.read_bytes(), kind
    if isinstance(tasks, (bytes, bytearray)) or isinstance(tasks, Mapping):
        raise TypeError(
            "tasks must be a list of dicts, a DataFrame, a datasets.Dataset or a file path"
        )
    return _jsonl(_records(tasks)), JSONL


def _records(tasks: Any) -> Iterable[Mapping[str, Any]]:
    """The records of ``tasks``, whatever its kind, each a mapping."""
    to_dict = getattr(tasks, "to_dict", None)
    if callable(to_dict) and hasattr(tasks, "columns"):
        # A pandas DataFrame: one record per row.
        return to_dict(orient="records")
    # A datasets.Dataset iterates over its rows as dicts, as a list of dicts does.
    return tasks


def _jsonl(records: Iterable[Mapping[str, Any]]) -> bytes:
    lines = []
    for i, record in enumerate(records, start=1):
        if not isinstance(record, Mapping):
            raise TypeError(f"task {i} is a {type(record).__name__}, not a dict")
        lines.append(json.dumps(_clean(record), ensure_ascii=False, default=_plain))
    return ("\n".join(lines) + "\n").encode() if lines else b""


def _clean(value: Any) -> Any:
    """``value`` with the holes tables leave dropped: keys whose value is missing (``None``
    or NaN, as a DataFrame or a Dataset fills a field a record does not have) are left
    out, in nested objects too, so the server reads them as absent."""
    if isinstance(value, Mapping):
        return {str(k): _clean(v) for k, v in value.items() if not _missing(v)}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        # A numpy array (a Dataset's or a DataFrame's list column).
        return _clean(value.tolist())
    return value


def _missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    # pandas' NA and NaT, numpy's NaN: anything that is not equal to itself.
    try:
        return bool(value != value)
    except (TypeError, ValueError):
        return False


def _plain(value: Any) -> Any:
    """JSON for the values json does not know: numpy scalars, timestamps."""
    item = getattr(value, "item", None)
    if callable(item):
        return item()
    isoformat = getattr(value, "isoformat", None)
    if callable(isoformat):
        return isoformat()
    raise TypeError(f"{type(value).__name__} is not a JSON value")
