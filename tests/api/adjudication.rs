//! Issue 51, adjudication: a lead records a task's final answer, checked as a rating is;
//! the final dataset gives one row per task (adjudicated, else the batch's method over
//! the ratings that count, else none) on the API, the command line and the page; each
//! rater's agreement with the final answers is measured.

use reqwest::StatusCode;
use serde_json::{Value, json};
use verdict::auth::Role;

use crate::helpers::{
    Go, PASSWORD, Persona, TestApp, assignment_id, complete_answers, csrf_token, db_test,
    json_with, page_text, tasks_jsonl,
};

/// Rates the rater's next task with `answers`, confirming any consistency warning they
/// meet; the rating's id.
async fn rate(app: &TestApp, rater: &Persona, batch: &str, answers: &Value) -> String {
    let next = app.next(rater, batch).await.expect("a task");
    let id = assignment_id(&next);
    let mut body = answers.clone();
    let done = app.act(rater, &id, "submit", &body).await;
    let done = if done.status() == StatusCode::CONFLICT {
        let refused = json_with(done, StatusCode::CONFLICT).await;
        let ids: Vec<Value> = refused["warnings"]
            .as_array()
            .expect("warnings")
            .iter()
            .map(|w| w["id"].clone())
            .collect();
        body["confirmed_warnings"] = json!(ids);
        app.act(rater, &id, "submit", &body).await
    } else {
        done
    };
    json_with(done, StatusCode::OK).await["rating_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The answers alone, as a final answer takes them.
fn answers_with_sxs(sxs: i64) -> Value {
    let mut answers = complete_answers();
    let map = answers.as_object_mut().unwrap();
    map.remove("time_spent_s");
    map.insert("sxs".into(), json!(sxs));
    answers
}

fn lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

async fn a_lead_decides_a_final_answer_and_the_dataset_comes_out_whole(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let ana = app.persona("ana", Role::Rater).await;
    let bo = app.persona("bo", Role::Rater).await;
    let query = "&overlap=2&randomize=false&raters_see_external_ids=true";
    let batch = app.batch(&admin, "decided", &tasks_jsonl(3), query).await;
    // t1: ana says A (2), bo says B (6): a tie. t2: both say 2.
    let ana_t1 = rate(app, &ana, &batch, &answers_with_sxs(2)).await;
    rate(app, &bo, &batch, &answers_with_sxs(6)).await;
    rate(app, &ana, &batch, &answers_with_sxs(2)).await;
    let bo_t2 = rate(app, &bo, &batch, &answers_with_sxs(2)).await;
    let final_path = |id: &str| format!("/api/v1/batches/{batch}/tasks/{id}/final");
    let export = |format: &'static str| {
        let lead = &lead;
        let path = format!("/api/v1/batches/{batch}/export?final=true&format={format}");
        async move {
            let got = lead.api.get(app.url(&path)).go().await;
            assert_eq!(got.status(), StatusCode::OK);
            got.text().await.unwrap()
        }
    };

    // Before any decision: t1 tied on sxs, t2 by majority, t3 has nothing.
    let rows = lines(&export("jsonl").await);
    assert_eq!(rows.len(), 3);
    assert_eq!(
        (&rows[0]["external_id"], &rows[0]["source"]),
        (&json!("t1"), &json!("majority"))
    );
    assert_eq!(rows[0]["answers"]["sxs"], Value::Null);
    assert_eq!(rows[0]["tied"], json!(["sxs"]));
    assert_eq!(rows[1]["answers"]["sxs"], 2);
    assert_eq!(rows[1]["answers"]["a"]["correctness"], "no_issues");
    assert_eq!(
        (&rows[2]["source"], &rows[2]["answers"]),
        (&json!("none"), &json!({}))
    );
    let none = lead.api.get(app.url(&final_path("t1"))).go().await;
    assert_eq!(none.status(), StatusCode::NOT_FOUND);

    // Bad decisions are refused by name, and store nothing.
    let mut incomplete = answers_with_sxs(2);
    incomplete
        .as_object_mut()
        .unwrap()
        .remove("sxs_explanation");
    for (body, field) in [
        (json!({"answers": incomplete}), "answers.sxs_explanation"),
        (json!({"answers": [1, 2]}), "answers"),
        (
            json!({"answers": answers_with_sxs(2), "from_rating": bo_t2}),
            "from_rating",
        ),
        (
            json!({"answers": answers_with_sxs(2), "note": "x".repeat(4001)}),
            "note",
        ),
    ] {
        let got = lead
            .api
            .put(app.url(&final_path("t1")))
            .json(&body)
            .go()
            .await;
        let got = json_with(got, StatusCode::UNPROCESSABLE_ENTITY).await;
        assert!(got["fields"].get(field).is_some(), "{field}: {got}");
    }
    let unknown = lead
        .api
        .put(app.url(&final_path("t1")))
        .json(&json!({"answers": answers_with_sxs(2), "verdict": "A"}))
        .go()
        .await;
    assert_eq!(unknown.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let rater_may_not = ana
        .api
        .put(app.url(&final_path("t1")))
        .json(&json!({"answers": answers_with_sxs(2)}))
        .go()
        .await;
    assert_eq!(rater_may_not.status(), StatusCode::FORBIDDEN);
    let none = lead.api.get(app.url(&final_path("t1"))).go().await;
    assert_eq!(none.status(), StatusCode::NOT_FOUND);

    // Decided: A, from ana's rating.
    let decided = json_with(
        lead.api
            .put(app.url(&final_path("t1")))
            .json(
                &json!({"answers": answers_with_sxs(2), "from_rating": ana_t1,
                          "note": "B's expression is not the function asked for."}),
            )
            .go()
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(
        (&decided["by"], &decided["from_rating"]),
        (&json!("lead"), &json!(ana_t1))
    );
    let read = json_with(
        lead.api.get(app.url(&final_path("t1"))).go().await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(read["answers"]["sxs"], 2);
    let rows = lines(&export("jsonl").await);
    assert_eq!(
        (&rows[0]["source"], &rows[0]["answers"]["sxs"]),
        (&json!("adjudicated"), &json!(2))
    );
    assert_eq!(
        rows[0]["answers"]["sxs_explanation"],
        "A delivers the function that was asked for; B does not."
    );
    let csv = export("csv").await;
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_owned)
        .collect();
    assert_eq!(&header[..2], ["external_id", "source"]);
    assert_eq!(&header[header.len() - 2..], ["tied", "answers"]);
    let sxs = header
        .iter()
        .position(|h| h == "sxs")
        .expect("an sxs column");
    let first: Vec<String> = reader
        .records()
        .next()
        .unwrap()
        .unwrap()
        .iter()
        .map(str::to_owned)
        .collect();
    assert_eq!(
        (first[1].as_str(), first[sxs].as_str()),
        ("adjudicated", "2")
    );

    // Each rater against the final answers: ana agreed on sxs, bo did not.
    let metrics = json_with(
        lead.api
            .get(app.url(&format!("/api/v1/batches/{batch}/metrics")))
            .go()
            .await,
        StatusCode::OK,
    )
    .await;
    let vs = |who: &str| {
        metrics["raters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["rater"] == who)
            .unwrap()["vs_final"]["sxs"]
            .clone()
    };
    assert_eq!(vs("ana"), json!({"tasks": 1, "agreed": 1, "share": 1.0}));
    assert_eq!(vs("bo"), json!({"tasks": 1, "agreed": 0, "share": 0.0}));

    // The batch's method answers the rest: Dawid-Skene once set.
    let set = admin
        .api
        .patch(app.url(&format!("/api/v1/batches/{batch}")))
        .json(&json!({"final_method": "dawid_skene"}))
        .go()
        .await;
    assert_eq!(
        json_with(set, StatusCode::OK).await["final_method"],
        "dawid_skene"
    );
    let bad = admin
        .api
        .patch(app.url(&format!("/api/v1/batches/{batch}")))
        .json(&json!({"final_method": "vibes"}))
        .go()
        .await;
    let bad = json_with(bad, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(bad["fields"].get("final_method").is_some(), "{bad}");
    let rows = lines(&export("jsonl").await);
    assert_eq!(
        (&rows[0]["source"], &rows[1]["source"]),
        (&json!("adjudicated"), &json!("dawid_skene"))
    );
    // The command line writes the same dataset.
    let cli = crate::cli::verdict(
        &app.db,
        &[
            "export", "--batch", "decided", "--final", "--format", "jsonl",
        ],
        None,
    );
    assert!(cli.status.success(), "{cli:?}");
    assert_eq!(lines(&String::from_utf8_lossy(&cli.stdout)), rows);
    // Not combined with the other exports' filters.
    let mixed = lead
        .api
        .get(app.url(&format!(
            "/api/v1/batches/{batch}/export?final=true&aggregate=majority&rater=ana"
        )))
        .go()
        .await;
    let mixed = json_with(mixed, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(mixed["fields"].get("aggregate").is_some() && mixed["fields"].get("rater").is_some());

    // Withdrawn: the aggregate again.
    let removed = lead.api.delete(app.url(&final_path("t1"))).go().await;
    assert_eq!(removed.status(), StatusCode::NO_CONTENT);
    let again = lead.api.delete(app.url(&final_path("t1"))).go().await;
    assert_eq!(again.status(), StatusCode::NOT_FOUND);
    let rows = lines(&export("jsonl").await);
    assert_eq!(rows[0]["source"], "dawid_skene");

    // On the page: start from a rater's rating, a broken answer is refused in view, a
    // sound one saved.
    let browser = app.login("lead", PASSWORD).await;
    let path = format!("/batches/{batch}/tasks/t1/final");
    let page = page_text(app, &browser, &format!("{path}?from={ana_t1}")).await;
    assert!(
        page.contains("Starting from ana&#39;s rating")
            || page.contains("Starting from ana's rating"),
        "{page}"
    );
    assert!(
        page.contains("&#34;sxs&#34;: 2") || page.contains("\"sxs\": 2"),
        "{page}"
    );
    let token = csrf_token(&page);
    let broken = browser
        .post(app.url(&path))
        .form(&[
            ("csrf_token", token.as_str()),
            ("answers", "{\"sxs\": "),
            ("note", ""),
        ])
        .go()
        .await;
    assert_eq!(broken.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let said = broken.text().await.unwrap();
    assert!(
        said.contains("id=\"final-errors\"") && said.contains("is not JSON"),
        "{said}"
    );
    let answers = serde_json::to_string(&answers_with_sxs(3)).unwrap();
    let saved = browser
        .post(app.url(&path))
        .form(&[
            ("csrf_token", token.as_str()),
            ("answers", answers.as_str()),
            ("note", "Slightly better."),
            ("from_rating", ana_t1.as_str()),
        ])
        .go()
        .await;
    assert_eq!(saved.status(), StatusCode::SEE_OTHER);
    let read = json_with(
        lead.api.get(app.url(&final_path("t1"))).go().await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(
        (&read["answers"]["sxs"], &read["note"]),
        (&json!(3), &json!("Slightly better."))
    );
    // A task nobody rated starts from every question the rubric asks, to fill in.
    let blank = page_text(app, &browser, &format!("/batches/{batch}/tasks/t3/final")).await;
    assert!(
        blank.contains("&#34;sxs_explanation&#34;: null")
            || blank.contains("\"sxs_explanation\": null"),
        "{blank}"
    );
    // Reached from the task's side-by-side view and the disagreement list.
    let side = page_text(app, &browser, &format!("/batches/{batch}/tasks/t1")).await;
    assert!(
        side.contains(&format!("/batches/{batch}/tasks/t1/final")),
        "{side}"
    );
    let list = page_text(app, &browser, &format!("/batches/{batch}/disagreements")).await;
    assert!(
        list.contains(&format!("/batches/{batch}/tasks/t1/final")),
        "{list}"
    );

    let got = admin.api.get(app.url("/api/v1/audit")).go().await;
    let audit = json_with(got, StatusCode::OK).await.to_string();
    assert!(
        audit.contains("task.final") && audit.contains("task.final_removed"),
        "{audit}"
    );
}
db_test!(a_lead_decides_a_final_answer_and_the_dataset_comes_out_whole: TestApp);
