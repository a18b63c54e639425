//! LLM judges on gold tasks: a run asks about them as about any task (a pair in both
//! orders), each judge is graded on its combined answer as a rater is, beside the raters
//! in the metrics and on the batch page, and an answer that cannot be read is "no
//! answer", never wrong. None of it moves a human figure, nor the judge's own figures
//! beside the raters.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{Go, Persona, TestApp, db_test, json_with, jsonl, page_text, pair_task};
use crate::judge_server::{Reply, ScriptedJudge, shown_first};
use crate::judges::{add_judge, calls, humans_prefer_good, start_run, wait_for};

/// What every gold task expects: the task's A more helpful, A or a tie on clarity.
fn expected() -> Value {
    json!({"helpfulness": "a", "clarity": {"any_of": ["a", "tie"]}})
}

/// The gold tasks, each with response A marked GOOD, and how the judge answers each.
const GOLD: [(&str, &str); 6] = [
    ("g1", "right: helpfulness A, clarity a tie"),
    ("g2", "right: helpfulness A, clarity A"),
    ("g3", "wrong on helpfulness: B"),
    ("g4", "wrong on clarity: B"),
    ("g5", "unreadable in one order"),
    ("g6", "inconsistent: always the response shown first"),
];

/// The batch: two ordinary tasks (GOOD on A, then on B) and the gold tasks.
fn batch_file() -> String {
    let ordinary = [
        ("p1", "GOOD: sum(xs)", "a loop that skips the last item"),
        ("p2", "a loop that skips the last item", "GOOD: sum(xs)"),
    ]
    .map(|(id, a, b)| {
        pair_task(
            id,
            &format!("Task {id}: sum a list."),
            [a, b],
            ["alpha", "beta"],
        )
    });
    let gold = GOLD.map(|(id, _)| {
        let mut task = pair_task(
            id,
            &format!("Task {id}: sum a list."),
            ["GOOD: sum(xs)", "a loop that skips the last item"],
            ["alpha", "beta"],
        );
        task["gold"] = expected();
        task
    });
    jsonl(ordinary.into_iter().chain(gold))
}

/// The task a prompt asks about.
fn task_of(prompt: &str) -> &'static str {
    ["p1", "p2"]
        .into_iter()
        .chain(GOLD.map(|(id, _)| id))
        .find(|id| prompt.contains(&format!("Task {id}:")))
        .expect("a known task")
}

/// The judge: on ordinary tasks it prefers the GOOD response; on gold tasks it answers
/// as [`GOLD`] says.
fn judge_script(body: &Value, _: usize) -> Reply {
    let prompt = body["messages"][0]["content"].as_str().unwrap_or("");
    let (good, bad) = if shown_first(prompt).contains("GOOD") {
        ("A", "B")
    } else {
        ("B", "A")
    };
    let task = task_of(prompt);
    let (help, clarity) = match task {
        "g2" => (good, good),
        "g3" => (bad, "tie"),
        "g4" => (good, bad),
        "g5" if good == "B" => return Reply::text("Both look fine to me; I cannot decide."),
        "g6" => ("A", "tie"),
        _ => (good, "tie"),
    };
    Reply::text(
        json!({"rationale": "Judged each aspect on its own merits.", "choices": {
            "helpfulness": help, "clarity": clarity, "factuality": "tie", "depth": "tie",
            "engagement": "tie", "safety": "tie"}})
        .to_string(),
    )
}

/// A Wilson 95% interval, worked out here: `(low, high)`.
fn wilson(k: f64, n: f64) -> (f64, f64) {
    let z = 1.959_963_984_540_054_f64;
    let p = k / n;
    let centre = (p + z * z / (2.0 * n)) / (1.0 + z * z / n);
    let half = z / (1.0 + z * z / n) * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt();
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

fn close(got: &Value, want: f64) -> bool {
    got.as_f64().is_some_and(|g| (g - want).abs() < 1e-9)
}

/// A share and its interval as the batch page writes them: `50% (15–85%)`.
fn shown(k: f64, n: f64) -> String {
    let (low, high) = wilson(k, n);
    format!(
        "{:.0}% ({:.0}–{:.0}%)",
        k / n * 100.0,
        low * 100.0,
        high * 100.0
    )
}

/// Every human figure a lead or a rater reads of the batch: the metrics (the judges
/// taken out), the progress each sees, the raters of each task, the pool's slots and
/// the review queue.
async fn human_figures(
    app: &TestApp,
    lead: &Persona,
    rater: &Persona,
    batch: &str,
    tasks: &[&str],
) -> Value {
    let mut metrics = app.metrics(lead, batch).await;
    if let Some(m) = metrics.as_object_mut() {
        m.remove("judges");
    }
    if let Some(gold) = metrics["gold"].as_object_mut() {
        gold.remove("judges");
    }
    let mut raters_of = serde_json::Map::new();
    for task in tasks {
        let side = lead
            .api
            .get(app.url(&format!("/api/v1/batches/{batch}/tasks/{task}")))
            .go()
            .await;
        let side = json_with(side, StatusCode::OK).await;
        raters_of.insert((*task).to_owned(), side["ratings"].clone());
    }
    let queue = lead
        .api
        .get(app.url(&format!("/api/v1/review?batch={batch}")))
        .go()
        .await;
    json!({
        "metrics": metrics,
        "lead": app.batch_view(lead, batch).await["progress"],
        "rater": {
            "progress": app.batch_view(rater, batch).await["progress"],
            "mine": app.batch_view(rater, batch).await["mine"],
        },
        "raters_of": raters_of,
        "claimed": app.count("SELECT CAST(COALESCE(SUM(claimed), 0) AS BIGINT) FROM tasks").await,
        "full": app.count("SELECT COUNT(*) FROM tasks WHERE is_full = TRUE").await,
        "queue": json_with(queue, StatusCode::OK).await,
    })
}

db_test!(a_judge_is_graded_on_gold_beside_the_raters_and_moves_no_human_figure: TestApp);
async fn a_judge_is_graded_on_gold_beside_the_raters_and_moves_no_human_figure(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let (ana, bo) = (
        app.persona("ana", verdict::auth::Role::Rater).await,
        app.persona("bo", verdict::auth::Role::Rater).await,
    );
    let batch = app
        .batch(
            &admin,
            "judge-gold",
            &batch_file(),
            "&rubric=pairwise-aspects&overlap=2",
        )
        .await;
    let set = lead
        .api
        .patch(app.url(&format!("/api/v1/batches/{batch}/gold")))
        .json(&json!({"gold_rate": 1.0}))
        .go()
        .await;
    assert_eq!(set.status(), StatusCode::OK);
    // Both raters rate all eight: the six gold tasks and the two others (overlap 2).
    for rater in [&ana, &bo] {
        assert_eq!(app.rate_all(rater, &batch, humans_prefer_good).await, 8);
    }
    let tasks: Vec<&str> = ["p1", "p2"]
        .into_iter()
        .chain(GOLD.map(|(id, _)| id))
        .collect();
    let before = human_figures(app, &lead, &ana, &batch, &tasks).await;
    assert_eq!(before["metrics"]["counts"]["ratings"], 4, "{before}");
    assert_eq!(before["metrics"]["gold"]["raters"][0]["graded"], 6);

    let scripted = ScriptedJudge::start(judge_script).await;
    add_judge(app, &admin, "scripted", &scripted.base_url, json!({})).await;
    let run = start_run(app, &admin, &batch, "scripted").await;
    let view = wait_for(app, &admin, &run, "finished").await;

    // The run asked about every task, gold too, in both orders.
    assert_eq!(
        (view["tasks"].as_i64(), view["calls"].as_i64()),
        (Some(8), Some(16)),
        "{view}"
    );
    let seen = scripted.seen();
    assert_eq!(seen.len(), 16);
    for task in &tasks {
        let orders: Vec<bool> = seen
            .iter()
            .map(|s| s.prompt())
            .filter(|p| task_of(p) == *task)
            .map(|p| shown_first(p).contains("GOOD"))
            .collect();
        assert_eq!(orders.len(), 2, "{task} asked twice");
        assert!(
            orders.contains(&true) && orders.contains(&false),
            "{task} asked in both orders"
        );
    }
    let stored = calls(app, &admin, &run, None).await;
    for (id, _) in GOLD {
        let of_task = stored.iter().filter(|c| c["external_id"] == id).count();
        assert_eq!(of_task, 2, "{id}: both calls stored");
    }
    assert_eq!(calls(app, &admin, &run, Some("unparsed")).await.len(), 1);

    // The judge's accuracy on gold: g1 and g2 right; g3 and g4 each one answer wrong;
    // g5 (unreadable) and g6 (inconsistent) no answer, not wrong.
    let metrics = app.metrics(&lead, &batch).await;
    let judged = &metrics["gold"]["judges"]["scripted"];
    assert_eq!(judged["asked"], 6, "{judged}");
    assert_eq!(
        (&judged["graded"], &judged["passed"]),
        (&json!(4), &json!(2))
    );
    assert_eq!(
        (&judged["no_answer"], &judged["pending"]),
        (&json!(2), &json!(0))
    );
    assert_eq!(
        (&judged["answers_right"], &judged["answers_expected"]),
        (&json!(6), &json!(8))
    );
    let (low, high) = wilson(2.0, 4.0);
    assert!(close(&judged["accuracy"]["value"], 0.5), "{judged}");
    assert!(close(&judged["accuracy"]["low"], low), "{judged}");
    assert!(close(&judged["accuracy"]["high"], high), "{judged}");
    for path in ["helpfulness", "clarity"] {
        let field = &judged["fields"][path];
        assert_eq!(
            (&field["graded"], &field["right"]),
            (&json!(4), &json!(3)),
            "{path}"
        );
        let (low, high) = wilson(3.0, 4.0);
        assert!(close(&field["accuracy"]["value"], 0.75), "{field}");
        assert!(close(&field["accuracy"]["low"], low) && close(&field["accuracy"]["high"], high));
    }
    assert_eq!(
        judged["fields"].as_object().map(|f| f.len()),
        Some(2),
        "only the expected answers"
    );
    // The API's description names the judges' gold figures.
    let doc = app.openapi().await;
    let schemas = &doc["components"]["schemas"];
    let gold = serde_json::to_string(&schemas["GoldMetrics"]).unwrap_or_default();
    assert!(gold.contains("#/components/schemas/JudgeGold"), "{gold}");
    for field in ["no_answer", "pending", "accuracy", "fields"] {
        assert!(
            schemas["JudgeGold"]["properties"].get(field).is_some(),
            "{field}: {}",
            schemas["JudgeGold"]
        );
    }
    // The raters' gold rows are as they were; the judge is not among them.
    assert_eq!(
        metrics["gold"]["raters"],
        before["metrics"]["gold"]["raters"]
    );

    // The judge's figures beside the raters are over the two ordinary tasks only.
    let beside = &metrics["judges"]["scripted"];
    assert_eq!(
        (&beside["tasks"], &beside["calls"], &beside["unparsed"]),
        (&json!(2), &json!(4), &json!(0)),
        "{beside}"
    );
    assert_eq!(beside["rated"], 2);
    assert_eq!(beside["fields"]["helpfulness"]["asked"], 2);
    assert_eq!(beside["fields"]["helpfulness"]["n"], 2);
    assert_eq!(beside["fields"]["helpfulness"]["agreement"], 1.0);

    // No human figure moved: counts, agreement, progress, exactly-k, the queue.
    let after = human_figures(app, &lead, &ana, &batch, &tasks).await;
    assert_eq!(after, before);
    assert_eq!(
        after["claimed"], 4,
        "two slots each of the two ordinary tasks"
    );
    // The judge's ratings of the gold tasks it answered in full are stored graded, as a
    // rater's are, and count in no metric.
    let rows = crate::judges::export_rows(app, &lead, &batch).await;
    let mut judge_gold: Vec<(&str, &Value, &Value)> = rows
        .iter()
        .filter(|r| r["rater_kind"] == "judge" && r["gold"] == true)
        .map(|r| {
            (
                r["external_id"].as_str().unwrap_or_default(),
                &r["gold_grade"],
                &r["counts_in_metrics"],
            )
        })
        .collect();
    judge_gold.sort_by_key(|(id, ..)| *id);
    let all_right = json!({"right": 2, "expected": 2, "wrong": []});
    assert_eq!(
        judge_gold,
        [
            ("g1", &all_right, &json!(false)),
            ("g2", &all_right, &json!(false)),
            (
                "g3",
                &json!({"right": 1, "expected": 2, "wrong": ["helpfulness"]}),
                &json!(false)
            ),
            (
                "g4",
                &json!({"right": 1, "expected": 2, "wrong": ["clarity"]}),
                &json!(false)
            ),
        ]
    );

    // The batch page: the judge's row in the raters' table, marked, with the same figures.
    let browser = lead.browser_for(app).await;
    let page = page_text(app, &browser, &format!("/batches/{batch}")).await;
    let row = page
        .split("<tr class=\"judge-gold\" id=\"gold-judge-scripted\">")
        .nth(1)
        .expect("the judge's gold row")
        .split("</tr>")
        .next()
        .unwrap();
    assert!(
        row.contains("scripted <span class=\"badge\">LLM judge</span>"),
        "{row}"
    );
    assert!(
        row.contains("<td class=\"num\">4</td><td class=\"num\">2</td>"),
        "{row}"
    );
    assert!(row.contains(&shown(2.0, 4.0)), "{row}");
    assert!(row.contains("6 of 8"), "{row}");
    assert!(row.contains("6 asked · 2 no answer"), "{row}");
    let table = page
        .split("<table class=\"list gold\">")
        .nth(1)
        .and_then(|t| t.split("</table>").next())
        .expect("the gold table");
    assert!(
        table.contains("<th scope=\"row\">ana</th>") && table.contains("gold-judge-scripted"),
        "raters and judge in one table"
    );
    for path in ["helpfulness", "clarity"] {
        let line = format!(
            "<tr><th scope=\"row\">scripted</th><td>{path}</td><td class=\"num\">4</td><td class=\"num\">3</td><td class=\"num\">{}</td></tr>",
            shown(3.0, 4.0)
        );
        assert!(page.contains(&line), "{path}: {line}");
    }
    assert!(
        page.contains("gold tasks apart: 2 of 4 graded all right, 2 no answer"),
        "the judges section points to it"
    );
}
