//! The judge export (`GET /api/v1/judge-runs/{id}/export`) holds what every judge figure
//! of the batch's metrics is worked out from (issue 30): each figure of `judges.<name>`
//! is rebuilt from the batch's ratings export and the judge export alone, parsed as CSV
//! and as JSON Lines, and equals the metrics API's to 1e-12, for a pair rubric with a
//! 1-7 preference (blackhat), a choice of A / tie / B (pairwise-aspects) and a single
//! response (additive-5). A scripted judge gives the cases that matter: orders that
//! agree, orders that disagree, one order unparsed, a failed call, answers read in both
//! orders while the whole rating is not valid.

use std::collections::{BTreeMap, BTreeSet};

use reqwest::StatusCode;
use serde_json::{Value, json};
use verdict::auth::Role;
use verdict_core::metrics::judges::{JudgeField, JudgeMetrics, Lean, SideAgreement};
use verdict_core::metrics::pairwise::{PairAgreement, pair_agreement};
use verdict_core::metrics::stats::share;
use verdict_core::rubric::{Favours, Role as MetricRole, Rubric, Slot, by_name};

use crate::helpers::{Go, Persona, TestApp, db_test, json_with, jsonl, single_task};
use crate::judge_server::{Reply, ScriptedJudge};
use crate::judge_stands::{
    Rating, aspects, aspects_reply, follows_position, get, pair_tasks, ratings_csv, ratings_jsonl,
    response, shown, standing, template, value_of,
};
use crate::judges::{add_judge, start_run, wait_for};

/// Rates every task of the batch as each of three raters, with what `answer` gives for a
/// task number and a rater number.
async fn rate(app: &TestApp, batch: &str, answer: impl Fn(usize, usize) -> Value) {
    for r in 0..3 {
        let who = app.persona(&format!("r{r}"), Role::Rater).await;
        let done = app
            .rate_all(&who, batch, |next| {
                let text = next["task"]["response_a"]
                    .as_str()
                    .or(next["task"]["response"].as_str())
                    .expect("a response");
                let (n, swapped) = shown(&format!("X {text}"), "X ");
                assert!(!swapped, "the batch keeps the task's order");
                answer(n, r)
            })
            .await;
        assert!(done > 0, "r{r} rated");
    }
}

/// One row of the judge export, as parsed from either format.
#[derive(Debug, Clone, PartialEq)]
struct Answer {
    run: String,
    task: String,
    gold: bool,
    task_rated: bool,
    len_a: i64,
    len_b: i64,
    order: String,
    call_status: String,
    path: String,
    path_shown: String,
    status: String,
    answer: Option<Value>,
    answer_shown: Option<Value>,
}

fn judge_rows_csv(text: &str) -> Vec<Answer> {
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .expect("a header")
        .iter()
        .map(str::to_owned)
        .collect();
    reader
        .records()
        .map(|record| {
            let record = record.expect("a record");
            let at = |name: &str| {
                let i = header.iter().position(|h| h == name).expect(name);
                record[i].to_owned()
            };
            Answer {
                run: at("judge_run"),
                task: at("external_id"),
                gold: at("gold") == "true",
                task_rated: at("task_rated") == "true",
                len_a: at("len_a").parse().expect("a length"),
                len_b: at("len_b").parse().expect("a length"),
                order: at("order"),
                call_status: at("call_status"),
                path: at("path"),
                path_shown: at("path_shown"),
                status: at("status"),
                answer: value_of(&at("answer")),
                answer_shown: value_of(&at("answer_shown")),
            }
        })
        .collect()
}

fn judge_rows_jsonl(text: &str) -> Vec<Answer> {
    text.lines()
        .map(|line| {
            let row: Value = serde_json::from_str(line).expect("a JSON line");
            let text = |key: &str| row[key].as_str().unwrap_or("").to_owned();
            let value = |key: &str| Some(row[key].clone()).filter(|v| !v.is_null());
            Answer {
                run: text("judge_run"),
                task: text("external_id"),
                gold: row["gold"] == true,
                task_rated: row["task_rated"] == true,
                len_a: row["len_a"].as_i64().expect("a length"),
                len_b: row["len_b"].as_i64().expect("a length"),
                order: text("order"),
                call_status: text("call_status"),
                path: text("path"),
                path_shown: text("path_shown"),
                status: text("status"),
                answer: value("answer"),
                answer_shown: value("answer_shown"),
            }
        })
        .collect()
}

/// A question as the metrics read it, from the rubric document: its answers in order
/// (code = place + 1), whether they are ordered, which are off the scale, which side
/// each favours.
struct Question {
    path: String,
    values: Vec<Value>,
    ordered: bool,
    unscaled: Vec<bool>,
    favours: Vec<Option<Favours>>,
    /// A preference on a scale (compared again by side), or among options.
    scale: bool,
    preference: bool,
}

fn questions(rubric: &Rubric) -> Vec<Question> {
    rubric
        .slots()
        .into_iter()
        .filter_map(|slot| {
            let role = slot.metrics()?;
            let values: Vec<Value> = match slot {
                Slot::Asked { question, .. } => {
                    question.options().into_iter().map(|(v, _)| v).collect()
                }
                Slot::Derived(d) => {
                    let (low, high) = d.range(rubric);
                    (low..=high).map(Value::from).collect()
                }
            };
            let none = Vec::new();
            let (unscaled, ordered, scale, preference) = match role {
                MetricRole::Preference {
                    midpoint: Some(_), ..
                } => (&none, true, true, true),
                MetricRole::Preference { .. } => (&none, false, false, true),
                MetricRole::Ordinal { unscaled } => (unscaled, true, false, false),
                MetricRole::Nominal { unscaled } => (unscaled, false, false, false),
                MetricRole::Score => (&none, true, false, false),
            };
            Some(Question {
                path: slot.path(),
                unscaled: values.iter().map(|v| unscaled.contains(v)).collect(),
                favours: values.iter().map(|v| role.favours(v)).collect(),
                values,
                ordered,
                scale,
                preference,
            })
        })
        .collect()
}

impl Question {
    fn code(&self, value: Option<&Value>) -> i64 {
        value
            .and_then(|v| self.values.iter().position(|x| x == v))
            .map_or(0, |i| i as i64 + 1)
    }

    fn favours_code(&self, code: i64) -> Option<Favours> {
        usize::try_from(code - 1)
            .ok()
            .and_then(|i| self.favours.get(i).copied().flatten())
    }

    fn favours(&self, value: Option<&Value>) -> Option<Favours> {
        self.favours_code(self.code(value))
    }

    /// Missing answers, and off-scale ones of ordered questions, are left out.
    fn comparable(&self, code: i64) -> Option<i64> {
        (code != 0 && !(self.ordered && self.unscaled[code as usize - 1])).then_some(code)
    }

    fn tie(&self) -> Option<i64> {
        self.favours
            .iter()
            .position(|f| *f == Some(Favours::Tie))
            .map(|i| i as i64 + 1)
    }

    /// A choice whose every option names a side of its own is compared by side.
    fn by_side(&self) -> bool {
        let f = &self.favours;
        self.preference
            && !self.scale
            && f.iter().all(Option::is_some)
            && (0..f.len()).all(|i| !f[..i].contains(&f[i]))
    }

    fn consensus(&self, mut codes: Vec<i64>) -> Option<i64> {
        if codes.is_empty() {
            return None;
        }
        codes.sort_unstable();
        let n = codes.len();
        if self.ordered {
            return (n % 2 == 1 || codes[n / 2 - 1] == codes[n / 2]).then(|| codes[n / 2]);
        }
        let mut counts: BTreeMap<i64, usize> = BTreeMap::new();
        for c in codes {
            *counts.entry(c).or_default() += 1;
        }
        let most = *counts.values().max()?;
        let top: Vec<i64> = counts
            .iter()
            .filter(|(_, k)| **k == most)
            .map(|(c, _)| *c)
            .collect();
        (top.len() == 1).then(|| top[0])
    }

    fn figures(&self, pairs: &[(i64, i64)], sides: bool) -> PairAgreement {
        if !sides {
            return pair_agreement(pairs, self.tie(), self.ordered);
        }
        let side = |code: i64| {
            self.favours_code(code).map(|f| match f {
                Favours::A => -1,
                Favours::Tie => 0,
                Favours::B => 1,
            })
        };
        let sided: Vec<(i64, i64)> = pairs
            .iter()
            .filter_map(|&(x, y)| Some((side(x)?, side(y)?)))
            .collect();
        pair_agreement(&sided, Some(0), true)
    }
}

/// The judge's figures, worked out from the judge export's rows and the batch export's
/// ratings alone.
fn rebuild(rubric: &Rubric, answers: &[Answer], ratings: &[Rating]) -> JudgeMetrics {
    // Gold tasks grade the judge apart, and count in none of these figures.
    let answers: Vec<Answer> = answers.iter().filter(|a| !a.gold).cloned().collect();
    let answers = &answers[..];
    let questions = questions(rubric);
    let pair = rubric.subject == verdict_core::rubric::Subject::Pair;
    // The raters' counted answers per task, by rater name.
    let mut humans: BTreeMap<&str, BTreeMap<&str, &Rating>> = BTreeMap::new();
    for r in ratings.iter().filter(|r| r.counts && r.kind == "human") {
        humans.entry(&r.task).or_default().insert(&r.rater, r);
    }
    let tasks: BTreeSet<&str> = answers.iter().map(|a| a.task.as_str()).collect();
    let mut calls: BTreeMap<(&str, &str), &str> = BTreeMap::new();
    for a in answers.iter().filter(|a| a.order != "combined") {
        calls.insert((&a.task, &a.order), &a.call_status);
    }
    let count = |status: &str| calls.values().filter(|s| **s == status).count() as u64;
    let read = |task: &str, order: &str| calls.get(&(task, order)).is_some_and(|s| *s != "failed");
    let row = |task: &str, order: &str, path: &str| {
        answers
            .iter()
            .find(|a| a.task == task && a.order == order && a.path == path)
    };
    let (mut rated, mut disagreed) = (0u64, 0u64);
    let (mut consistent, mut both) = (0u64, 0u64);
    let (mut first, mut decisive) = (0u64, 0u64);
    let (mut longer, mut lengths) = (0u64, 0u64);
    let mut parsed = vec![0u64; questions.len()];
    let mut consensus_pairs = vec![Vec::new(); questions.len()];
    let mut rater_pairs: Vec<BTreeMap<String, Vec<(i64, i64)>>> =
        vec![BTreeMap::new(); questions.len()];
    for &task in &tasks {
        let combined: Vec<&Answer> = answers
            .iter()
            .filter(|a| a.task == task && a.order == "combined")
            .collect();
        // Whole: every answer of the combined one that has a status is parsed (texts that
        // are not compared, explanations, have none).
        let whole = !combined.is_empty()
            && combined
                .iter()
                .all(|a| a.status.is_empty() || a.status == "parsed");
        let flagged = answers.iter().find(|a| a.task == task).unwrap().task_rated;
        assert_eq!(whole, flagged, "{task}: task_rated is what its answers say");
        rated += u64::from(whole);
        disagreed += u64::from(combined.iter().any(|a| a.status == "inconsistent"));
        for q in questions.iter().filter(|q| q.preference) {
            // Every read call, as shown.
            for order in ["a_first", "b_first"].into_iter().filter(|o| read(task, o)) {
                let shown = answers
                    .iter()
                    .find(|a| a.task == task && a.order == order && a.path_shown == q.path);
                if let Some(side) = shown.and_then(|a| q.favours(a.answer_shown.as_ref())) {
                    if side != Favours::Tie {
                        decisive += 1;
                        first += u64::from(side == Favours::A);
                    }
                }
            }
            if pair && read(task, "a_first") && read(task, "b_first") {
                let x = row(task, "a_first", &q.path).and_then(|a| q.favours(a.answer.as_ref()));
                let y = row(task, "b_first", &q.path).and_then(|a| q.favours(a.answer.as_ref()));
                if let (Some(x), Some(y)) = (x, y) {
                    both += 1;
                    consistent += u64::from(x == y);
                }
            }
        }
        if combined.is_empty() {
            continue;
        }
        let facts = combined[0];
        let raters = humans.get(task);
        for (qi, q) in questions.iter().enumerate() {
            let code = row(task, "combined", &q.path)
                .filter(|a| a.status == "parsed")
                .map_or(0, |a| q.code(a.answer.as_ref()));
            if code == 0 {
                continue;
            }
            parsed[qi] += 1;
            if q.preference && facts.len_a != facts.len_b {
                if let Some(side) = q.favours_code(code).filter(|s| *s != Favours::Tie) {
                    lengths += 1;
                    longer += u64::from((side == Favours::A) == (facts.len_a > facts.len_b));
                }
            }
            let (Some(raters), Some(judged)) = (raters, q.comparable(code)) else {
                continue;
            };
            let given: Vec<(&str, i64)> = raters
                .iter()
                .filter_map(|(name, r)| {
                    Some((*name, q.comparable(q.code(r.answers.get(&q.path)))?))
                })
                .collect();
            for (name, c) in &given {
                rater_pairs[qi]
                    .entry((*name).to_owned())
                    .or_default()
                    .push((judged, *c));
            }
            if let Some(agreed) = q.consensus(given.iter().map(|(_, c)| *c).collect()) {
                consensus_pairs[qi].push((judged, agreed));
            }
        }
    }
    let n = tasks.len() as u64;
    let fields = questions
        .iter()
        .enumerate()
        .map(|(qi, q)| {
            let mut human = Vec::new();
            for raters in humans.values() {
                let codes: Vec<i64> = raters
                    .values()
                    .filter_map(|r| q.comparable(q.code(r.answers.get(&q.path))))
                    .collect();
                for (i, x) in codes.iter().enumerate() {
                    for y in &codes[i + 1..] {
                        human.push((*x, *y));
                        human.push((*y, *x));
                    }
                }
            }
            let by = |sides: bool| {
                (
                    q.figures(&consensus_pairs[qi], sides),
                    rater_pairs[qi]
                        .iter()
                        .map(|(name, pairs)| (name.clone(), q.figures(pairs, sides)))
                        .collect::<BTreeMap<_, _>>(),
                    q.figures(&human, sides),
                )
            };
            let (consensus, raters, human_figures) = by(q.by_side());
            let field = JudgeField {
                asked: n,
                parsed: parsed[qi],
                coverage: (n > 0).then(|| parsed[qi] as f64 / n as f64),
                consensus,
                raters,
                human: human_figures,
                sides: q.scale.then(|| {
                    let (consensus, raters, human) = by(true);
                    SideAgreement {
                        consensus,
                        raters,
                        human,
                    }
                }),
            };
            (q.path.clone(), field)
        })
        .collect();
    JudgeMetrics {
        tasks: n,
        calls: calls.len() as u64,
        answered: count("answered"),
        unparsed: count("unparsed"),
        failed: count("failed"),
        rated,
        coverage: (n > 0).then(|| rated as f64 / n as f64),
        orders_disagreed: disagreed,
        position_consistency: share(consistent, both),
        position_bias: pair.then(|| Lean {
            n: decisive,
            share: share(first, decisive),
        }),
        length_bias: pair.then(|| Lean {
            n: lengths,
            share: share(longer, lengths),
        }),
        fields,
    }
}

/// `got` and `want` alike: the same keys, every number within 1e-12.
fn same(at: &str, got: &Value, want: &Value) {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => {
            let (gk, wk): (BTreeSet<_>, BTreeSet<_>) = (g.keys().collect(), w.keys().collect());
            assert_eq!(gk, wk, "{at}: keys");
            for (k, v) in w {
                same(&format!("{at}.{k}"), &g[k], v);
            }
        }
        (Value::Number(g), Value::Number(w)) => {
            let (g, w) = (g.as_f64().unwrap(), w.as_f64().unwrap());
            assert!((g - w).abs() <= 1e-12, "{at}: rebuilt {g}, served {w}");
        }
        _ => assert_eq!(got, want, "{at}"),
    }
}

/// Counts the figures compared, so that a test cannot pass by comparing nothing.
fn numbers(value: &Value) -> usize {
    match value {
        Value::Object(m) => m.values().map(numbers).sum(),
        Value::Array(a) => a.iter().map(numbers).sum(),
        Value::Number(_) => 1,
        _ => 0,
    }
}

/// Rebuilds the judge's figures from the exports in both formats and checks them
/// against the metrics; returns the judge's metrics.
async fn rebuilt_from_exports(
    app: &TestApp,
    lead: &Persona,
    batch: &str,
    rubric: &str,
    judge: &str,
) -> Value {
    let rubric = by_name(rubric).expect("a rubric");
    let run = standing(app, lead, batch, judge).await;
    let run_id = run["id"].as_str().expect("an id");
    let metrics = app.metrics(lead, batch).await;
    let served = &metrics["judges"][judge];
    assert!(served.is_object(), "{metrics}");
    for format in ["csv", "jsonl"] {
        let ratings = get(
            app,
            lead,
            &format!("/api/v1/batches/{batch}/export?format={format}"),
        )
        .await;
        let answers = get(
            app,
            lead,
            &format!("/api/v1/judge-runs/{run_id}/export?format={format}"),
        )
        .await;
        let (ratings, answers) = match format {
            "csv" => (ratings_csv(rubric, &ratings), judge_rows_csv(&answers)),
            _ => (ratings_jsonl(&ratings), judge_rows_jsonl(&answers)),
        };
        assert!(
            answers.iter().all(|a| a.run == run_id),
            "every row names its run"
        );
        let rebuilt = serde_json::to_value(rebuild(rubric, &answers, &ratings)).expect("JSON");
        same(&format!("{judge} from {format}"), &rebuilt, served);
        assert!(numbers(served) > 40, "{served}");
        // The judge's rows of the batch's export: the standing run's whole ratings, each
        // naming it, exactly the tasks the judge export says are rated, with its answers.
        let judge_rows: Vec<&Rating> = ratings.iter().filter(|r| r.kind == "judge").collect();
        let rated: BTreeSet<&str> = answers
            .iter()
            .filter(|a| a.task_rated)
            .map(|a| a.task.as_str())
            .collect();
        let exported: BTreeSet<&str> = judge_rows.iter().map(|r| r.task.as_str()).collect();
        assert_eq!(exported, rated, "{format}");
        for r in &judge_rows {
            assert_eq!(r.judge_run, run_id, "{format}: {r:?}");
            for (path, value) in &r.answers {
                let combined = answers
                    .iter()
                    .find(|a| a.task == r.task && a.order == "combined" && &a.path == path);
                if let Some(combined) = combined {
                    assert_eq!(combined.answer.as_ref(), Some(value), "{format} {path}");
                }
            }
        }
    }
    served.clone()
}

/// Blackhat's answers for one response, varied by `k`, that no warning asks about.
fn side(k: usize) -> Value {
    let why = "Part of it could not be tried here in full.";
    let executability = ["yes_fully", "yes_partially", "no"][k % 3];
    let instructions = ["no_issues", "minor_issues"][k % 2];
    let correctness = ["no_issues", "minor_issues", "cannot_assess"][(k / 2) % 3];
    json!({
        "executability": executability,
        "executability_explanation": why,
        "instruction_following": instructions,
        "instruction_following_explanation": "One of the stated limits is not kept.",
        "correctness": correctness,
        "correctness_explanation": "One edge case gives the wrong result."
    })
}

/// What the blackhat judge says of task `n` in each order (canonical scores for A first
/// and for B first), and how it goes wrong: the cases the audit found.
fn blackhat_reply(n: usize, swapped: bool) -> Reply {
    let (a_first, b_first) = match n {
        2 => (2, 6), // as shown 2 and 2: it follows the position
        8 => (1, 3),
        10 => (6, 2),
        7 => (4, 4),
        9 => (7, 7),
        4 => (5, 5),
        5 => (6, 6),
        _ => (2, 2),
    };
    if (n == 3 && swapped) || (n == 6 && !swapped) {
        return if n == 3 {
            Reply::text("I cannot say which is better.")
        } else {
            Reply::Status(400, None)
        };
    }
    let canonical: i64 = if swapped { b_first } else { a_first };
    let (a, b) = (side(n), side(n + 1));
    let (mut first, second) = if swapped { (b, a) } else { (a, b) };
    if n == 5 && swapped {
        // One answer left out in this order: read in the other only.
        first.as_object_mut().unwrap().remove("correctness");
    }
    let why = if n == 4 {
        "ok"
    } else {
        "Weighed correctness first, then the stated limits."
    };
    Reply::text(
        json!({"a": first, "b": second,
               "sxs": if swapped { 8 - canonical } else { canonical },
               "sxs_explanation": why})
        .to_string(),
    )
}

async fn blackhat_figures_are_rebuilt_from_the_exports(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let batch = app
        .batch(
            &admin,
            "bh",
            &pair_tasks(10),
            "&rubric=blackhat&overlap=3&randomize=false",
        )
        .await;
    rate(app, &batch, |n, r| {
        let mut answers = json!({"a": side(n + r), "b": side(n + 2 * r + 1),
            "sxs": 1 + ((n * 3 + r * 2) % 7) as i64,
            "sxs_explanation": "Weighed correctness first, then the stated limits."});
        if n == 1 {
            answers["sxs"] = json!(2);
        }
        answers
    })
    .await;
    let scripted = ScriptedJudge::start(|body: &Value, _| {
        let prompt = body["messages"][0]["content"].as_str().unwrap_or("");
        let (n, swapped) = shown(prompt, "A ");
        blackhat_reply(n, swapped)
    })
    .await;
    add_judge(
        app,
        &admin,
        "bh-judge",
        &scripted.base_url,
        json!({"templates": {"blackhat": template("answers")}}),
    )
    .await;
    let run = start_run(app, &admin, &batch, "bh-judge").await;
    let done = wait_for(app, &admin, &run, "finished").await;
    let served = rebuilt_from_exports(app, &lead, &batch, "blackhat", "bh-judge").await;
    // The cases are there: orders that disagree (t2, t10), a task read in both orders
    // whose rating is not valid (t4), one order unparsed (t3) and one failed (t6).
    assert_eq!(served["orders_disagreed"], 2, "{served}");
    assert_eq!(served["failed"], 1);
    assert!(served["fields"]["sxs"]["parsed"].as_u64() > served["rated"].as_u64());
    // Figures that say something, not nulls compared with nulls.
    let sxs = &served["fields"]["sxs"];
    for figure in [
        &served["position_consistency"]["value"],
        &served["position_bias"]["share"]["value"],
        &served["length_bias"]["share"]["value"],
        &sxs["cohen_kappa"],
        &sxs["weighted_kappa"],
        &sxs["spearman"],
        &sxs["sides"]["cohen_kappa"],
        &sxs["raters"]["r1"]["weighted_kappa"],
        &sxs["human"]["cohen_kappa"],
        &served["fields"]["a.correctness"]["cohen_kappa"],
    ] {
        assert!(figure.is_number(), "{served}");
    }
    assert_eq!(done["tasks_rated"], served["rated"], "{done}");
    assert_eq!(done["orders_disagreed"], 2);
    same(
        "first shown",
        &done["first_shown_share"],
        &served["position_bias"],
    );
}

db_test!(blackhat_figures_are_rebuilt_from_the_exports: TestApp);

async fn pairwise_aspects_figures_are_rebuilt_from_the_exports(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let batch = app
        .batch(
            &admin,
            "pa",
            &pair_tasks(10),
            "&rubric=pairwise-aspects&overlap=3&randomize=false",
        )
        .await;
    rate(app, &batch, aspects).await;
    let scripted = ScriptedJudge::start(|body: &Value, _| {
        let prompt = body["messages"][0]["content"].as_str().unwrap_or("");
        let (n, swapped) = shown(prompt, "A ");
        aspects_reply(n, swapped)
    })
    .await;
    add_judge(
        app,
        &admin,
        "pa-judge",
        &scripted.base_url,
        json!({"templates": {"pairwise-aspects": template("choices")}}),
    )
    .await;
    let run = start_run(app, &admin, &batch, "pa-judge").await;
    wait_for(app, &admin, &run, "finished").await;
    let served = rebuilt_from_exports(app, &lead, &batch, "pairwise-aspects", "pa-judge").await;
    assert!(served["orders_disagreed"].as_u64() >= Some(2), "{served}");
    assert!(
        served["fields"]["helpfulness"]["parsed"].as_u64() > served["rated"].as_u64(),
        "{served}"
    );
    let help = &served["fields"]["helpfulness"];
    for figure in [
        &served["position_consistency"]["value"],
        &served["length_bias"]["share"]["value"],
        &help["cohen_kappa"],
        &help["weighted_kappa"],
        &help["raters"]["r0"]["agreement"],
        &help["human"]["spearman"],
    ] {
        assert!(figure.is_number(), "{served}");
    }
}

db_test!(pairwise_aspects_figures_are_rebuilt_from_the_exports: TestApp);

async fn additive_figures_are_rebuilt_from_the_exports(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let tasks = jsonl((1..=8).map(|i| {
        single_task(
            &format!("t{i}"),
            &format!("Task t{i}: explain a loop."),
            &response(i, false),
            "alpha",
        )
    }));
    let batch = app
        .batch(
            &admin,
            "add",
            &tasks,
            "&rubric=additive-5&overlap=3&randomize=false",
        )
        .await;
    rate(app, &batch, |n, r| {
        let level = (n + r) % 6;
        json!({"relevant": level > 0, "substantial": level > 1, "useful": level > 2,
               "comprehensive": level > 3, "expert": level > 4, "repetitive": n == 4 && r == 0,
               "justification": "What it covers, and what it leaves out."})
    })
    .await;
    let scripted = ScriptedJudge::start(|body: &Value, _| {
        let prompt = body["messages"][0]["content"].as_str().unwrap_or("");
        let (n, _) = shown(prompt, "R ");
        match n {
            3 => Reply::text("score: 2 or 3\nHard to say."),
            5 => Reply::text("It is a fine answer."),
            6 => Reply::Status(400, None),
            _ => Reply::text(format!(
                "score: {}\nCovers the basics, and leaves the rest out.",
                n % 6
            )),
        }
    })
    .await;
    add_judge(
        app,
        &admin,
        "add-judge",
        &scripted.base_url,
        json!({"templates": {"additive-5": template("score_line")}}),
    )
    .await;
    let run = start_run(app, &admin, &batch, "add-judge").await;
    wait_for(app, &admin, &run, "finished").await;
    let served = rebuilt_from_exports(app, &lead, &batch, "additive-5", "add-judge").await;
    assert!(served["rated"].as_u64() > Some(0), "{served}");
    assert!(
        served["fields"]["score"]["weighted_kappa"].is_number(),
        "{served}"
    );
    assert_eq!(
        (&served["unparsed"], &served["failed"]),
        (&json!(2), &json!(1))
    );
}

db_test!(additive_figures_are_rebuilt_from_the_exports: TestApp);

async fn the_judge_export_refuses_what_it_cannot_serve(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let batch = app
        .batch(
            &admin,
            "refuse",
            &jsonl([
                json!({"external_id": "=SUM(A1)", "prompt": "Task t1: sort a list.",
                           "response_a": response(1, false), "response_b": response(1, true)}),
            ]),
            "&rubric=pairwise-aspects&overlap=1&randomize=false",
        )
        .await;
    let scripted = ScriptedJudge::start(follows_position).await;
    add_judge(
        app,
        &admin,
        "refuser",
        &scripted.base_url,
        json!({"templates": {"pairwise-aspects": template("choices")}}),
    )
    .await;
    let run = start_run(app, &admin, &batch, "refuser").await;
    wait_for(app, &admin, &run, "finished").await;
    let response = lead
        .api
        .get(app.url(&format!("/api/v1/judge-runs/{run}/export?format=xlsx")))
        .go()
        .await;
    let body = json_with(response, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(
        body["fields"]["format"]
            .as_str()
            .unwrap()
            .contains("csv or jsonl"),
        "{body}"
    );
    let response = lead
        .api
        .get(app.url("/api/v1/judge-runs/not-a-run/export"))
        .go()
        .await;
    let body = json_with(response, StatusCode::BAD_REQUEST).await;
    assert!(body["error"].is_string(), "{body}");
    let response = lead
        .api
        .get(app.url(&format!("/api/v1/judge-runs/{}/export", uuid::Uuid::nil())))
        .go()
        .await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    // A lead of another batch only: not theirs to read.
    let other = app.persona("other-lead", Role::Lead).await;
    admin
        .api
        .patch(app.url(&format!("/api/v1/batches/{batch}")))
        .json(&json!({"leads": [lead.username]}))
        .go()
        .await;
    let response = other
        .api
        .get(app.url(&format!("/api/v1/judge-runs/{run}/export")))
        .go()
        .await;
    assert!(
        matches!(
            response.status(),
            StatusCode::NOT_FOUND | StatusCode::FORBIDDEN
        ),
        "{}",
        response.status()
    );
    // A cell a spreadsheet would run as a formula gets an apostrophe, as in the batch's
    // export; JSON Lines is no spreadsheet.
    let csv = get(app, &lead, &format!("/api/v1/judge-runs/{run}/export")).await;
    assert!(
        csv.starts_with("judge_run,judge,batch,external_id,"),
        "{csv}"
    );
    let rows = judge_rows_csv(&csv);
    assert!(rows.len() > 12, "{csv}");
    assert!(rows.iter().all(|r| r.task == "'=SUM(A1)"), "{csv}");
    let lines = get(
        app,
        &lead,
        &format!("/api/v1/judge-runs/{run}/export?format=jsonl"),
    )
    .await;
    let rows = judge_rows_jsonl(&lines);
    assert!(rows.iter().all(|r| r.task == "=SUM(A1)"), "{lines}");
}

db_test!(the_judge_export_refuses_what_it_cannot_serve: TestApp);
