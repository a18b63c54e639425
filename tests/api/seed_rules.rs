//! The rubrics follow their source documents: the additive score as a ladder of levels,
//! through the API and through the page's form.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{
    Go, Persona, TestApp, assignment_id, csrf_token, db_test, json_with, jsonl, page_text,
    single_task,
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

/// The rating `rater` made of `assignment` (on the page, say), as `lead` reads it.
async fn rating_of(app: &TestApp, rater: &Persona, lead: &Persona, assignment: &str) -> Value {
    let ratings = json_with(
        rater
            .api
            .get(app.url("/api/v1/ratings?limit=100"))
            .go()
            .await,
        StatusCode::OK,
    )
    .await;
    let made = ratings["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["assignment_id"] == assignment)
        .unwrap_or_else(|| panic!("{ratings}"));
    app.rating(lead, made["id"].as_str().unwrap()).await
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
    let stored = rating_of(app, &rater, &lead, &assignment).await;
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

/// Blackhat answers in the canonical orientation, for one task: each response's
/// correctness (explained when it has issues) and, when given, the kinds of its issues.
fn with_issues(a: (&str, Option<Value>), b: (&str, Option<Value>)) -> Value {
    let mut answers = crate::helpers::complete_answers();
    for (side, (correctness, kinds)) in [("a", a), ("b", b)] {
        let holder = &mut answers[side];
        holder["correctness"] = json!(correctness);
        if ["minor_issues", "major_issues"].contains(&correctness) {
            holder["correctness_explanation"] = json!("The loop stops one short of the end.");
        }
        if let Some(kinds) = kinds {
            holder["issue_categories"] = kinds;
        }
    }
    answers
}

/// Whether `next` shows the task's B first: `tasks_jsonl`'s B is the one that starts
/// "Use `".
fn shown_swapped(next: &Value) -> bool {
    next["task"]["response_a"]
        .as_str()
        .unwrap()
        .starts_with("Use `")
}

/// `canonical` as a rater shown the task `next` sends it: with B shown first, the sides
/// trade places and the scale is mirrored.
fn as_shown(next: &Value, canonical: &Value) -> Value {
    let mut shown = canonical.clone();
    if shown_swapped(next) {
        shown["a"] = canonical["b"].clone();
        shown["b"] = canonical["a"].clone();
        shown["sxs"] = json!(8 - canonical["sxs"].as_i64().unwrap());
    }
    shown
}

db_test!(issue_categories_are_asked_with_issues_stored_canonically_counted_and_exported: TestApp);
async fn issue_categories_are_asked_with_issues_stored_canonically_counted_and_exported(
    app: &TestApp,
) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;
    let batch = app
        .batch(&admin, "kinds", &crate::helpers::tasks_jsonl(40), "")
        .await;

    // Refused: kinds for a response without issues, an unknown kind, a kind twice.
    let first = app.take(&rater, &batch).await;
    let refusals = [
        (
            with_issues(("no_issues", Some(json!(["safety"]))), ("no_issues", None)),
            "a.issue_categories",
            "applies only when correctness is minor_issues or major_issues: leave it out otherwise",
        ),
        (
            with_issues(
                ("minor_issues", Some(json!(["style"]))),
                ("no_issues", None),
            ),
            "a.issue_categories",
            "must be a list of different options from functionality, safety, performance, \
             documentation",
        ),
        (
            with_issues(
                ("no_issues", None),
                ("major_issues", Some(json!(["safety", "safety"]))),
            ),
            "b.issue_categories",
            "must be a list of different options from functionality, safety, performance, \
             documentation",
        ),
    ];
    for (answers, field, why) in refusals {
        let refused = json_with(
            app.act(&rater, &first, "submit", &answers).await,
            StatusCode::UNPROCESSABLE_ENTITY,
        )
        .await;
        assert_eq!(refused["fields"][field], why, "{refused}");
    }
    assert_eq!(
        app.count("SELECT COUNT(*) FROM ratings WHERE status = 'submitted'")
            .await,
        0,
        "a refused submission changes nothing"
    );
    // A draft may hold kinds while the rater is still changing correctness.
    let draft = with_issues(("no_issues", Some(json!(["safety"]))), ("no_issues", None));
    json_with(
        app.act(&rater, &first, "draft", &draft).await,
        StatusCode::OK,
    )
    .await;

    // Four tasks rated, in the canonical orientation (A is model alpha, B beta), each
    // sent as the rater was shown it.
    let plan = [
        with_issues(
            ("minor_issues", Some(json!(["functionality"]))),
            ("no_issues", None),
        ),
        with_issues(
            ("major_issues", Some(json!(["safety", "functionality"]))),
            ("minor_issues", Some(json!([]))),
        ),
        with_issues(
            ("no_issues", None),
            (
                "major_issues",
                Some(json!(["documentation", "performance"])),
            ),
        ),
        with_issues(
            ("cannot_assess", None),
            ("minor_issues", Some(json!(["functionality"]))),
        ),
    ];
    let mut next = app.next(&rater, &batch).await.unwrap();
    assert_eq!(assignment_id(&next), first, "the draft's task comes back");
    // Each shown the way round the test wants (A first, then B first, ...): the tasks
    // shown the other way are skipped, which counts in no figure.
    for (i, canonical) in plan.iter().enumerate() {
        while shown_swapped(&next) != (i % 2 == 1) {
            let skip = json!({"reason": "unfamiliar"});
            let skipped = app.act(&rater, &assignment_id(&next), "skip", &skip).await;
            json_with(skipped, StatusCode::OK).await;
            next = app
                .next(&rater, &batch)
                .await
                .expect("a task shown each way");
        }
        let done = app
            .act(
                &rater,
                &assignment_id(&next),
                "submit",
                &as_shown(&next, canonical),
            )
            .await;
        let done = json_with(done, StatusCode::OK).await;
        let stored = app.rating(&lead, done["rating_id"].as_str().unwrap()).await;
        assert_eq!(stored["swapped"], i % 2 == 1, "{stored}");
        for side in ["a", "b"] {
            let expected = match &canonical[side]["issue_categories"] {
                // Stored in the options' order; none picked is no answer.
                Value::Array(kinds) if !kinds.is_empty() => {
                    let order = ["functionality", "safety", "performance", "documentation"];
                    json!(
                        order
                            .iter()
                            .filter(|k| kinds.contains(&json!(k)))
                            .collect::<Vec<_>>()
                    )
                }
                _ => Value::Null,
            };
            assert_eq!(
                stored["answers"][side]["issue_categories"],
                expected,
                "{side}, swapped {}: {stored}",
                shown_swapped(&next)
            );
        }
        next = app.next(&rater, &batch).await.unwrap();
    }

    let metrics = app.metrics(&lead, &batch).await;
    let counts = |asked: u64, answered: u64, [f, s, p, d]: [u64; 4]| {
        json!({"asked": asked, "answered": answered, "options": {
            "functionality": f, "safety": s, "performance": p, "documentation": d}})
    };
    let choices = &metrics["choices"];
    let plain = |v: &Value| json!({"asked": v["asked"], "answered": v["answered"], "options": v["options"]});
    assert_eq!(
        plain(&choices["a.issue_categories"]),
        counts(2, 2, [2, 1, 0, 0]),
        "{choices}"
    );
    assert_eq!(
        plain(&choices["b.issue_categories"]),
        counts(3, 2, [1, 0, 1, 1]),
        "{choices}"
    );
    assert_eq!(
        plain(&choices["issue_categories"]),
        counts(5, 4, [3, 1, 1, 1])
    );
    assert_eq!(
        plain(&choices["issue_categories"]["models"]["alpha"]),
        counts(2, 2, [2, 1, 0, 0])
    );
    assert_eq!(
        plain(&choices["issue_categories"]["models"]["beta"]),
        counts(3, 2, [1, 0, 1, 1])
    );
    let share = &choices["b.issue_categories"]["shares"]["performance"];
    assert!(
        (share["value"].as_f64().unwrap() - 1.0 / 3.0).abs() < 1e-12,
        "{share}"
    );
    assert_eq!(
        metrics["fields"]["a.issue_categories"],
        json!({"functionality": 2, "safety": 1})
    );

    // Exports: a list in JSON Lines, the same list as JSON text in its CSV column.
    let export = |format: &str| {
        let url = app.url(&format!("/api/v1/batches/{batch}/export?format={format}"));
        let lead = &lead;
        async move {
            let response = lead.api.get(url).go().await;
            assert_eq!(response.status(), StatusCode::OK);
            response.text().await.unwrap()
        }
    };
    let lines: Vec<Value> = export("jsonl")
        .await
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut listed: Vec<String> = lines
        .iter()
        .filter(|r| r["outcome"] == "rated")
        .map(|r| r["answers"]["b"]["issue_categories"].to_string())
        .collect();
    listed.sort();
    assert_eq!(
        listed,
        [
            "[\"functionality\"]",
            "[\"performance\",\"documentation\"]",
            "null",
            "null"
        ]
    );
    let csv = export("csv").await;
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let headers = reader.headers().unwrap().clone();
    let at = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let (column, outcome) = (at("b_issue_categories"), at("outcome"));
    let mut cells: Vec<String> = reader
        .records()
        .map(Result::unwrap)
        .filter(|r| &r[outcome] == "rated")
        .map(|r| r[column].to_owned())
        .collect();
    cells.sort();
    assert_eq!(
        cells,
        [
            "",
            "",
            "[\"functionality\"]",
            "[\"performance\",\"documentation\"]"
        ]
    );

    // The page: the boxes are there, hidden while correctness has no issues; ticked
    // boxes are stored as one list.
    let assignment = assignment_id(&next);
    let browser = rater.browser_for(app).await;
    let page = page_text(app, &browser, &format!("/assignments/{assignment}")).await;
    assert!(
        page.contains("<fieldset class=\"question\" data-question=\"a.issue_categories\" hidden>"),
        "{page}"
    );
    assert!(
        page.contains("type=\"checkbox\" name=\"b.issue_categories\" value=\"safety\""),
        "{page}"
    );
    assert!(
        page.contains(
            "Asked when Correctness is Minor issue(s) or Major issue(s) (for that response)."
        ),
        "{page}"
    );
    let token = csrf_token(&page);
    let shown = with_issues(("major_issues", None), ("no_issues", None));
    let mut form: Vec<(String, String)> = vec![("csrf_token".into(), token)];
    for (side, holder) in [("a", &shown["a"]), ("b", &shown["b"])] {
        for (key, value) in holder.as_object().unwrap() {
            form.push((format!("{side}.{key}"), value.as_str().unwrap().to_owned()));
        }
    }
    for kind in ["safety", "functionality"] {
        form.push(("a.issue_categories".into(), kind.into()));
    }
    form.push(("sxs".into(), "5".into()));
    form.push(("sxs_explanation".into(), WHY.into()));
    let sent = browser
        .post(app.url(&format!("/assignments/{assignment}/submit")))
        .form(&form)
        .go()
        .await;
    assert_eq!(sent.status(), StatusCode::SEE_OTHER);
    let stored = rating_of(app, &rater, &lead, &assignment).await;
    // What the rater saw as A is stored as B when B was shown first.
    let side = if stored["swapped"] == true { "b" } else { "a" };
    assert_eq!(
        stored["answers"][side]["issue_categories"],
        json!(["functionality", "safety"]),
        "{stored}"
    );
}
