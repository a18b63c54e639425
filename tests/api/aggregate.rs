//! One answer per task: the aggregated export (`?aggregate=majority|dawid_skene`) and
//! the metrics' `aggregation`, rebuilt here from the ordinary ratings export. Raters
//! whose answers are chosen per task; a skip and a rejected rating that must count in
//! nothing.

use std::collections::BTreeMap;

use reqwest::StatusCode;
use reqwest::header::CONTENT_TYPE;
use serde_json::{Value, json};

use crate::helpers::{Go, Persona, TestApp, assignment_id, complete_answers, db_test, json_with};
use verdict_core::metrics::aggregate::{Label, Vote, dawid_skene, majority_vote};

/// The blackhat questions aggregated, as the ratings export names their columns, with
/// the rubric's options in order (the sxs scale's points).
fn questions() -> Vec<(&'static str, Vec<Label>)> {
    let text =
        |xs: &[&str]| -> Vec<Label> { xs.iter().map(|x| Label::Text((*x).into())).collect() };
    let executability = text(&["yes_fully", "yes_partially", "no", "no_code"]);
    let following = text(&[
        "no_issues",
        "minor_issues",
        "major_issues",
        "not_applicable",
    ]);
    let correctness = text(&[
        "no_issues",
        "minor_issues",
        "major_issues",
        "cannot_assess",
        "not_applicable",
    ]);
    vec![
        ("a_executability", executability.clone()),
        ("a_instruction_following", following.clone()),
        ("a_correctness", correctness.clone()),
        ("b_executability", executability),
        ("b_instruction_following", following),
        ("b_correctness", correctness),
        ("sxs", (1..=7).map(Label::Int).collect()),
    ]
}

/// Rater `r` (0-based) on task `n`: a spread of answers, some tasks split three ways.
fn answers(r: usize, n: usize) -> Value {
    let mut a = complete_answers();
    let correctness = [
        "no_issues",
        "minor_issues",
        "major_issues",
        "not_applicable",
    ];
    a["a"]["correctness"] = json!(correctness[(n + r * (n % 3)) % 4]);
    a["b"]["correctness"] = json!(correctness[(n * r + 1) % 3]);
    a["sxs"] = json!(1 + (n * 2 + r * r) % 7);
    if (n + r) % 4 == 0 {
        a["a"]["executability"] = json!("yes_partially");
    }
    for side in ["a", "b"] {
        a[side]["correctness_explanation"] = json!("The loop stops one step early.");
        a[side]["executability_explanation"] = json!("One import is missing.");
    }
    a
}

/// Submits `answers`, confirming the consistency warnings they raise.
async fn submit(app: &TestApp, who: &Persona, next: &Value, answers: &Value) -> String {
    let assignment = assignment_id(next);
    let mut done = app.act(who, &assignment, "submit", answers).await;
    if done.status() == StatusCode::CONFLICT {
        let body = json_with(done, StatusCode::CONFLICT).await;
        let ids: Vec<Value> = body["warnings"]
            .as_array()
            .expect("warnings")
            .iter()
            .map(|w| w["id"].clone())
            .collect();
        let mut confirmed = answers.clone();
        confirmed["confirmed_warnings"] = json!(ids);
        done = app.act(who, &assignment, "submit", &confirmed).await;
    }
    json_with(done, StatusCode::OK).await["rating_id"]
        .as_str()
        .expect("a rating id")
        .to_owned()
}

async fn rate_as(app: &TestApp, who: &Persona, batch: &str, r: usize, limit: usize) {
    for _ in 0..limit {
        let Some(next) = app.next(who, batch).await else {
            return;
        };
        let external = next["task"]["external_id"].as_str().unwrap();
        let n: usize = external.trim_start_matches('t').parse().unwrap();
        submit(app, who, &next, &answers(r, n)).await;
    }
}

async fn get(app: &TestApp, who: &Persona, batch: &str, query: &str) -> reqwest::Response {
    who.api
        .get(app.url(&format!("/api/v1/batches/{batch}/export?{query}")))
        .go()
        .await
}

async fn text(response: reqwest::Response) -> String {
    assert_eq!(response.status(), StatusCode::OK);
    response.text().await.unwrap()
}

/// A batch of 8 tasks rated by four raters (the fourth on a few), with a skip and a
/// rejected rating beside them.
async fn rated_batch(app: &TestApp) -> (Persona, String) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let tasks = crate::helpers::tasks_jsonl(8);
    let batch = app
        .batch(
            &admin,
            "aggregate",
            &tasks,
            "&overlap=4&randomize=false&raters_see_external_ids=true",
        )
        .await;
    for r in 0..3 {
        let who = app
            .persona(&format!("r{r}"), verdict::auth::Role::Rater)
            .await;
        rate_as(app, &who, &batch, r, 8).await;
    }
    let late = app.persona("r3", verdict::auth::Role::Rater).await;
    rate_as(app, &late, &batch, 3, 3).await;
    let next = app.next(&late, &batch).await.unwrap();
    let skip = app
        .act(
            &late,
            &assignment_id(&next),
            "skip",
            &json!({"reason": "unfamiliar"}),
        )
        .await;
    assert_eq!(skip.status(), StatusCode::OK);
    // r3's next rating is rejected: it counts in nothing.
    let next = app.next(&late, &batch).await.unwrap();
    let mut odd = answers(3, 99);
    odd["sxs"] = json!(7);
    let rating = submit(app, &late, &next, &odd).await;
    let review = lead
        .api
        .post(app.url(&format!("/api/v1/ratings/{rating}/review")))
        .json(&json!({"decision": "reject", "version": 1}))
        .go()
        .await;
    assert_eq!(review.status(), StatusCode::OK);
    (lead, batch)
}

/// The label of a CSV cell of the ratings export.
fn label(column: &str, cell: &str) -> Label {
    if column == "sxs" {
        Label::Int(cell.parse().unwrap())
    } else {
        Label::Text(cell.to_owned())
    }
}

/// Per question, the votes of the counted ratings of the ratings export (CSV), in the
/// rubric's option order.
fn votes_from_export(csv_text: &str) -> BTreeMap<&'static str, Vec<Vote<String, String, Label>>> {
    let mut reader = csv::Reader::from_reader(csv_text.as_bytes());
    let headers = reader.headers().unwrap().clone();
    let at = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let mut out = BTreeMap::new();
    let records: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let counted: Vec<&csv::StringRecord> = records
        .iter()
        .filter(|r| &r[at("counts_in_metrics")] == "true")
        .collect();
    assert_eq!(
        counted.len(),
        3 * 8 + 3,
        "the skip and the rejected rating are out"
    );
    for (column, options) in questions() {
        let mut votes: Vec<Vote<String, String, Label>> = counted
            .iter()
            .filter(|r| !r[at(column)].is_empty())
            .map(|r| Vote {
                task: r[at("external_id")].to_owned(),
                rater: r[at("rater")].to_owned(),
                label: label(column, &r[at(column)]),
            })
            .collect();
        votes.sort_by_key(|v| options.iter().position(|o| *o == v.label).unwrap());
        out.insert(column, votes);
    }
    out
}

/// A row of the aggregated export: the answer (none for a tie), the tied answers, the
/// confidence, the mean answer and the number of raters.
#[derive(Debug, PartialEq)]
struct Aggregated {
    answer: Option<Label>,
    tied: Vec<Label>,
    confidence: f64,
    mean: Option<f64>,
    raters: usize,
}

/// The aggregated export's rows by (external id, question).
fn aggregated_rows(csv_text: &str, method: &str) -> BTreeMap<(String, String), Aggregated> {
    let mut reader = csv::Reader::from_reader(csv_text.as_bytes());
    assert_eq!(
        reader.headers().unwrap().iter().collect::<Vec<_>>(),
        [
            "external_id",
            "question",
            "answer",
            "tied",
            "confidence",
            "mean",
            "method",
            "raters"
        ]
    );
    reader
        .records()
        .map(Result::unwrap)
        .map(|r| {
            assert_eq!(&r[6], method);
            let tied: Vec<Label> = r[3]
                .split('|')
                .filter(|t| !t.is_empty())
                .map(|t| label(&r[1], t))
                .collect();
            let answer = (!r[2].is_empty()).then(|| label(&r[1], &r[2]));
            assert!(
                answer.is_some() != (tied.len() > 1),
                "an answer or a tie of two or more: {r:?}"
            );
            (
                (r[0].to_owned(), r[1].to_owned()),
                Aggregated {
                    answer,
                    tied,
                    confidence: r[4].parse().unwrap(),
                    mean: (!r[5].is_empty()).then(|| r[5].parse().unwrap()),
                    raters: r[7].parse().unwrap(),
                },
            )
        })
        .collect()
}

/// Majority vote worked out by hand: the most answers; a tie gives no answer and the
/// tied ones in the rubric's order.
fn by_hand(
    votes: &[Vote<String, String, Label>],
    options: &[Label],
) -> BTreeMap<String, (Option<Label>, Vec<Label>, f64)> {
    let mut counts: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for v in votes {
        let i = options.iter().position(|o| *o == v.label).unwrap();
        counts
            .entry(v.task.clone())
            .or_insert_with(|| vec![0; options.len()])[i] += 1;
    }
    counts
        .into_iter()
        .map(|(task, c)| {
            let top = *c.iter().max().unwrap();
            let tops: Vec<Label> = (0..c.len())
                .filter(|&i| c[i] == top)
                .map(|i| options[i].clone())
                .collect();
            let total: usize = c.iter().sum();
            let share = top as f64 / total as f64;
            if tops.len() == 1 {
                (task, (Some(tops[0].clone()), Vec::new(), share))
            } else {
                (task, (None, tops, share))
            }
        })
        .collect()
}

async fn aggregated_exports_are_rebuilt_from_the_ratings_export(app: &TestApp) {
    let (lead, batch) = rated_batch(app).await;
    let ratings = text(get(app, &lead, &batch, "format=csv").await).await;
    let votes = votes_from_export(&ratings);
    let majority = aggregated_rows(
        &text(get(app, &lead, &batch, "aggregate=majority").await).await,
        "majority",
    );
    let ds_response = get(app, &lead, &batch, "aggregate=dawid_skene&format=csv").await;
    assert_eq!(
        ds_response.headers()[CONTENT_TYPE],
        "text/csv; charset=utf-8"
    );
    let dawid_skene_rows = aggregated_rows(&text(ds_response).await, "dawid_skene");
    let metrics = app.metrics(&lead, &batch).await;
    let mut ties = 0;
    let mut differ_total = 0;
    for (column, options) in questions() {
        let votes = &votes[column];
        let mv = majority_vote(votes);
        let ds = dawid_skene(votes);
        let hand = by_hand(votes, &options);
        assert_eq!(mv.tasks.len(), 8, "{column}");
        for (mv_task, ds_task) in mv.tasks.iter().zip(&ds.tasks) {
            let key = (mv_task.task.clone(), column.to_owned());
            let row = &majority[&key];
            assert_eq!(
                (&row.answer, &row.tied, row.raters),
                (&mv_task.label, &mv_task.tied, mv_task.answers),
                "{key:?}"
            );
            assert!(
                (row.confidence - mv_task.confidence).abs() < 1e-12,
                "{key:?}"
            );
            let (answer, tied, share) = &hand[&mv_task.task];
            assert_eq!((answer, tied), (&row.answer, &row.tied), "{key:?}: by hand");
            assert!((share - row.confidence).abs() < 1e-12);
            // The mean of the task's answers, where they are numbers (the sxs scale).
            let numbers: Vec<f64> = votes
                .iter()
                .filter(|v| v.task == mv_task.task)
                .filter_map(|v| match v.label {
                    Label::Int(n) => Some(n as f64),
                    _ => None,
                })
                .collect();
            let mean =
                (!numbers.is_empty()).then(|| numbers.iter().sum::<f64>() / numbers.len() as f64);
            assert_eq!(row.mean.is_some(), mean.is_some(), "{key:?}");
            if let (Some(shown), Some(mean)) = (row.mean, mean) {
                assert!((shown - mean).abs() < 1e-12, "{key:?}");
            }
            ties += usize::from(row.answer.is_none());
            let row = &dawid_skene_rows[&key];
            assert_eq!(
                (&row.answer, &row.tied, row.raters),
                (&ds_task.label, &ds_task.tied, ds_task.answers),
                "{key:?}"
            );
            assert!(
                (row.confidence - ds_task.confidence).abs() < 1e-9,
                "{key:?}"
            );
            differ_total += usize::from(mv_task.label != ds_task.label);
        }
        let path = column.replacen('_', ".", usize::from(column != "sxs"));
        let summary = &metrics["aggregation"][&path];
        assert_eq!(summary["tasks"], 8, "{path}: {summary}");
        let differ = mv
            .tasks
            .iter()
            .zip(&ds.tasks)
            .filter(|(m, d)| (&m.label, &m.tied) != (&d.label, &d.tied))
            .count() as f64
            / 8.0;
        let tied = mv.tasks.iter().filter(|t| t.label.is_none()).count();
        assert_eq!(summary["majority_tied"], tied, "{path}");
        let tied = ds.tasks.iter().filter(|t| t.label.is_none()).count();
        assert_eq!(summary["dawid_skene_tied"], tied, "{path}");
        assert!(
            (summary["differ"].as_f64().unwrap() - differ).abs() < 1e-12,
            "{path}"
        );
        let mean = ds.tasks.iter().map(|t| t.confidence).sum::<f64>() / 8.0;
        let shown = summary["dawid_skene_confidence"].as_f64().unwrap();
        assert!((shown - mean).abs() < 1e-9, "{path}");
        for rater in &ds.raters {
            let shown = summary["raters"][&rater.rater].as_f64().unwrap();
            assert!(
                (shown - rater.accuracy).abs() < 1e-9,
                "{path} {}",
                rater.rater
            );
        }
        assert_eq!(summary["raters"].as_object().unwrap().len(), 4, "{path}");
    }
    assert_eq!(majority.len(), 8 * 7);
    assert_eq!(dawid_skene_rows.len(), 8 * 7);
    assert!(ties > 0, "the answers make some ties: they have no answer");
    eprintln!("tasks where the methods differ: {differ_total}");

    // JSON Lines: the same rows, answers typed.
    let lines = text(get(app, &lead, &batch, "aggregate=majority&format=jsonl").await).await;
    let mut n = 0;
    for line in lines.lines() {
        let row: Value = serde_json::from_str(line).unwrap();
        let key = (
            row["external_id"].as_str().unwrap().to_owned(),
            row["question"].as_str().unwrap().to_owned(),
        );
        let csv_row = &majority[&key];
        assert_eq!(Label::from_json(&row["answer"]), csv_row.answer);
        let tied: Vec<Label> = row["tied"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| Label::from_json(t).unwrap())
            .collect();
        assert_eq!(tied, csv_row.tied);
        assert_eq!(row["confidence"].as_f64(), Some(csv_row.confidence));
        assert_eq!(row["mean"].as_f64(), csv_row.mean);
        assert_eq!(row["raters"], csv_row.raters);
        assert_eq!(row["method"], "majority");
        n += 1;
    }
    assert_eq!(n, 8 * 7);
}
db_test!(aggregated_exports_are_rebuilt_from_the_ratings_export: TestApp);

async fn the_aggregated_export_refuses_bad_queries_and_raters(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let batch = app
        .batch(&admin, "agg-bad", &crate::helpers::tasks_jsonl(1), "")
        .await;
    for (query, field) in [
        ("aggregate=mean", "aggregate"),
        ("aggregate=", "aggregate"),
        ("aggregate=majority&format=xlsx", "format"),
        ("aggregate=dawid_skene&rater=r1", "rater"),
        ("aggregate=majority&outcome=rated", "outcome"),
    ] {
        let response = get(app, &lead, &batch, query).await;
        let body = json_with(response, StatusCode::UNPROCESSABLE_ENTITY).await;
        assert!(body["fields"][field].is_string(), "{query}: {body}");
    }
    // Nothing rated yet: the header alone.
    let empty = text(get(app, &lead, &batch, "aggregate=majority").await).await;
    assert_eq!(
        empty.trim(),
        "external_id,question,answer,tied,confidence,mean,method,raters"
    );
    let rater = app.rater().await;
    for query in ["aggregate=majority", "aggregate=dawid_skene&format=jsonl"] {
        let response = get(app, &rater, &batch, query).await;
        assert_eq!(response.status(), StatusCode::FORBIDDEN, "{query}");
    }
}
db_test!(the_aggregated_export_refuses_bad_queries_and_raters: TestApp);

/// Rates every task of `batch` as `who`, the answers of task `t{n}` from `answer(n)`.
async fn rate_each(app: &TestApp, who: &Persona, batch: &str, answer: impl Fn(usize) -> Value) {
    while let Some(next) = app.next(who, batch).await {
        let external = next["task"]["external_id"].as_str().unwrap();
        let n: usize = external.trim_start_matches(['t', 's']).parse().unwrap();
        submit(app, who, &next, &answer(n)).await;
    }
}

/// No tie is settled by the order of the rubric's options (which lists A's side first):
/// two raters who split on a task leave it tied, and a batch whose ratings are a mirror
/// image (each A verdict matched by the same B verdict) aggregates to as many A as B.
async fn ties_go_to_no_side_and_a_mirror_image_aggregates_evenly(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let batch = app
        .batch(
            &admin,
            "mirror",
            &crate::helpers::tasks_jsonl(6),
            "&overlap=2&randomize=false&raters_see_external_ids=true",
        )
        .await;
    // Per task, the two raters' side-by-side answers: t1 and t6 split evenly, t2 and t3
    // agree on opposite sides, t4 and t5 lean to opposite sides.
    let sxs = [(2, 6), (3, 3), (5, 5), (2, 1), (6, 7), (1, 7)];
    for (r, name) in ["m1", "m2"].into_iter().enumerate() {
        let who = app.persona(name, verdict::auth::Role::Rater).await;
        rate_each(app, &who, &batch, |n| {
            let mut a = answers(0, n);
            let (first, second) = sxs[n - 1];
            a["sxs"] = json!(if r == 0 { first } else { second });
            a
        })
        .await;
    }
    for method in ["majority", "dawid_skene"] {
        let rows = aggregated_rows(
            &text(get(app, &lead, &batch, &format!("aggregate={method}")).await).await,
            method,
        );
        let side = |t: &str| &rows[&(t.to_owned(), "sxs".to_owned())];
        let (mut a, mut b) = (0, 0);
        for t in 1..=6 {
            match side(&format!("t{t}")).answer {
                Some(Label::Int(n)) if n < 4 => a += 1,
                Some(Label::Int(n)) if n > 4 => b += 1,
                _ => {}
            }
        }
        assert_eq!(a, b, "{method}: as many A as B");
        if method == "majority" {
            // t4 and t5 lean one way each, but on two points of the scale: tied too.
            assert_eq!((a, b), (1, 1));
            for t in ["t1", "t6"] {
                let row = side(t);
                assert_eq!(row.answer, None, "{t}: a tie has no answer");
                assert_eq!(row.confidence, 0.5);
            }
            assert_eq!(side("t1").tied, [Label::Int(2), Label::Int(6)]);
            assert_eq!(side("t1").mean, Some(4.0));
            assert_eq!(side("t4").tied, [Label::Int(1), Label::Int(2)]);
            assert_eq!(side("t2").answer, Some(Label::Int(3)));
        }
    }
    let metrics = app.metrics(&lead, &batch).await;
    assert_eq!(
        metrics["aggregation"]["sxs"]["majority_tied"], 4,
        "{metrics}"
    );
    // In JSON Lines a tie is a null answer and the list of tied answers.
    let lines = text(get(app, &lead, &batch, "aggregate=majority&format=jsonl").await).await;
    let t1: Value = lines
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|row| row["external_id"] == "t1" && row["question"] == "sxs")
        .unwrap();
    assert_eq!(
        (t1["answer"].clone(), t1["tied"].clone(), t1["mean"].clone()),
        (Value::Null, json!([2, 6]), json!(4.0))
    );
}
db_test!(ties_go_to_no_side_and_a_mirror_image_aggregates_evenly: TestApp);

/// The additive ladder's score is aggregated too: its middle answer where that is one of
/// the answers (whatever the method), else the two middle ones tied, with the mean beside.
async fn a_score_comes_to_its_middle_answer_with_its_mean(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let tasks = crate::helpers::jsonl((1..=3).map(|i| {
        crate::helpers::single_task(&format!("s{i}"), &format!("Task {i}"), "print(1)", "solo")
    }));
    let batch = app
        .batch(
            &admin,
            "scores",
            &tasks,
            "&rubric=additive-5&overlap=4&raters_see_external_ids=true",
        )
        .await;
    // Per task, each rater's level on the ladder (the score).
    let levels = [[2, 4, 5, 4], [1, 3, 3, 5], [1, 2, 4, 5]];
    for (r, name) in ["s0", "s1", "s2", "s3"].into_iter().enumerate() {
        let who = app.persona(name, verdict::auth::Role::Rater).await;
        rate_each(app, &who, &batch, |n| {
            let level = levels[n - 1][r];
            let names = [
                "relevant",
                "substantial",
                "useful",
                "comprehensive",
                "expert",
            ];
            let mut a = json!({
                "repetitive": false,
                "justification": "Relevant and useful, but it does not explain the approach."
            });
            for (i, name) in names.iter().enumerate() {
                a[name] = json!(i < level);
            }
            a
        })
        .await;
    }
    for method in ["majority", "dawid_skene"] {
        let body = text(get(app, &lead, &batch, &format!("aggregate={method}")).await).await;
        let mut reader = csv::Reader::from_reader(body.as_bytes());
        let rows: BTreeMap<String, Vec<String>> = reader
            .records()
            .map(Result::unwrap)
            .filter(|r| &r[1] == "score")
            .map(|r| (r[0].to_owned(), r.iter().map(str::to_owned).collect()))
            .collect();
        // external_id, question, answer, tied, confidence, mean, method, raters
        let row = |t: &str| rows[t][2..].to_vec();
        assert_eq!(
            row("s1"),
            ["4", "", "0.5", "3.75", "median", "4"],
            "{method}"
        );
        assert_eq!(row("s2"), ["3", "", "0.5", "3", "median", "4"], "{method}");
        assert_eq!(
            row("s3"),
            ["", "2|4", "0.5", "3", "median", "4"],
            "{method}"
        );
    }
}
db_test!(a_score_comes_to_its_middle_answer_with_its_mean: TestApp);

/// `counted=true` keeps only the rows that count in the metrics, in CSV and JSON Lines:
/// as many as the metrics' included ratings (the skip and the rejected rating are out).
async fn the_export_of_what_counts_has_the_metrics_rows(app: &TestApp) {
    let (lead, batch) = rated_batch(app).await;
    let included = app.metrics(&lead, &batch).await["counts"]["included"]
        .as_u64()
        .unwrap() as usize;
    assert_eq!(included, 3 * 8 + 3);
    let all = text(get(app, &lead, &batch, "format=csv").await).await;
    let counted = text(get(app, &lead, &batch, "format=csv&counted=true").await).await;
    let rows = |body: &str| {
        let mut reader = csv::Reader::from_reader(body.as_bytes());
        let at = reader
            .headers()
            .unwrap()
            .iter()
            .position(|h| h == "counts_in_metrics")
            .unwrap();
        reader
            .records()
            .map(|r| r.unwrap()[at].to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        rows(&all).len(),
        included + 2,
        "the skip and the rejected rating"
    );
    let kept = rows(&counted);
    assert_eq!(kept.len(), included);
    assert!(kept.iter().all(|c| c == "true"), "{kept:?}");
    let lines = text(get(app, &lead, &batch, "format=jsonl&counted=true").await).await;
    assert_eq!(lines.lines().count(), included);
    assert_eq!(
        rows(&text(get(app, &lead, &batch, "format=csv&counted=false").await).await).len(),
        included + 2
    );
    // Refused naming the field: not a yes or no, or false beside an aggregation.
    for query in ["counted=maybe", "aggregate=majority&counted=false"] {
        let response = get(app, &lead, &batch, query).await;
        assert!(response.status().is_client_error(), "{query}");
        let body: Value = response.json().await.unwrap();
        assert!(body.to_string().contains("counted"), "{query}: {body}");
    }
    let aggregated = text(get(app, &lead, &batch, "aggregate=majority&counted=true").await).await;
    assert_eq!(aggregated.lines().count(), 1 + 8 * 7);
}
db_test!(the_export_of_what_counts_has_the_metrics_rows: TestApp);
