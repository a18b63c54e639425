//! The rubrics follow their source documents: the additive score as a ladder of levels,
//! through the API and through the page's form.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{
    Go, TestApp, assignment_id, csrf_token, db_test, json_with, jsonl, page_text, single_task,
};

const CRITERIA: [&str; 5] = [
    "relevant",
    "substantial",
    "useful",
    "comprehensive",
    "expert",
];
const WHY: &str = "It answers the core of the question, and no more than that.";

fn single_tasks(n: usize) -> String {
    jsonl((1..=n).map(|i| {
        single_task(
            &format!("s{i}"),
            &format!("Write a function that returns {i} cubed."),
            &format!("```python\ndef f():\n    return {i} ** 3\n```"),
            "m",
        )
    }))
}

fn criteria(met: [bool; 5], repetitive: bool) -> Value {
    let mut answers = json!({"repetitive": repetitive, "justification": WHY});
    for (key, met) in CRITERIA.iter().zip(met) {
        answers[*key] = json!(met);
    }
    answers
}

db_test!(the_additive_ladder_takes_every_level_and_refuses_every_gap: TestApp);
async fn the_additive_ladder_takes_every_level_and_refuses_every_gap(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;
    let batch = app
        .batch(&admin, "ladder", &single_tasks(14), "&rubric=additive-5")
        .await;
    let mut assignment = app.take(&rater, &batch).await;
    let mut taken = 0;
    // Every combination of the five levels and the zero rule.
    for bits in 0u8..64 {
        let met: [bool; 5] = std::array::from_fn(|i| bits & (1 << i) != 0);
        let repetitive = bits & (1 << 5) != 0;
        let level = met.iter().take_while(|m| **m).count();
        let above_a_gap: Vec<&str> = (level..5)
            .filter(|i| met[*i])
            .map(|i| CRITERIA[i])
            .collect();
        let sent = app
            .act(&rater, &assignment, "submit", &criteria(met, repetitive))
            .await;
        if above_a_gap.is_empty() {
            let done = json_with(sent, StatusCode::OK).await;
            let rating = app.rating(&lead, done["rating_id"].as_str().unwrap()).await;
            let score = if repetitive { 0 } else { level };
            assert_eq!(rating["answers"]["score"], score, "{met:?} {repetitive}");
            for (i, key) in CRITERIA.iter().enumerate() {
                assert_eq!(rating["answers"][*key], i < level, "{met:?}: {key}");
            }
            taken += 1;
            assignment = app.take(&rater, &batch).await;
        } else {
            let refused = json_with(sent, StatusCode::UNPROCESSABLE_ENTITY).await;
            let mut named: Vec<&str> = refused["fields"]
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            named.sort_unstable();
            let mut expected = above_a_gap.clone();
            expected.sort_unstable();
            assert_eq!(named, expected, "{met:?}: {refused}");
            assert!(
                refused["fields"][above_a_gap[0]]
                    .as_str()
                    .unwrap()
                    .starts_with("can be yes only when"),
                "{refused}"
            );
        }
    }
    assert_eq!(taken, 12, "levels 0 to 5, with and without the zero rule");
    assert_eq!(
        app.count("SELECT COUNT(*) FROM ratings WHERE status = 'submitted'")
            .await,
        12,
        "no refused submission left anything behind"
    );
    let metrics = app.metrics(&lead, &batch).await;
    // Each criterion reads "reached this level": level 1 and up reach the first.
    assert_eq!(
        metrics["fields"]["relevant"],
        json!({"true": 10, "false": 2})
    );
    assert_eq!(metrics["fields"]["expert"], json!({"true": 2, "false": 10}));
    assert_eq!(
        metrics["fields"]["score"],
        json!({"0": 7, "1": 1, "2": 1, "3": 1, "4": 1, "5": 1})
    );

    // The page's form asks once for the level reached, and stores what it stands for.
    let browser = rater.browser_for(app).await;
    let page = page_text(app, &browser, &format!("/assignments/{assignment}")).await;
    assert!(page.contains("name=\"ladder.score\" value=\"5\""), "{page}");
    assert!(
        !page.contains("name=\"relevant\""),
        "no level is asked on its own"
    );
    let token = csrf_token(&page);
    let form = |level: &str| {
        vec![
            ("csrf_token", token.clone()),
            ("ladder.score", level.to_owned()),
            ("repetitive", "false".to_owned()),
            ("justification", WHY.to_owned()),
        ]
    };
    let url = |action: &str| app.url(&format!("/assignments/{assignment}/{action}"));
    let checked = browser
        .post(url("check"))
        .header("accept", "application/json")
        .form(&vec![
            ("csrf_token", token.clone()),
            ("repetitive", "false".into()),
        ])
        .go()
        .await;
    let checked = json_with(checked, StatusCode::OK).await;
    assert_eq!(
        checked["fields"]["ladder.score"], "is required",
        "{checked}"
    );
    assert!(checked["fields"].get("relevant").is_none(), "{checked}");
    for odd in ["6", "three"] {
        let refused = browser.post(url("submit")).form(&form(odd)).go().await;
        assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY, "{odd}");
        let html = refused.text().await.unwrap();
        assert!(
            html.contains("data-error-for=\"ladder.score\">"),
            "the refusal is shown beside the ladder: {html}"
        );
    }
    let sent = browser.post(url("submit")).form(&form("4")).go().await;
    assert_eq!(sent.status(), StatusCode::SEE_OTHER);
    let ratings = json_with(
        rater
            .api
            .get(app.url("/api/v1/ratings?limit=100"))
            .go()
            .await,
        StatusCode::OK,
    )
    .await;
    let by_form = ratings["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["assignment_id"] == assignment.as_str())
        .unwrap_or_else(|| panic!("{ratings}"));
    let stored = app.rating(&lead, by_form["id"].as_str().unwrap()).await;
    let mut expected = criteria([true, true, true, true, false], false);
    expected["score"] = json!(4);
    for (key, value) in expected.as_object().unwrap() {
        assert_eq!(&stored["answers"][key], value, "{key}: {stored}");
    }
    let next = app.next(&rater, &batch).await.unwrap();
    assert_ne!(assignment_id(&next), assignment);
}

db_test!(a_skip_takes_its_rubrics_reasons_counts_each_and_exports_it: TestApp);
async fn a_skip_takes_its_rubrics_reasons_counts_each_and_exports_it(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;
    let batch = app
        .batch(&admin, "skips", &crate::helpers::tasks_jsonl(4), "")
        .await;
    // The rubric lists its reasons, as the API serves its document.
    let document = json_with(
        admin
            .api
            .get(app.url("/api/v1/rubrics/blackhat"))
            .go()
            .await,
        StatusCode::OK,
    )
    .await;
    let values: Vec<&str> = document["skip_reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["value"].as_str().unwrap())
        .collect();
    assert_eq!(values, ["unfamiliar", "cannot_assess", "too_long", "other"]);

    let first = app.take(&rater, &batch).await;
    let refused = json_with(
        app.act(&rater, &first, "skip", &json!({"reason": "other"}))
            .await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert_eq!(
        refused["fields"]["note"], "is required for the reason \"other\": say why you skip it",
        "{refused}"
    );
    assert_eq!(
        app.count("SELECT COUNT(*) FROM ratings WHERE outcome = 'skipped'")
            .await,
        0,
        "a refused skip changes nothing"
    );
    json_with(
        app.act(&rater, &first, "skip", &json!({"reason": "cannot_assess"}))
            .await,
        StatusCode::OK,
    )
    .await;
    let second = app.take(&rater, &batch).await;
    let done = app
        .act(
            &rater,
            &second,
            "skip",
            &json!({"reason": "other", "note": "The prompt is in Welsh."}),
        )
        .await;
    json_with(done, StatusCode::OK).await;

    // The page: a skip for "other" without a note is shown again with the panel open.
    let third = app.take(&rater, &batch).await;
    let browser = rater.browser_for(app).await;
    let page = page_text(app, &browser, &format!("/assignments/{third}")).await;
    assert!(
        page.contains("value=\"cannot_assess\""),
        "the page offers every reason"
    );
    let token = csrf_token(&page);
    let url = app.url(&format!("/assignments/{third}/skip"));
    let refused = browser
        .post(&url)
        .form(&[
            ("csrf_token", token.as_str()),
            ("reason", "other"),
            ("note", " "),
        ])
        .go()
        .await;
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let html = refused.text().await.unwrap();
    assert!(
        html.contains("<details class=\"card skip\" id=\"skip\" open>"),
        "{html}"
    );
    assert!(
        html.contains("The note is required for the reason &#34;other&#34;: say why you skip it."),
        "{html}"
    );
    let sent = browser
        .post(&url)
        .form(&[("csrf_token", token.as_str()), ("reason", "unfamiliar")])
        .go()
        .await;
    assert_eq!(sent.status(), StatusCode::SEE_OTHER);

    let metrics = app.metrics(&lead, &batch).await;
    assert_eq!(metrics["counts"]["skipped"], 3);
    assert_eq!(
        metrics["counts"]["skip_reasons"],
        json!({"cannot_assess": 1, "other": 1, "unfamiliar": 1})
    );
    let export = lead
        .api
        .get(app.url(&format!("/api/v1/batches/{batch}/export?format=jsonl")))
        .go()
        .await;
    assert_eq!(export.status(), StatusCode::OK);
    let mut reasons: Vec<String> = export
        .text()
        .await
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["skip_reason"].to_string())
        .collect();
    reasons.sort();
    assert_eq!(
        reasons,
        ["\"cannot_assess\"", "\"other\"", "\"unfamiliar\""]
    );
}

db_test!(the_guidelines_and_definitions_show_with_the_form_and_the_review: TestApp);
async fn the_guidelines_and_definitions_show_with_the_form_and_the_review(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;
    let batch = app
        .batch(&admin, "guided", &crate::helpers::tasks_jsonl(2), "")
        .await;
    let assignment = app.take(&rater, &batch).await;
    let browser = rater.browser_for(app).await;
    let form = page_text(app, &browser, &format!("/assignments/{assignment}")).await;
    assert!(form.contains("<details class=\"guidelines\" id=\"guidelines\">"));
    assert!(
        form.contains("<h3>Correctness</h3>"),
        "the Markdown is rendered"
    );
    for label in [
        "No issues",
        "Minor issue(s)",
        "Major issue(s)",
        "Cannot assess",
        "N/A",
    ] {
        assert!(form.contains(&format!("<dt>{label}</dt>")), "{label}");
    }
    let done = app
        .act(
            &rater,
            &assignment,
            "submit",
            &crate::helpers::complete_answers(),
        )
        .await;
    let rating = json_with(done, StatusCode::OK).await["rating_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let lead_browser = lead.browser_for(app).await;
    let review = page_text(app, &lead_browser, &format!("/review/{rating}")).await;
    assert!(review.contains("The rubric's guidelines"));
    assert!(review.contains("<h3>Side by side</h3>"), "{review}");

    // A team's own guidelines are Markdown, sanitised when shown.
    let mut doc: Value =
        serde_json::from_str(include_str!("../../rubrics/additive-5.json")).unwrap();
    doc["name"] = json!("own-words");
    doc["instructions"] = json!("Read **carefully**.<script>alert('guidelines')</script>");
    doc["questions"][0]["definition"] =
        json!("<img src=x onerror=alert(1)>Relevant *means* on topic.");
    let added = crate::rubrics::post_rubric(app, &admin, &doc).await;
    json_with(added, StatusCode::CREATED).await;
    let own = app
        .batch(&admin, "own", &single_tasks(1), "&rubric=own-words")
        .await;
    let assignment = app.take(&rater, &own).await;
    let form = page_text(app, &browser, &format!("/assignments/{assignment}")).await;
    assert!(form.contains("Read <strong>carefully</strong>."), "{form}");
    assert!(form.contains("Relevant <em>means</em> on topic."), "{form}");
    for live in ["<script>alert", "<img src=x"] {
        assert!(
            !form.contains(live),
            "no script or handler survives: {form}"
        );
    }
    assert!(
        !form.contains("\"instructions\""),
        "the form's script is not sent the guidelines it does not use"
    );
}
