//! The Bradley-Terry ranking through the API: the metrics name the prior it was fitted
//! with, the batch setting `bradley_terry_prior` changes it (0: the plain fit, with no
//! ranking and a reason when some models never lost), every figure equals the
//! statsmodels reference of `tests/fixtures/bradley_terry/`, and bad values are refused
//! with the field named and nothing changed.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{Go, Persona, TestApp, complete_answers, db_test, json_with, page_text};
use crate::settings_page::form_of;

/// A reference case of `tests/fixtures/bradley_terry/fixtures.json`, by name.
fn reference(name: &str) -> Value {
    let cases: Vec<Value> =
        serde_json::from_str(include_str!("../fixtures/bradley_terry/fixtures.json"))
            .expect("fixtures");
    cases
        .into_iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no case {name}"))
}

/// Tasks whose ratings give the reference case's wins: per pair of models, how often the
/// first won, how often the second did and how many ties, each task written with the
/// models either way round (`turned` puts the second model as response A).
fn tasks(games: &[(&str, &str, u32, u32, u32)]) -> (String, Vec<i64>) {
    let mut lines = String::new();
    let mut scores = Vec::new();
    let mut n = 0;
    for &(first, second, first_won, second_won, ties) in games {
        let outcomes = std::iter::repeat_n(2, first_won as usize)
            .chain(std::iter::repeat_n(6, second_won as usize))
            .chain(std::iter::repeat_n(4, ties as usize));
        for score in outcomes {
            n += 1;
            let turned = n % 2 == 0;
            let (a, b) = if turned {
                (second, first)
            } else {
                (first, second)
            };
            lines += &(json!({"external_id": format!("t{n}"), "prompt": format!("Task {n}"),
                "response_a": "One answer.", "response_b": "Another answer.",
                "model_a": a, "model_b": b})
            .to_string()
                + "\n");
            // 2: the first model better; with it as B, the score is mirrored.
            scores.push(if turned { 8 - score } else { score });
        }
    }
    (lines, scores)
}

/// Uploads the tasks as a blackhat batch (A/B in the task's order) and rates each with
/// its score; returns the batch id.
async fn rated_batch(
    app: &TestApp,
    admin: &Persona,
    name: &str,
    games: &[(&str, &str, u32, u32, u32)],
) -> String {
    let (lines, scores) = tasks(games);
    let batch = app
        .batch(admin, name, &lines, "&rubric=blackhat&randomize=false")
        .await;
    let rater = app
        .persona(&format!("{name}-rater"), verdict::auth::Role::Rater)
        .await;
    let rated = app
        .rate_all(&rater, &batch, |next| {
            // Raters do not see external ids; the prompt names the task.
            let n: usize = next["task"]["prompt"].as_str().unwrap()["Task ".len()..]
                .parse()
                .unwrap();
            let mut answers = complete_answers();
            answers["sxs"] = json!(scores[n - 1]);
            answers
        })
        .await;
    assert_eq!(rated, scores.len());
    batch
}

/// The ranking's models, by name, against the reference's, to 1e-9.
fn assert_matches(ranking: &Value, case: &Value) {
    assert_eq!(ranking["prior"], case["prior"], "{ranking}");
    let expected = case["ranking"].as_array().expect("a finite reference");
    let got = ranking["models"].as_array().expect("models");
    assert_eq!(got.len(), expected.len(), "{ranking}");
    assert!(ranking.get("unavailable").is_none(), "{ranking}");
    for want in expected {
        let model = got
            .iter()
            .find(|g| g["model"] == want["model"])
            .unwrap_or_else(|| panic!("{} in {ranking}", want["model"]));
        for key in ["strength", "low", "high", "comparisons"] {
            let (g, w) = (model[key].as_f64().unwrap(), want[key].as_f64().unwrap());
            assert!((g - w).abs() < 1e-9, "{} {key}: {g} vs {w}", want["model"]);
        }
    }
}

async fn set_prior(app: &TestApp, admin: &Persona, batch: &str, prior: Value) -> reqwest::Response {
    admin
        .api
        .patch(app.url(&format!("/api/v1/batches/{batch}")))
        .json(&json!({ "bradley_terry_prior": prior }))
        .go()
        .await
}

/// The small batch of the reference: m0 beats m1 3-1 and m2 2-1, m1 beats m2 2-0 with a
/// tie. The prior moves its strengths visibly, and each prior gives the reference's.
const SMALL: &[(&str, &str, u32, u32, u32)] = &[
    ("m0", "m1", 3, 1, 0),
    ("m0", "m2", 2, 1, 0),
    ("m1", "m2", 2, 0, 1),
];

async fn the_prior_is_named_and_a_batch_setting_changes_it(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let batch = rated_batch(app, &admin, "small", SMALL).await;

    // New batches use the default prior, and the metrics say which.
    let m = app.metrics(&lead, &batch).await;
    assert_matches(&m["models"]["ranking"], &reference("small_three_prior_0.5"));
    let view = app.batch_view(&admin, &batch).await;
    assert_eq!(view["bradley_terry_prior"], 0.5);
    let default_strength = m["models"]["ranking"]["models"][0]["strength"]
        .as_f64()
        .unwrap();

    // Off: the plain maximum-likelihood fit (Ford's condition holds here).
    let changed = json_with(
        set_prior(app, &admin, &batch, json!(0)).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(changed["bradley_terry_prior"], 0.0);
    let m = app.metrics(&lead, &batch).await;
    assert_matches(&m["models"]["ranking"], &reference("small_three_prior_0"));
    let plain_strength = m["models"]["ranking"]["models"][0]["strength"]
        .as_f64()
        .unwrap();
    assert!(
        (plain_strength - default_strength).abs() > 0.1,
        "the prior moves the figures: {default_strength} against {plain_strength}"
    );

    // Any other prior from 0 up.
    json_with(
        set_prior(app, &admin, &batch, json!(3.0)).await,
        StatusCode::OK,
    )
    .await;
    let m = app.metrics(&lead, &batch).await;
    assert_matches(&m["models"]["ranking"], &reference("small_three_prior_3.0"));

    // The batch page says which prior the ranking has.
    let browser = lead.browser_for(app).await;
    let page = page_text(app, &browser, &format!("/batches/{batch}")).await;
    assert!(
        page.contains("with a prior of 3 wins added each way"),
        "{page}"
    );
}

db_test!(the_prior_is_named_and_a_batch_setting_changes_it: TestApp);

async fn without_a_prior_an_unbeaten_model_leaves_the_ranking_empty_with_a_reason(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    // m0 never loses: 4-0 against m1 and 3-0 against m2; m1 and m2 split 2-1.
    let games = [
        ("m0", "m1", 4, 0, 0),
        ("m0", "m2", 3, 0, 0),
        ("m1", "m2", 2, 1, 0),
    ];
    let batch = rated_batch(app, &admin, "unbeaten", &games).await;
    let m = app.metrics(&lead, &batch).await;
    assert_matches(
        &m["models"]["ranking"],
        &reference("unbeaten_three_prior_0.5"),
    );

    json_with(
        set_prior(app, &admin, &batch, json!(0)).await,
        StatusCode::OK,
    )
    .await;
    assert!(reference("unbeaten_three_prior_0")["ranking"].is_null());
    let m = app.metrics(&lead, &batch).await;
    let ranking = &m["models"]["ranking"];
    assert_eq!(ranking["prior"], 0.0);
    assert_eq!(
        ranking["models"],
        json!([]),
        "no strengths at all: {ranking}"
    );
    let why = ranking["unavailable"].as_str().expect("a reason");
    assert!(
        why.starts_with("m0 never lost (nor tied) to the other models"),
        "{why}"
    );
    // The model table itself is still there.
    assert_eq!(m["models"]["pairs"].as_array().map(Vec::len), Some(3));

    let browser = lead.browser_for(app).await;
    let page = page_text(app, &browser, &format!("/batches/{batch}")).await;
    assert!(page.contains("No ranking: m0 never lost"), "{page}");
    assert!(page.contains("with no prior (the plain fit)"), "{page}");
}

db_test!(without_a_prior_an_unbeaten_model_leaves_the_ranking_empty_with_a_reason: TestApp);

async fn a_bad_prior_is_refused_naming_the_field_and_nothing_changes(app: &TestApp) {
    let admin = app.admin().await;
    let batch = rated_batch(app, &admin, "bad", SMALL).await;
    for bad in [json!(-0.5), json!(1000.5), json!(1e308)] {
        let body = json_with(
            set_prior(app, &admin, &batch, bad.clone()).await,
            StatusCode::UNPROCESSABLE_ENTITY,
        )
        .await;
        assert_eq!(
            body["fields"]["bradley_terry_prior"],
            "must be a number from 0 to 1000 (0: the plain maximum-likelihood fit)",
            "{bad}: {body}"
        );
    }
    let body = json_with(
        set_prior(app, &admin, &batch, json!("none")).await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(body["fields"]["bradley_terry_prior"].is_string(), "{body}");
    let view = app.batch_view(&admin, &batch).await;
    assert_eq!(view["bradley_terry_prior"], 0.5, "unchanged");

    // The settings page refuses it the same way, beside the field.
    let browser = admin.browser_for(app).await;
    let page = crate::settings_page::settings_page(app, &browser, &batch).await;
    let mut form = form_of(&page);
    assert!(
        form.contains(&("bradley_terry_prior".into(), "0.5".into())),
        "{form:?}"
    );
    for (typed, why) in [
        ("-1", "must be a number from 0 to 1000"),
        ("half", "must be a number"),
    ] {
        form.retain(|(n, _)| n != "bradley_terry_prior");
        form.push(("bradley_terry_prior".into(), typed.into()));
        let refused = browser
            .post(app.url(&format!("/admin/batches/{batch}")))
            .form(&form)
            .go()
            .await;
        assert_eq!(
            refused.status(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "{typed}"
        );
        let html = refused.text().await.unwrap();
        assert!(
            html.contains(&format!("<p class=\"error\">Bradley-Terry prior {why}")),
            "{typed}: {html}"
        );
    }
    let view = app.batch_view(&admin, &batch).await;
    assert_eq!(view["bradley_terry_prior"], 0.5, "still unchanged");
}

db_test!(a_bad_prior_is_refused_naming_the_field_and_nothing_changes: TestApp);

async fn the_openapi_document_describes_the_ranking_and_its_prior(app: &TestApp) {
    let doc = app.openapi().await;
    let schemas = &doc["components"]["schemas"];
    let ranking = serde_json::to_string(&schemas["Models"]["properties"]["ranking"]).unwrap();
    assert!(
        ranking.contains("#/components/schemas/Ranking"),
        "{ranking}"
    );
    let properties = &schemas["Ranking"]["properties"];
    for name in ["prior", "models", "unavailable"] {
        assert!(properties[name].is_object(), "{name}: {properties}");
    }
    let settings = &schemas["SettingsRequest"]["properties"]["bradley_terry_prior"];
    assert_eq!(settings["minimum"], 0.0, "{settings}");
    assert_eq!(settings["maximum"], 1000.0, "{settings}");
}

db_test!(the_openapi_document_describes_the_ranking_and_its_prior: TestApp);
