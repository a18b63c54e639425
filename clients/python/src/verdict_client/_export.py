"""Reading an export as it streams in, and handing it on as a DataFrame, a Parquet file
or a Hugging Face ``datasets.Dataset``.

The server sends JSON Lines, one rating (or, aggregated, one task and question) per line;
each line is parsed as it arrives. In the DataFrame a rating's ``answers`` become one
column per answer, named by its path under ``answers.`` (``answers.sxs``,
``answers.a.correctness``), in the task's own A/B order as the export gives them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import date, datetime
from pathlib import Path
from typing import Any, Literal

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

Aggregate = Literal["majority", "dawid_skene"]
As = Literal["pandas", "datasets"]

#: Export columns that hold times.
_TIMES = ("created_at", "submitted_at", "reviewed_at")


def export_params(
    aggregate: str | None,
    counted: bool | None,
    final: bool | None,
    outcome: str | None,
    status: str | None,
    rater: str | None,
    since: str | date | datetime | None,
    until: str | date | datetime | None,
) -> dict[str, str]:
    """The export's query: JSON Lines, and the filters given (the server refuses
    filters beside ``aggregate`` or ``final`` with a 422 naming them)."""
    params = {"format": "jsonl"}
    if counted is not None:
        params["counted"] = "true" if counted else "false"
    if final is not None:
        params["final"] = "true" if final else "false"
    for name, value in (
        ("aggregate", aggregate),
        ("outcome", outcome),
        ("status", status),
        ("rater", rater),
        ("since", since),
        ("until", until),
    ):
        if value is None:
            continue
        params[name] = value.isoformat() if isinstance(value, (date, datetime)) else str(value)
    return params


class Rows:
    """The rows of one export, gathered line by line as they stream in."""

    def __init__(self, aggregated: bool) -> None:
        self.aggregated = aggregated
        self.records: list[dict[str, Any]] = []

    def add(self, line: str) -> None:
        """Takes one line of the body (blank ones are skipped)."""
        if not line.strip():
            return
        record = json.loads(line)
        if not self.aggregated:
            record = _spread_answers(record)
        self.records.append(record)

    def frame(self) -> pd.DataFrame:
        """The rows as a DataFrame, times as UTC timestamps."""
        frame = pd.DataFrame.from_records(self.records)
        for column in _TIMES:
            if column in frame.columns:
                frame[column] = pd.to_datetime(frame[column], utc=True, format="ISO8601")
        return frame

    def finish(self, as_: str, path: str | Path | None) -> Any:
        """What ``export`` returns: the Parquet file's path when ``path`` is given, else
        a Dataset (``as_="datasets"``) or a DataFrame (``as_="pandas"``, checked
        beforehand by :func:`check_as`)."""
        frame = self.frame()
        if path is not None:
            path = Path(path)
            pq.write_table(arrow_table(frame), path)
            return path
        if as_ == "datasets":
            return to_dataset(frame)
        return frame


def check_as(as_: str) -> None:
    """Refuses an unknown ``as_`` before anything is asked of the server."""
    if as_ not in ("pandas", "datasets"):
        raise ValueError(f'as_ must be "pandas" or "datasets", not {as_!r}')
    if as_ == "datasets":
        _datasets()


def _spread_answers(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` with its nested ``answers`` spread into one key per answer path, where
    ``answers`` stood."""
    out: dict[str, Any] = {}
    for key, value in record.items():
        if key == "answers" and isinstance(value, Mapping):
            _flatten("answers", value, out)
        else:
            out[key] = value
    return out


def _flatten(prefix: str, value: Mapping[str, Any], out: dict[str, Any]) -> None:
    for key, inner in value.items():
        path = f"{prefix}.{key}"
        if isinstance(inner, Mapping) and inner:
            _flatten(path, inner, out)
        else:
            out[path] = inner


def arrow_table(frame: pd.DataFrame) -> pa.Table:
    """``frame`` as an Arrow table that Parquet and ``datasets`` take: a column of
    nested objects (evidence, a gold grade, review comments by path), or one whose
    values are of mixed kinds (an aggregated ``answer``: a number for one question, a
    word for another), is stored as JSON text, which ``json.loads`` reads back."""
    safe = frame.copy()
    for column in safe.columns:
        if safe[column].dtype != object:
            continue
        present = [v for v in safe[column] if v is not None and not _is_nan(v)]
        if not present or all(isinstance(v, str) for v in present):
            continue
        if all(isinstance(v, list) and all(isinstance(x, str) for x in v) for v in present):
            continue
        scalar_kinds = {type(v) for v in present if not isinstance(v, (dict, list))}
        nested = any(isinstance(v, (dict, list)) for v in present)
        if nested or len(scalar_kinds) > 1:
            safe[column] = [
                None if v is None or _is_nan(v) else json.dumps(v, ensure_ascii=False)
                for v in safe[column]
            ]
    return pa.Table.from_pandas(safe, preserve_index=False)


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and value != value


def _datasets() -> Any:
    try:
        import datasets
    except ImportError as err:
        raise ImportError(
            'export(..., as_="datasets") needs the datasets package: '
            "pip install 'verdict-client[datasets]'"
        ) from err
    return datasets


def to_dataset(frame: pd.DataFrame) -> Any:
    """``frame`` as a Hugging Face ``datasets.Dataset`` (nested values as JSON text, as
    in Parquet)."""
    return _datasets().Dataset(arrow_table(frame))
