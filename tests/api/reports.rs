//! The leads' reports (issue 31): the team's hours (`GET /api/v1/reports/hours`, JSON
//! and CSV) against figures worked out here from the ratings the test made, per day and
//! per ISO week, with date filters; the work-quality flags (`GET /api/v1/reports/flags`)
//! firing on raters built to trip them and on no one else; bad parameters, raters and
//! batches a lead may not see refused.

use std::collections::BTreeMap;

use reqwest::StatusCode;
use serde_json::{Value, json};
use verdict::auth::Role;

use crate::helpers::{Go, PASSWORD, Persona, TestApp, db_test, json_with, page_text};

const ASPECTS: [&str; 6] = [
    "helpfulness",
    "clarity",
    "factuality",
    "depth",
    "engagement",
    "safety",
];

/// `n` tasks of the pairwise-aspects rubric, `t1`..`tn`.
fn tasks(n: usize) -> String {
    (1..=n)
        .map(|i| {
            json!({"external_id": format!("t{i}"), "prompt": format!("Task {i}: sum a list."),
                   "response_a": format!("sum(xs) # {i}"), "response_b": format!("reduce(add, xs) # {i}"),
                   "model_a": "alpha", "model_b": "beta"})
            .to_string()
                + "\n"
        })
        .collect()
}

/// A rationale sharing no run of three words with any other (`id` tells them apart).
fn distinct(id: usize) -> String {
    format!("Rationale r{id} compared x{id} against y{id} and z{id}.")
}

/// Answers varying every aspect across tasks (`n` the task's number), with a rationale
/// and an active time.
fn varied(n: usize, rationale: &str, time: i64) -> Value {
    let mut answers = json!({"rationale": rationale, "time_spent_s": time});
    for (k, aspect) in ASPECTS.iter().enumerate() {
        answers[aspect] = json!(["a", "tie", "b"][(n + k) % 3]);
    }
    answers
}

/// Takes `rater`'s next task of `batch` and submits what `answers` makes of the task's
/// number; returns the rating's id, or `None` when nothing is left.
async fn rate_next(
    app: &TestApp,
    rater: &Persona,
    batch: &str,
    answers: impl Fn(usize) -> Value,
) -> Option<String> {
    let next = app.next(rater, batch).await?;
    let external = next["task"]["external_id"].as_str().expect("external id");
    let n: usize = external[1..].parse().expect("a task number");
    let id = next["assignment_id"].as_str().expect("assignment");
    let done = app.act(rater, id, "submit", &answers(n)).await;
    let done = json_with(done, StatusCode::OK).await;
    Some(done["rating_id"].as_str().expect("rating id").to_owned())
}

/// Another of `rater`'s tasks given back or marked with `action` and `body`.
async fn finish_next(app: &TestApp, rater: &Persona, batch: &str, action: &str, body: Value) {
    let next = app.next(rater, batch).await.expect("a task");
    let id = next["assignment_id"].as_str().expect("assignment");
    json_with(app.act(rater, id, action, &body).await, StatusCode::OK).await;
}

/// Dates the rating whose active time is `time` (each is unique in a test).
async fn submitted(app: &TestApp, time: i64, at: &str) {
    app.execute(&format!(
        "UPDATE ratings SET submitted_at = '{at}' WHERE time_spent_s = {time}"
    ))
    .await;
}

async fn get(app: &TestApp, who: &Persona, path: &str) -> reqwest::Response {
    who.api.get(app.url(path)).go().await
}

/// One finished rating as the test made it: rater, outcome, active time, the day and
/// ISO week it was submitted, and a skip's reason.
struct Made {
    rater: &'static str,
    outcome: &'static str,
    time: i64,
    day: &'static str,
    week: &'static str,
    reason: Option<&'static str>,
}

/// The rows the report should hold for `made`, keyed by rater and period, worked out
/// here: counts per outcome, the sum of the times, the median of the rated ones.
fn expected(made: &[&Made], by_week: bool) -> BTreeMap<(String, String), Value> {
    let mut groups: BTreeMap<(String, String), Vec<&Made>> = BTreeMap::new();
    for m in made {
        let period = if by_week { m.week } else { m.day };
        groups
            .entry((m.rater.to_owned(), period.to_owned()))
            .or_default()
            .push(m);
    }
    groups
        .into_iter()
        .map(|(key, ms)| {
            let count = |o: &str| ms.iter().filter(|m| m.outcome == o).count();
            let mut times: Vec<i64> = ms
                .iter()
                .filter(|m| m.outcome == "rated")
                .map(|m| m.time)
                .collect();
            times.sort_unstable();
            let median = match times.len() {
                0 => Value::Null,
                n if n % 2 == 1 => json!(times[n / 2] as f64),
                n => json!((times[n / 2 - 1] + times[n / 2]) as f64 / 2.0),
            };
            let mut reasons = serde_json::Map::new();
            for m in &ms {
                if let Some(r) = m.reason {
                    let n = reasons.get(r).and_then(Value::as_u64).unwrap_or(0);
                    reasons.insert(r.to_owned(), json!(n + 1));
                }
            }
            let row = json!({
                "ratings": ms.len(), "rated": count("rated"), "gold": 0,
                "skipped": count("skipped"), "skip_reasons": reasons,
                "out_of_scope": count("out_of_scope"),
                "active_s": ms.iter().map(|m| m.time).sum::<i64>(),
                "median_s": median,
            });
            (key, row)
        })
        .collect()
}

/// The report's rows keyed like [`expected`], without the keys compared by key.
fn keyed(report: &Value) -> BTreeMap<(String, String), Value> {
    report["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|row| {
            let key = (
                row["rater"].as_str().unwrap().to_owned(),
                row["period"].as_str().unwrap().to_owned(),
            );
            let mut row = row.clone();
            let object = row.as_object_mut().unwrap();
            for k in ["rater", "period", "period_start"] {
                object.remove(k);
            }
            (key, row)
        })
        .collect()
}

async fn hours_add_up_from_the_ratings_made(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let ana = app.persona("ana", Role::Rater).await;
    let bo = app.persona("bo", Role::Rater).await;
    let batch = app
        .batch(
            &admin,
            "hours",
            &tasks(10),
            "&rubric=pairwise-aspects&randomize=false&raters_see_external_ids=true",
        )
        .await;
    // 2026-11-02 is a Monday: ISO week 45 runs to Sunday the 8th.
    let made = [
        Made {
            rater: "ana",
            outcome: "rated",
            time: 61,
            day: "2026-11-02",
            week: "2026-W45",
            reason: None,
        },
        Made {
            rater: "ana",
            outcome: "rated",
            time: 62,
            day: "2026-11-02",
            week: "2026-W45",
            reason: None,
        },
        Made {
            rater: "ana",
            outcome: "rated",
            time: 200,
            day: "2026-11-04",
            week: "2026-W45",
            reason: None,
        },
        Made {
            rater: "ana",
            outcome: "skipped",
            time: 11,
            day: "2026-11-04",
            week: "2026-W45",
            reason: Some("too_long"),
        },
        Made {
            rater: "ana",
            outcome: "out_of_scope",
            time: 12,
            day: "2026-11-10",
            week: "2026-W46",
            reason: None,
        },
        Made {
            rater: "bo",
            outcome: "rated",
            time: 300,
            day: "2026-11-03",
            week: "2026-W45",
            reason: None,
        },
        Made {
            rater: "bo",
            outcome: "rated",
            time: 301,
            day: "2026-11-09",
            week: "2026-W46",
            reason: None,
        },
        Made {
            rater: "bo",
            outcome: "skipped",
            time: 13,
            day: "2026-11-08",
            week: "2026-W45",
            reason: Some("unfamiliar"),
        },
    ];
    let at = ["T09:00:00+00:00", "T23:30:00+00:00"];
    for (i, m) in made.iter().enumerate() {
        let who = if m.rater == "ana" { &ana } else { &bo };
        match m.outcome {
            "rated" => {
                let n = i + 1;
                rate_next(app, who, &batch, |task| varied(task, &distinct(n), m.time))
                    .await
                    .expect("a task");
            }
            "skipped" => {
                let body = json!({"reason": m.reason, "time_spent_s": m.time});
                finish_next(app, who, &batch, "skip", body).await;
            }
            _ => {
                let body = json!({"explanation": "This prompt asks for a poem, not code.",
                                  "time_spent_s": m.time});
                finish_next(app, who, &batch, "out-of-scope", body).await;
            }
        }
        submitted(app, m.time, &format!("{}{}", m.day, at[i % 2])).await;
    }
    // A draft is no work finished: never counted.
    let next = app.next(&bo, &batch).await.expect("a task");
    let draft = json!({"helpfulness": "a", "time_spent_s": 5000});
    let saved = app
        .act(
            &bo,
            next["assignment_id"].as_str().unwrap(),
            "draft",
            &draft,
        )
        .await;
    assert_eq!(saved.status(), StatusCode::OK);

    let all: Vec<&Made> = made.iter().collect();
    let by_day = json_with(
        get(app, &lead, &format!("/api/v1/reports/hours?batch={batch}")).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(by_day["by"], "day");
    assert_eq!(keyed(&by_day), expected(&all, false), "{by_day}");
    // Every batch the lead may see: the same here.
    let everywhere = json_with(
        get(app, &lead, "/api/v1/reports/hours").await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(keyed(&everywhere), expected(&all, false));

    let by_week = json_with(
        get(app, &lead, "/api/v1/reports/hours?by=week").await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(keyed(&by_week), expected(&all, true), "{by_week}");
    let ana_45 = &by_week["rows"][0];
    assert_eq!(
        (&ana_45["period"], &ana_45["period_start"]),
        (&json!("2026-W45"), &json!("2026-11-02"))
    );
    assert_eq!(by_week["rows"][1]["period_start"], "2026-11-09");

    // Dates take their whole day: the 3rd to the 4th is two days.
    let window: Vec<&Made> = made
        .iter()
        .filter(|m| ("2026-11-03"..="2026-11-04").contains(&m.day))
        .collect();
    let dated = json_with(
        get(
            app,
            &lead,
            "/api/v1/reports/hours?from=2026-11-03&to=2026-11-04",
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(keyed(&dated), expected(&window, false), "{dated}");
    assert_eq!(dated["to"], "2026-11-05T00:00:00Z");
    // A time is taken as it is: up to 10:00 on the 2nd holds ana's 09:00 rating only.
    let timed = json_with(
        get(app, &lead, "/api/v1/reports/hours?to=2026-11-02T10:00:00Z").await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(keyed(&timed), expected(&all[..1], false), "{timed}");

    // The CSV: the same figures, one line per rater and period, in a fixed order.
    let download = get(app, &lead, "/api/v1/reports/hours?by=week&format=csv").await;
    assert_eq!(download.status(), StatusCode::OK);
    assert!(
        download.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/csv")
    );
    assert!(
        download.headers()["content-disposition"]
            .to_str()
            .unwrap()
            .contains(".csv")
    );
    let text = download.text().await.unwrap();
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(
        header,
        [
            "rater",
            "period",
            "period_start",
            "ratings",
            "rated",
            "gold",
            "skipped",
            "skip_reasons",
            "out_of_scope",
            "active_s",
            "active_hours",
            "median_s"
        ]
    );
    let lines: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let want = expected(&all, true);
    assert_eq!(lines.len(), want.len());
    for (line, ((rater, period), row)) in lines.iter().zip(&want) {
        assert_eq!((&line[0], &line[1]), (rater.as_str(), period.as_str()));
        assert_eq!(line[9], row["active_s"].to_string());
        assert_eq!(line[4], row["rated"].to_string());
        let hours = row["active_s"].as_f64().unwrap() / 3600.0;
        assert_eq!(line[10], format!("{hours:.2}"));
    }
    assert_eq!(&lines[0][7], "too_long=1");
    assert_eq!(&lines[0][11], "62");

    // The command line writes the same file from the database.
    let cli = crate::cli::verdict(
        &app.db,
        &[
            "report", "hours", "--batch", "hours", "--by", "week", "--format", "csv",
        ],
        None,
    );
    assert!(
        cli.status.success(),
        "{}",
        String::from_utf8_lossy(&cli.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&cli.stdout), text);
    let refused = crate::cli::verdict(&app.db, &["report", "hours", "--by", "month"], None);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("by: unknown period"));

    // The page shows the same table, with the CSV link.
    let browser = app.login("lead", PASSWORD).await;
    let page = page_text(app, &browser, "/reports/hours?by=week").await;
    assert!(
        page.contains("2026-W45") && page.contains("0:05:34"),
        "{page}"
    );
    let link = page
        .split("id=\"hours-csv\" href=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("the CSV link");
    assert!(
        link.contains("by=week") && link.contains("format=csv"),
        "{link}"
    );
}
db_test!(hours_add_up_from_the_ratings_made: TestApp);

async fn the_report_refuses_bad_parameters_raters_and_hidden_batches(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    app.persona("other_lead", Role::Lead).await;
    let ana = app.persona("ana", Role::Rater).await;
    let open = app
        .batch(
            &admin,
            "open",
            &tasks(2),
            "&rubric=pairwise-aspects&raters_see_external_ids=true",
        )
        .await;
    let hidden = app
        .batch(
            &admin,
            "hidden",
            &tasks(2),
            "&rubric=pairwise-aspects&raters_see_external_ids=true",
        )
        .await;
    let patched = admin
        .api
        .patch(app.url(&format!("/api/v1/batches/{hidden}")))
        .json(&json!({"leads": ["other_lead"]}))
        .go()
        .await;
    json_with(patched, StatusCode::OK).await;
    rate_next(app, &ana, &open, |n| varied(n, &distinct(1), 40))
        .await
        .unwrap();
    rate_next(app, &ana, &hidden, |n| varied(n, &distinct(2), 50))
        .await
        .unwrap();

    for (query, field) in [
        ("batch=nope", "batch"),
        ("from=yesterday", "from"),
        ("to=2026-13-01", "to"),
        ("by=month", "by"),
        ("format=xlsx", "format"),
        ("from=2026-11-05&to=2026-11-01", "to"),
        ("from=2026-11-05T10:00:00Z&to=2026-11-05T09:00:00Z", "to"),
    ] {
        let refused = get(app, &lead, &format!("/api/v1/reports/hours?{query}")).await;
        let body = json_with(refused, StatusCode::UNPROCESSABLE_ENTITY).await;
        assert!(body["fields"][field].is_string(), "{query}: {body}");
        assert_eq!(
            body["fields"].as_object().unwrap().len(),
            1,
            "{query}: {body}"
        );
    }
    for query in ["", "?batch=", "?batch=nope"] {
        let refused = get(app, &lead, &format!("/api/v1/reports/flags{query}")).await;
        let body = json_with(refused, StatusCode::UNPROCESSABLE_ENTITY).await;
        assert!(body["fields"]["batch"].is_string(), "{query}: {body}");
    }
    // The page says what is wrong, with the same status.
    let browser = app.login("lead", PASSWORD).await;
    let page = browser
        .get(app.url("/reports/hours?from=yesterday"))
        .go()
        .await;
    assert_eq!(page.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(page.text().await.unwrap().contains("from must be a date"));

    for path in [
        "/api/v1/reports/hours".to_owned(),
        format!("/api/v1/reports/flags?batch={open}"),
    ] {
        assert_eq!(
            get(app, &ana, &path).await.status(),
            StatusCode::FORBIDDEN,
            "{path}"
        );
    }

    // A batch the lead does not lead is not found, and its hours are nobody's business.
    for path in [
        format!("/api/v1/reports/hours?batch={hidden}"),
        format!("/api/v1/reports/flags?batch={hidden}"),
        format!("/reports/hours?batch={hidden}"),
    ] {
        let response = if path.starts_with("/api") {
            get(app, &lead, &path).await
        } else {
            browser.get(app.url(&path)).go().await
        };
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{path}");
    }
    let seen = json_with(
        get(app, &lead, "/api/v1/reports/hours").await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(seen["rows"].as_array().unwrap().len(), 1, "{seen}");
    assert_eq!(seen["rows"][0]["active_s"], 40);
    // The admin sees both.
    let all = json_with(
        get(app, &admin, "/api/v1/reports/hours").await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(all["rows"][0]["active_s"], 90, "{all}");
}
db_test!(the_report_refuses_bad_parameters_raters_and_hidden_batches: TestApp);

async fn each_flag_fires_on_the_rater_built_to_trip_it(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let names = ["ana", "ben", "fast", "liner", "parrot"];
    let mut raters = Vec::new();
    for name in names {
        raters.push(app.persona(name, Role::Rater).await);
    }
    let batch = app
        .batch(
            &admin,
            "flags",
            &tasks(6),
            "&rubric=pairwise-aspects&overlap=5&randomize=false&raters_see_external_ids=true",
        )
        .await;
    let mut ids: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (r, (name, rater)) in names.iter().zip(&raters).enumerate() {
        for step in 0..6 {
            let unique = r * 10 + step;
            let id = rate_next(app, rater, &batch, |n| match *name {
                // A minute's thought on every task, and an explanation of its own.
                "ana" | "ben" => varied(n, &distinct(unique), 290 + unique as i64),
                "fast" => varied(n, &distinct(unique), 15 + step as i64),
                // The first answer to every question, every time.
                "liner" => {
                    let mut answers = json!({"rationale": distinct(unique), "time_spent_s": 250});
                    for aspect in ASPECTS {
                        answers[aspect] = json!("a");
                    }
                    answers
                }
                // The same sentence on every task, once with other punctuation.
                _ => varied(
                    n,
                    if step == 3 {
                        "response A is better!"
                    } else {
                        "Response A is better."
                    },
                    280 + step as i64,
                ),
            })
            .await
            .expect("a task");
            ids.entry(*name).or_default().push(id);
        }
    }
    let report = json_with(
        get(app, &lead, &format!("/api/v1/reports/flags?batch={batch}")).await,
        StatusCode::OK,
    )
    .await;
    let flags = report["flags"].as_array().expect("flags");
    let fired: Vec<(&str, &str)> = flags
        .iter()
        .map(|f| (f["rater"].as_str().unwrap(), f["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(
        fired,
        [
            ("fast", "fast"),
            ("liner", "straight_lining"),
            ("parrot", "repeated_explanations")
        ],
        "{report}"
    );
    // The batch's median: 30 times, the 15th and 16th in order.
    let mut times: Vec<i64> = (0..6)
        .flat_map(|s| [290 + s, 290 + 10 + s, 15 + s, 250, 280 + s])
        .collect();
    times.sort_unstable();
    assert_eq!(
        report["median_s"],
        json!((times[14] + times[15]) as f64 / 2.0)
    );
    assert_eq!(flags[0]["median_s"], json!(17.5));
    let behind = |flag: &Value| -> Vec<String> {
        let mut ids: Vec<String> = flag["ratings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let id = r["id"].as_str().unwrap().to_owned();
                assert_eq!(r["review_url"], format!("/review/{id}"));
                id
            })
            .collect();
        ids.sort();
        ids
    };
    for (flag, name) in flags.iter().zip(["fast", "liner", "parrot"]) {
        let mut want = ids[name].clone();
        want.sort();
        assert_eq!(behind(flag), want, "{name}");
    }
    assert_eq!(flags[1]["questions"], json!(ASPECTS));
    assert_eq!(flags[2]["example"], "Response A is better.");
    assert_eq!(report["thresholds"]["min_repeats"], 3);

    // The page lists the flags, and each link opens the rating's review page.
    let browser = app.login("lead", PASSWORD).await;
    let page = page_text(app, &browser, &format!("/reports/hours?batch={batch}")).await;
    assert!(
        page.contains("straight-lining") && page.contains("Response A is better."),
        "{page}"
    );
    let first = flags[2]["ratings"][0]["review_url"].as_str().unwrap();
    assert!(page.contains(first), "{page}");
    let review = browser.get(app.url(first)).go().await;
    assert_eq!(review.status(), StatusCode::OK);
    assert!(review.text().await.unwrap().contains("parrot"));
}
db_test!(each_flag_fires_on_the_rater_built_to_trip_it: TestApp);
