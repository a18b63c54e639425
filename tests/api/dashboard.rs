//! The batch page for leads: empty states, legends, the export form and the model
//! table, for every built-in rubric.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{
    Go, TestApp, complete_answers, db_test, json_with, jsonl, page_text, pair_task, single_task,
};

async fn page(app: &TestApp, browser: &reqwest::Client, batch: &str) -> String {
    page_text(app, browser, &format!("/batches/{batch}")).await
}

/// Every chart of a page, as its SVG text.
fn charts(html: &str) -> Vec<&str> {
    html.split("<svg class=\"chart\"")
        .skip(1)
        .map(|rest| &rest[..rest.find("</svg>").expect("svg end")])
        .collect()
}

/// One pairwise task (`t0`, `t1`, ...) for each pair of models, all with the same
/// responses.
fn pair_tasks(models: &[(&str, &str)]) -> String {
    jsonl(models.iter().enumerate().map(|(i, (a, b))| {
        let responses = ["```python\nprint(1)\n```", "Print one."];
        pair_task(&format!("t{i}"), &format!("Task {i}"), responses, [a, b])
    }))
}

/// `n` single-response tasks (`s0`, `s1`, ...) by model solo, all with the same response.
fn single_tasks(n: usize) -> String {
    jsonl((0..n).map(|i| {
        let response = "```python\nprint(1)\n```";
        single_task(&format!("s{i}"), &format!("Task {i}"), response, "solo")
    }))
}

/// The rubric, its tasks, and answers a rater may submit for any of them.
fn rubrics() -> [(&'static str, String, Value); 3] {
    [
        (
            "blackhat",
            pair_tasks(&[("alpha", "beta"), ("beta", "alpha")]),
            complete_answers(),
        ),
        (
            "additive-5",
            single_tasks(2),
            json!({"relevant": true, "substantial": true, "useful": false,
                   "comprehensive": false, "expert": false, "repetitive": false,
                   "justification": "Relevant and substantial, no more."}),
        ),
        (
            "pairwise-aspects",
            pair_tasks(&[("alpha", "beta"), ("beta", "alpha")]),
            json!({"helpfulness": "a", "clarity": "b", "factuality": "tie", "depth": "a",
                   "engagement": "tie", "safety": "b",
                   "rationale": "A runs; B is easier to read."}),
        ),
    ]
}

async fn an_unrated_batch_shows_empty_states_and_a_rated_one_charts_with_legends(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;
    let browser = lead.browser_for(app).await;
    for (rubric, tasks, answers) in rubrics() {
        let query = if rubric == "additive-5" {
            format!("&rubric={rubric}")
        } else {
            format!("&rubric={rubric}&randomize=false")
        };
        let batch = app.batch(&admin, rubric, &tasks, &query).await;
        let html = page(app, &browser, &batch).await;
        assert!(
            charts(&html).is_empty(),
            "{rubric}: no empty charts before any rating"
        );
        for empty in [
            "No counted ratings yet: the figures below fill in once raters submit ratings.",
            "No ratings yet.",
            "No agreement to show yet",
        ] {
            assert!(html.contains(empty), "{rubric}: {empty}");
        }
        if rubric != "additive-5" {
            assert!(
                html.contains("No counted ratings of tasks that name their two models yet."),
                "{rubric}"
            );
        }

        assert_eq!(
            app.rate_all(&rater, &batch, |_| answers.clone()).await,
            2,
            "{rubric}"
        );
        let html = page(app, &browser, &batch).await;
        let drawn = charts(&html);
        assert!(!drawn.is_empty(), "{rubric}: charts once rated");
        for svg in &drawn {
            // A name for the chart, and a legend of marks with words.
            assert!(
                svg.contains("role=\"img\" aria-label=\""),
                "{rubric}: {svg}"
            );
            assert!(svg.contains("class=\"legend-key\""), "{rubric}: {svg}");
        }
        assert!(
            html.contains("<summary>The numbers</summary>"),
            "{rubric}: the charts' numbers as a table"
        );
        assert!(!html.contains("No counted ratings yet"), "{rubric}");
    }
}
db_test!(an_unrated_batch_shows_empty_states_and_a_rated_one_charts_with_legends: TestApp);

async fn the_answers_chart_speaks_the_forms_words_in_ordered_colours(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;
    let batch = app
        .batch(
            &admin,
            "colours",
            &pair_tasks(&[("alpha", "beta")]),
            "&randomize=false",
        )
        .await;
    app.rate_all(&rater, &batch, |_| complete_answers()).await;
    let html = page(app, &lead.browser_for(app).await, &batch).await;
    let answers = charts(&html)
        .into_iter()
        .find(|svg| svg.contains("Answers per question"))
        .expect("the answers chart");
    // Questions and options as the form words them, never as stored.
    for words in [
        ">Correctness (A)</text>",
        ">Instruction following (B)</text>",
    ] {
        assert!(answers.contains(words), "{words}: {answers}");
    }
    assert!(
        !answers.contains("no_issues") && !answers.contains("a.correctness"),
        "{answers}"
    );
    // "No issues" heads an ordered scale: the same darkest colour on every row that asks
    // it, in its segments and in each row's key.
    let colour_of = |piece: &str| -> Option<String> {
        Some(piece.split("fill=\"").nth(1)?.split('"').next()?.to_owned())
    };
    let segments: std::collections::BTreeSet<String> = answers
        .split("<rect ")
        .filter(|r| r.contains("><title>No issues:"))
        .filter_map(colour_of)
        .collect();
    let keys: std::collections::BTreeSet<String> = answers
        .split("<g class=\"legend-key\">")
        .filter(|k| k.contains(">No issues "))
        .filter_map(colour_of)
        .collect();
    assert_eq!(segments.len(), 1, "{answers}");
    assert_eq!(segments, keys);
    // Darker than the minor and major issues after it (a ramp from dark to light).
    let luminance = |hex: &str| -> u32 {
        (1..7)
            .step_by(2)
            .map(|i| u32::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .sum()
    };
    let of = |label: &str| -> String {
        answers
            .split("<g class=\"legend-key\">")
            .find(|k| k.contains(&format!(">{label} ")))
            .and_then(colour_of)
            .unwrap_or_else(|| panic!("{label} in a key: {answers}"))
    };
    let (none, minor, major) = (of("No issues"), of("Minor issue(s)"), of("Major issue(s)"));
    let none = segments.into_iter().next().unwrap_or(none);
    assert!(
        luminance(&none) < luminance(&minor) && luminance(&minor) < luminance(&major),
        "{none} {minor} {major}"
    );
    // The summary table above the charts names the answer given most, in words.
    assert!(html.contains("id=\"summary\""), "{html}");
    let summary = &html[html.find("id=\"summary\"").unwrap()..];
    let summary = &summary[..summary.find("</table>").unwrap()];
    assert!(summary.contains("<td>Correctness (A)</td>"), "{summary}");
    assert!(summary.contains("No issues (100%)"), "{summary}");
}
db_test!(the_answers_chart_speaks_the_forms_words_in_ordered_colours: TestApp);

async fn the_model_table_has_one_row_per_unordered_pair(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;
    // alpha is A in one task and B in the other; the rater prefers A both times, so
    // each model wins once.
    let batch = app
        .batch(
            &admin,
            "models",
            &pair_tasks(&[("alpha", "beta"), ("beta", "alpha")]),
            "&randomize=false",
        )
        .await;
    app.rate_all(&rater, &batch, |_| complete_answers()).await;
    let metrics = app.metrics(&lead, &batch).await;
    let pairs = metrics["models"]["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 1, "{pairs:?}");
    let p = &pairs[0];
    assert_eq!(
        (&p["model_a"], &p["model_b"], &p["n"]),
        (&json!("alpha"), &json!("beta"), &json!(2))
    );
    assert_eq!(
        (&p["a_wins"], &p["ties"], &p["b_wins"]),
        (&json!(1), &json!(0), &json!(1))
    );
    let html = page(app, &lead.browser_for(app).await, &batch).await;
    assert_eq!(
        html.matches("<th scope=\"row\">alpha vs beta</th>").count(),
        1
    );
    assert!(!html.contains("beta vs alpha"));
    assert!(
        html.contains("alpha: 1") && html.contains("beta: 1"),
        "wins each way"
    );
}
db_test!(the_model_table_has_one_row_per_unordered_pair: TestApp);

async fn the_export_form_downloads_what_its_filters_keep(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;
    let other = app.persona("other", verdict::auth::Role::Rater).await;
    let batch = app
        .batch(
            &admin,
            "filtered",
            &pair_tasks(&[("alpha", "beta"), ("beta", "alpha"), ("alpha", "gamma")]),
            "&randomize=false&overlap=2",
        )
        .await;
    app.rate_all(&rater, &batch, |_| complete_answers()).await;
    // The other rater rates one task and skips another.
    let next = app.next(&other, &batch).await.unwrap();
    let id = next["assignment_id"].as_str().unwrap();
    json_with(
        app.act(&other, id, "submit", &complete_answers()).await,
        StatusCode::OK,
    )
    .await;
    let next = app.next(&other, &batch).await.unwrap();
    let id = next["assignment_id"].as_str().unwrap();
    let skip = app
        .act(&other, id, "skip", &json!({"reason": "unfamiliar"}))
        .await;
    assert_eq!(skip.status(), StatusCode::OK);

    let browser = lead.browser_for(app).await;
    let html = page(app, &browser, &batch).await;
    for option in [
        "<option value=\"rater\">rater</option>",
        "<option value=\"other\">other</option>",
        "<option value=\"out_of_scope\">out of scope</option>",
        "<option value=\"accepted\">accepted</option>",
    ] {
        assert!(html.contains(option), "{option}");
    }
    assert!(html.contains("<input type=\"date\" name=\"since\""));

    let today = chrono::Utc::now().date_naive();
    let form = |outcome: &str, rater: &str, since: String, until: String, format: &str| {
        format!(
            "/batches/{batch}/export?outcome={outcome}&status=&rater={rater}&since={since}&until={until}&format={format}"
        )
    };
    let go = browser
        .get(app.url(&form(
            "rated",
            "other",
            today.to_string(),
            today.to_string(),
            "jsonl",
        )))
        .go()
        .await;
    assert_eq!(go.status(), StatusCode::SEE_OTHER);
    let to = go.headers()["location"].to_str().unwrap().to_owned();
    // The "to" day is included whole: the export asks for before the next day.
    let tomorrow = today.succ_opt().unwrap();
    assert_eq!(
        to,
        format!(
            "/api/v1/batches/{batch}/export?format=jsonl&outcome=rated&rater=other&since={today}&until={tomorrow}"
        )
    );
    let download = browser.get(app.url(&to)).go().await;
    assert_eq!(download.status(), StatusCode::OK);
    let rows: Vec<Value> = download
        .text()
        .await
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(
        (&rows[0]["rater"], &rows[0]["outcome"]),
        (&json!("other"), &json!("rated"))
    );

    // Every rater, every outcome: all five finished ratings (the skip too), as CSV.
    let all = browser
        .get(app.url(&form("", "", String::new(), String::new(), "csv")))
        .go()
        .await;
    let to = all.headers()["location"].to_str().unwrap().to_owned();
    assert_eq!(to, format!("/api/v1/batches/{batch}/export?format=csv"));
    let csv = browser.get(app.url(&to)).go().await.text().await.unwrap();
    assert_eq!(csv.lines().count(), 1 + 5, "{csv}");
    // Ticking "only ratings that count": the skip is left out.
    assert!(html.contains("name=\"counted\" value=\"true\""), "{html}");
    let counted = browser
        .get(app.url(&format!(
            "{}&counted=true",
            form("", "", String::new(), String::new(), "csv")
        )))
        .go()
        .await;
    let to = counted.headers()["location"].to_str().unwrap().to_owned();
    assert_eq!(
        to,
        format!("/api/v1/batches/{batch}/export?format=csv&counted=true")
    );
    let csv = browser.get(app.url(&to)).go().await.text().await.unwrap();
    assert_eq!(csv.lines().count(), 1 + 4, "{csv}");

    // Bad filters: each named, nothing downloaded.
    let yesterday = today.pred_opt().unwrap();
    let bad = browser
        .get(app.url(&form(
            "maybe",
            "ghost",
            "last week".into(),
            yesterday.to_string(),
            "xml",
        )))
        .go()
        .await;
    assert_eq!(bad.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let html = bad.text().await.unwrap();
    assert!(
        html.contains("Nothing was exported: 4 filters need changing."),
        "{html}"
    );
    for named in [
        "Outcome: unknown outcome &#34;maybe&#34;",
        "Rater: &#34;ghost&#34; is not one of this batch&#39;s raters",
        "Submitted from: must be a date like 2026-11-21",
        "Format: unknown format &#34;xml&#34;",
    ] {
        assert!(html.contains(named), "{named}: {html}");
    }
    let backwards = browser
        .get(app.url(&form(
            "",
            "",
            today.to_string(),
            yesterday.to_string(),
            "csv",
        )))
        .go()
        .await;
    assert_eq!(backwards.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        backwards
            .text()
            .await
            .unwrap()
            .contains("Submitted to: must be on or after the from date")
    );
}
db_test!(the_export_form_downloads_what_its_filters_keep: TestApp);
