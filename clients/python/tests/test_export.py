"""Metrics and exports of a batch two raters rated: DataFrame, Dataset, Parquet and the
aggregated answers."""

from __future__ import annotations

import json
import uuid

import datasets
import pandas as pd
import pytest
from helpers import A_BETTER, rate, tasks

from verdict_client import Metrics, UnprocessableError


@pytest.fixture(scope="module")
def rated(server):
    """A batch of three tasks, each rated by ``rater`` and ``rater2`` (A better, 2 of
    7), shown unswapped so the answers read as submitted; its id."""
    with server.client("admin") as admin:
        batch = admin.upload_batch(
            f"export-{uuid.uuid4().hex[:8]}", tasks(3), overlap=2, randomize=False
        )
    for username in ("rater", "rater2"):
        with server.client(username) as client:
            for _ in range(3):
                rate(client, batch.id)
    return batch.id


def test_metrics_count_every_rating_and_summarise_the_preference(lead, rated):
    metrics = lead.metrics(rated)
    assert isinstance(metrics, Metrics)
    assert (metrics.rubric.name, metrics.rubric.version) == ("blackhat", 1)
    assert (metrics.counts.tasks, metrics.counts.ratings) == (3, 6)
    assert (metrics.counts.included, metrics.counts.excluded) == (6, 0)
    assert sorted(r.rater for r in metrics.raters) == ["rater", "rater2"]
    assert all(r.included == 3 and r.agreement_with_others == 1.0 for r in metrics.raters)
    sxs = metrics.preference("sxs")
    assert sxs["n"] == 6
    assert sxs["distribution"]["2"] == 6
    assert sxs["a_wins"]["value"] == 1.0
    assert metrics.fields["a.correctness"]["no_issues"] == 6
    with pytest.raises(KeyError):
        metrics.preference("no-such-question")
    # Every question's figures, wherever the metrics keep them.
    assert metrics.question("sxs")["preference"] == sxs
    assert metrics.question("sxs")["aggregation"]["tasks"] == 3
    assert metrics.question("a.correctness")["answers"]["no_issues"] == 6
    with pytest.raises(KeyError):
        metrics.question("no-such-question")


def test_counted_keeps_only_the_rows_the_metrics_count(server, lead):
    """A skip and a rejected rating are in the export, and out of ``counted=True``: its
    rows are the metrics' included ratings."""
    with server.client("admin") as admin:
        batch = admin.upload_batch(
            f"counted-{uuid.uuid4().hex[:8]}", tasks(3), overlap=2, randomize=False
        )
    with server.client("rater") as rater:
        rate(rater, batch.id)
        rejected = rate(rater, batch.id)
        taken = rater.request("POST", f"/batches/{batch.id}/next")
        rater.request(
            "POST", f"/assignments/{taken['assignment_id']}/skip", json={"reason": "too_long"}
        )
    lead.request(
        "POST", f"/ratings/{rejected}/review", json={"decision": "reject", "version": 1}
    )
    metrics = lead.metrics(batch.id)
    everything = lead.export(batch.id)
    counted = lead.export(batch.id, counted=True)
    assert (len(everything), len(counted)) == (3, 1)
    assert len(counted) == metrics.counts.included
    assert counted["counts_in_metrics"].all()


def test_the_additive_score_is_a_question_of_the_metrics_and_aggregated(server, lead):
    """The additive ladder's score: its figures through ``question("score")``, and its
    middle answer in the aggregated export."""
    with server.client("admin") as admin:
        batch = admin.upload_batch(
            f"score-{uuid.uuid4().hex[:8]}",
            [{"external_id": "s-1", "prompt": "Say hi.", "response": "hi", "model": "m"}],
            rubric="additive-5",
            overlap=2,
        )
    for username, level in (("rater", 2), ("rater2", 4)):
        answers = {
            name: i < level
            for i, name in enumerate(
                ["relevant", "substantial", "useful", "comprehensive", "expert"]
            )
        }
        answers |= {"repetitive": False, "justification": "Relevant, and it says hi back."}
        with server.client(username) as client:
            rate(client, batch.id, answers)
    metrics = lead.metrics(batch.id)
    with pytest.raises(KeyError, match="question"):
        metrics.preference("score")
    assert metrics.question("score")["score"]["n"] == 2
    agreed = lead.export(batch.id, aggregate="majority")
    score = agreed[agreed["question"] == "score"].iloc[0]
    assert score["answer"] is None and list(score["tied"]) == [2, 4]
    assert (score["mean"], score["method"]) == (3.0, "median")


def test_export_is_a_dataframe_of_every_rating_with_answers_in_columns(lead, rated):
    frame = lead.export(rated)
    assert isinstance(frame, pd.DataFrame)
    assert len(frame) == 6
    assert sorted(frame["rater"]) == ["rater"] * 3 + ["rater2"] * 3
    assert sorted(frame["external_id"].unique()) == ["t-1", "t-2", "t-3"]
    assert set(frame["answers.sxs"]) == {A_BETTER["sxs"]}
    assert set(frame["answers.a.correctness"]) == {"no_issues"}
    assert set(frame["answers.b.executability"]) == {"no_code"}
    assert set(frame["outcome"]) == {"rated"} and set(frame["status"]) == {"submitted"}
    assert frame["counts_in_metrics"].all()
    assert not frame["swapped"].any()
    assert set(frame["model_a"]) == {"cirrus-70b"}
    assert str(frame["submitted_at"].dt.tz) == "UTC"


def test_export_filters_pass_through(lead, rated):
    mine = lead.export(rated, rater="rater2")
    assert len(mine) == 3 and set(mine["rater"]) == {"rater2"}
    assert len(lead.export(rated, outcome="skipped")) == 0
    assert len(lead.export(rated, since="2000-01-01", status="submitted")) == 6
    assert len(lead.export(rated, until="2000-01-01")) == 0


def test_export_as_a_dataset(lead, rated):
    dataset = lead.export(rated, as_="datasets")
    assert isinstance(dataset, datasets.Dataset)
    assert dataset.num_rows == 6
    assert set(dataset["answers.sxs"]) == {2}
    assert sorted(set(dataset["rater"])) == ["rater", "rater2"]


def test_export_to_parquet_reads_back_the_same_rows(lead, rated, tmp_path):
    path = lead.export(rated, path=tmp_path / "ratings.parquet")
    assert path == tmp_path / "ratings.parquet"
    back = pd.read_parquet(path)
    frame = lead.export(rated)
    assert len(back) == 6
    assert sorted(back["rating_id"]) == sorted(frame["rating_id"])
    assert list(back["answers.sxs"]) == list(back["answers.sxs"].astype(int))
    assert set(back["answers.sxs"]) == {2}
    assert set(back["answers.b.instruction_following"]) == {"minor_issues"}
    # Nested values travel as JSON text.
    assert all(json.loads(v) == {} for v in back["review_field_comments"])


@pytest.mark.parametrize("method", ["majority", "dawid_skene"])
def test_aggregate_gives_one_answer_per_task_and_question(lead, rated, method, tmp_path):
    frame = lead.export(rated, aggregate=method)
    assert list(frame.columns) == [
        "external_id",
        "question",
        "answer",
        "tied",
        "confidence",
        "mean",
        "method",
        "raters",
    ]
    assert set(frame["method"]) == {method}
    sxs = frame[frame["question"] == "sxs"].sort_values("external_id")
    assert list(sxs["external_id"]) == ["t-1", "t-2", "t-3"]
    assert list(sxs["answer"]) == [2, 2, 2]
    assert list(sxs["raters"]) == [2, 2, 2]
    assert all(0.99 <= c <= 1.0 for c in sxs["confidence"])
    # Questions are named as the CSV export's columns are.
    correctness = frame[frame["question"] == "a_correctness"]
    assert set(correctness["answer"]) == {"no_issues"}
    # Answers of several kinds go to Parquet as JSON text.
    back = pd.read_parquet(lead.export(rated, aggregate=method, path=tmp_path / "agg.parquet"))
    assert len(back) == len(frame)
    assert {json.loads(a) for a in back[back["question"] == "sxs"]["answer"]} == {2}


def test_aggregate_with_a_filter_is_refused_naming_it(lead, rated):
    with pytest.raises(UnprocessableError) as raised:
        lead.export(rated, aggregate="majority", rater="rater")
    assert set(raised.value.fields) == {"rater"}
    with pytest.raises(UnprocessableError) as raised:
        lead.export(rated, aggregate="median")  # type: ignore[arg-type]
    assert "aggregate" in raised.value.fields


def test_export_refuses_an_unknown_kind_before_asking(lead, rated):
    with pytest.raises(ValueError, match="as_"):
        lead.export(rated, as_="polars")  # type: ignore[arg-type]


def test_final_gives_one_row_per_task_with_its_source(server, lead, rated):
    """Before any lead decides, each task's final answer is the majority of its ratings;
    a decision recorded through the API comes out as ``adjudicated``."""
    frame = lead.export(rated, final=True).sort_values("external_id")
    assert list(frame["external_id"]) == ["t-1", "t-2", "t-3"]
    assert set(frame["source"]) == {"majority"}
    assert list(frame["answers.sxs"]) == [2, 2, 2]
    answers = {
        "a": {"executability": "yes_fully", "instruction_following": "no_issues",
              "correctness": "no_issues"},
        "b": {"executability": "no_code", "instruction_following": "minor_issues",
              "instruction_following_explanation": "gives an expression, not the function",
              "correctness": "no_issues"},
        "sxs": 3,
        "sxs_explanation": "A is a little better: it is the function asked for.",
    }
    decided = lead.request(
        "PUT", f"/batches/{rated}/tasks/t-2/final", json={"answers": answers}
    )
    assert decided["by"] == lead.me().username
    frame = lead.export(rated, final=True).set_index("external_id")
    assert frame.loc["t-2", "source"] == "adjudicated"
    assert frame.loc["t-2", "answers.sxs"] == 3
    with pytest.raises(UnprocessableError) as raised:
        lead.export(rated, final=True, aggregate="majority")
    assert "aggregate" in raised.value.fields

