"""Uploading tasks from every kind of input the client takes, and the refusals."""

from __future__ import annotations

import csv
import json

import datasets
import pandas as pd
import pytest
from helpers import tasks

from verdict_client import Batch, UnprocessableError, UploadError


def external_ids_in(lead, batch: Batch) -> set[str]:
    """The external ids a lead sees through the per-task view, one request each."""
    return {
        task["external_id"]
        for task in (
            lead.request("GET", f"/batches/{batch.id}/tasks/{external_id}")
            for external_id in ("t-1", "t-2", "t-3")
        )
    }


def test_a_list_of_dicts_becomes_a_batch_with_the_settings_given(admin, lead, name):
    batch = admin.upload_batch(
        name, tasks(3), rubric="blackhat", overlap=2, max_overlap=3, randomize=False
    )
    assert isinstance(batch, Batch)
    assert batch.name == name
    assert batch.rubric == "blackhat"
    assert (batch.overlap, batch.max_overlap, batch.randomize) == (2, 3, False)
    assert batch.progress.tasks == 3
    assert batch.progress.tasks_done == 0
    assert batch.state == "open"
    assert external_ids_in(lead, batch) == {"t-1", "t-2", "t-3"}


def test_a_dataframe_uploads_one_task_per_row_and_missing_cells_are_left_out(admin, lead, name):
    frame = pd.DataFrame(tasks(3))
    # A column only some rows fill: the others' NaN must not reach the server.
    frame.loc[0, "model_b"] = None
    batch = admin.upload_batch(name, frame, routing="strict", route_by="metadata.language")
    assert batch.progress.tasks == 3
    assert (batch.route_by, batch.routing) == ("metadata.language", "strict")
    first = lead.request("GET", f"/batches/{batch.id}/tasks/t-1")
    second = lead.request("GET", f"/batches/{batch.id}/tasks/t-2")
    assert (first["model_a"], first["model_b"]) == ("cirrus-70b", None)
    assert (second["model_a"], second["model_b"]) == ("cirrus-70b", "stratus-8b")


def test_a_hugging_face_dataset_uploads_one_task_per_row(admin, name):
    dataset = datasets.Dataset.from_list(tasks(4))
    batch = admin.upload_batch(name, dataset)
    assert batch.progress.tasks == 4
    assert (batch.overlap, batch.randomize) == (1, True)


def test_jsonl_json_and_csv_files_upload_by_their_extension(admin, name, tmp_path):
    records = tasks(3)
    jsonl = tmp_path / "tasks.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in records))
    as_json = tmp_path / "more.json"
    as_json.write_text(json.dumps(tasks(2, prefix="j")))
    as_csv = tmp_path / "more.csv"
    with open(as_csv, "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["external_id", "prompt", "response_a", "response_b", "meta.language"])
        writer.writerow(["c-1", "Sort a list.", "`sorted(xs)`", "`xs.sort()`", "python"])

    first = admin.upload(name, str(jsonl))
    assert (first.name, first.created, first.unchanged) == (name, 3, 0)
    second = admin.upload(name, as_json)
    assert (second.id, second.created) == (first.id, 2)
    third = admin.upload(name, as_csv)
    assert (third.id, third.created) == (first.id, 1)
    # The same file again: nothing new, every task left as it was.
    again = admin.upload(name, jsonl)
    assert (again.created, again.unchanged) == (0, 3)
    assert admin.batch(first.id).progress.tasks == 6


def test_a_bad_upload_raises_with_each_bad_line_and_stores_nothing(admin, name):
    records = tasks(4)
    del records[1]["prompt"]
    records[3]["response"] = "one answer, for a rubric that judges a single response"
    del records[3]["response_a"], records[3]["response_b"]
    with pytest.raises(UploadError) as raised:
        admin.upload_batch(name, records)
    error = raised.value
    assert error.status == 422
    assert error.error_count == 2
    assert [e.line for e in error.errors] == [2, 4]
    assert "prompt" in error.errors[0].message
    assert "response" in error.errors[1].message
    assert "line 2" in str(error)
    assert name not in {b.name for b in admin.batches()}


def test_settings_that_differ_from_an_existing_batch_are_refused_by_field(admin, name):
    admin.upload_batch(name, tasks(1), overlap=1)
    with pytest.raises(UnprocessableError) as raised:
        admin.upload_batch(name, tasks(2), overlap=3)
    assert raised.value.status == 422
    assert "overlap" in raised.value.fields


def test_inputs_the_client_cannot_read_are_refused_before_sending(admin, name, tmp_path):
    text = tmp_path / "tasks.txt"
    text.write_text("not a task file")
    with pytest.raises(ValueError, match="jsonl, .json or .csv"):
        admin.upload_batch(name, text)
    with pytest.raises(TypeError, match="task 2"):
        admin.upload_batch(name, [tasks(1)[0], "not a dict"])
    assert name not in {b.name for b in admin.batches()}
