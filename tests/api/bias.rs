//! Rater bias figures through the API: batches whose responses have known lengths,
//! raters whose answers and A/B orders are chosen, and every figure (position lean,
//! length lean, length-controlled preference, time over the 30-minute guidance,
//! straight-lining) per rater and for the batch, against numbers worked out by hand.
//! Judges' ratings and drafts are left out.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{Persona, TestApp, db_test, page_text};
use crate::judge_server::{ScriptedJudge, prefers_good};
use crate::judges::{add_judge, export_rows, start_run, wait_for};

/// `n` times `c`.
fn text(c: &str, n: usize) -> String {
    c.repeat(n)
}

/// 100 characters of "é" (two bytes each in UTF-8: 200 bytes).
fn short() -> String {
    text("\u{e9}", 100)
}

/// 300 characters (and 300 bytes), marked GOOD for the scripted judge.
fn long() -> String {
    format!("GOOD {}", text("e", 295))
}

/// Tasks t1..t12 of the pairwise rubric: in t1-t6 B is the longer (100 against 300
/// characters), in t7-t12 A is (300 against 100).
fn tasks() -> String {
    (1..=12)
        .map(|n| {
            let (a, b) = if n <= 6 {
                (short(), long())
            } else {
                (long(), short())
            };
            json!({"external_id": format!("t{n}"), "prompt": format!("Task {n}: explain a loop."),
                   "response_a": a, "response_b": b, "model_a": "alpha", "model_b": "beta"})
            .to_string()
                + "\n"
        })
        .collect()
}

/// How a rater rates one task: the helpfulness they mean in the task's own orientation,
/// whether B is shown first, the active time, and the other answers as they are shown.
struct Plan {
    help: &'static str,
    swapped: bool,
    time: i64,
    others: [&'static str; 5],
}

/// Ana prefers B on 5 of the 6 tasks where B is longer and on 2 of the 6 where it is
/// shorter, sees six tasks swapped, and answers clarity, factuality and safety the same
/// every time, as shown (factuality "a": the response shown first).
fn ana(n: usize) -> Plan {
    let (help, swapped, time) = [
        ("b", true, 600),
        ("b", true, 900),
        ("b", true, 1200),
        ("b", false, 1500),
        ("b", false, 1700),
        ("a", false, 1800),
        ("b", true, 1801),
        ("b", false, 2400),
        ("a", true, 300),
        ("a", true, 450),
        ("a", false, 3000),
        ("a", false, 1000),
    ][n - 1];
    let depth = ["a", "b", "tie"][n % 3];
    let engagement = if n == 12 { "a" } else { "tie" };
    Plan {
        help,
        swapped,
        time,
        others: ["tie", "a", depth, engagement, "tie"],
    }
}

/// Ben always prefers the longer response, never sees a swap, takes a minute, and varies
/// every other answer.
fn ben(n: usize) -> Plan {
    let i = n % 3;
    Plan {
        help: if n <= 6 { "b" } else { "a" },
        swapped: false,
        time: 60,
        others: [
            ["a", "b", "tie"][i],
            ["b", "tie", "a"][i],
            ["tie", "a", "b"][i],
            ["a", "tie", "b"][i],
            ["tie", "tie", "a"][i],
        ],
    }
}

fn flip(side: &str) -> &str {
    match side {
        "a" => "b",
        "b" => "a",
        other => other,
    }
}

/// Takes every task `rater` is offered, shows it swapped when the plan says so, and
/// submits the planned answers as the rater sees them.
async fn rate_by_plan(
    app: &TestApp,
    rater: &Persona,
    batch: &str,
    plan: fn(usize) -> Plan,
) -> usize {
    let mut rated = 0;
    while let Some(next) = app.next(rater, batch).await {
        let external = next["task"]["external_id"].as_str().unwrap();
        let n: usize = external[1..].parse().unwrap();
        let p = plan(n);
        if p.swapped {
            // B shown first: the rater's answers are turned back on submit.
            app.execute("UPDATE assignments SET swapped = TRUE WHERE state = 'open'")
                .await;
        }
        let help = if p.swapped { flip(p.help) } else { p.help };
        let [clarity, factuality, depth, engagement, safety] = p.others;
        let answers = json!({"helpfulness": help, "clarity": clarity, "factuality": factuality,
            "depth": depth, "engagement": engagement, "safety": safety,
            "rationale": "Compared both responses with care.", "time_spent_s": p.time});
        let id = next["assignment_id"].as_str().unwrap();
        let done = app.act(rater, id, "submit", &answers).await;
        assert_eq!(
            done.status(),
            StatusCode::OK,
            "{external}: {:?}",
            done.text().await
        );
        rated += 1;
    }
    rated
}

fn close(got: &Value, want: f64) {
    let got = got.as_f64().unwrap_or_else(|| panic!("a number: {got}"));
    assert!((got - want).abs() < 1e-6, "{got} vs {want}");
}

fn sigmoid(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

/// z for a two-sided 95% interval.
const Z: f64 = 1.959_963_984_540_054;

/// Checks a length-controlled figure against a fit on two lengths, x = -0.5 and +0.5,
/// where the model meets each group's share exactly: logit(share at +0.5) = b0 + b1/2,
/// logit(share at -0.5) = b0 - b1/2, so b0 = (L+ + L-) / 2 and b1 = L+ - L-. Each
/// logit's variance is 1 / (n p (1 - p)); with x = ±c, var(b0) = (v+ + v-) / 4 and
/// var(b1) = (v+ + v-) / (4 c²) = v+ + v-.
fn fitted(lc: &Value, longer_b: (f64, f64), shorter_b: (f64, f64)) {
    let logit = |(k, n): (f64, f64)| (k / (n - k)).ln();
    let var = |(k, n): (f64, f64)| 1.0 / (n * (k / n) * (1.0 - k / n));
    let (b0, b1) = (
        (logit(longer_b) + logit(shorter_b)) / 2.0,
        logit(longer_b) - logit(shorter_b),
    );
    let v = var(longer_b) + var(shorter_b);
    let (se0, se1) = ((v / 4.0).sqrt(), v.sqrt());
    close(&lc["share"]["value"], sigmoid(b0));
    close(&lc["share"]["low"], sigmoid(b0 - Z * se0));
    close(&lc["share"]["high"], sigmoid(b0 + Z * se0));
    close(&lc["length_coefficient"]["value"], b1);
    close(&lc["length_coefficient"]["low"], b1 - Z * se1);
    close(&lc["length_coefficient"]["high"], b1 + Z * se1);
}

async fn each_bias_figure_matches_the_hand_computed_one(app: &TestApp) {
    let admin = app.admin().await;
    let ana_p = app.persona("ana", verdict::auth::Role::Rater).await;
    let ben_p = app.persona("ben", verdict::auth::Role::Rater).await;
    let cy = app.persona("cy", verdict::auth::Role::Rater).await;
    let batch = app
        .batch(
            &admin,
            "leaning",
            &tasks(),
            "&rubric=pairwise-aspects&overlap=3&randomize=false&raters_see_external_ids=true",
        )
        .await;
    assert_eq!(rate_by_plan(app, &ana_p, &batch, ana).await, 12);
    assert_eq!(rate_by_plan(app, &ben_p, &batch, ben).await, 12);
    // Cy only saves a draft, choosing the first shown every time: not counted.
    let next = app.next(&cy, &batch).await.unwrap();
    let draft = json!({"helpfulness": "a", "clarity": "a", "factuality": "a", "depth": "a",
        "engagement": "a", "safety": "a", "time_spent_s": 5000});
    let saved = app
        .act(
            &cy,
            next["assignment_id"].as_str().unwrap(),
            "draft",
            &draft,
        )
        .await;
    assert_eq!(saved.status(), StatusCode::OK, "{:?}", saved.text().await);
    // A judge rates every task (B where B is marked GOOD, the longer in t1-t6, A in
    // t7-t12): its ratings are not the raters'.
    let scripted = ScriptedJudge::start(prefers_good).await;
    add_judge(app, &admin, "scripted", &scripted.base_url, json!({})).await;
    let run = start_run(app, &admin, &batch, "scripted").await;
    wait_for(app, &admin, &run, "finished").await;
    let rows = export_rows(app, &admin, &batch).await;
    assert_eq!(
        rows.iter().filter(|r| r["rater_kind"] == "judge").count(),
        12
    );
    // The swaps took: ana's t1 is stored as B in the task's orientation, though she
    // clicked A, and her factuality "a" (as shown) is stored as "b".
    let t1 = rows
        .iter()
        .find(|r| r["rater"] == "ana" && r["external_id"] == "t1")
        .unwrap();
    assert_eq!(
        (
            &t1["swapped"],
            &t1["answers"]["helpfulness"],
            &t1["answers"]["factuality"]
        ),
        (&json!(true), &json!("b"), &json!("b"))
    );

    let m = app.metrics(&admin, &batch).await;
    let bias = &m["bias"];
    assert_eq!(bias["guidance_s"], 1800);
    let raters: Vec<&str> = bias["raters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rater"].as_str().unwrap())
        .collect();
    assert_eq!(raters, ["ana", "ben"], "no judge, no draft: {bias}");
    let (a, b, all) = (&bias["raters"][0], &bias["raters"][1], &bias["batch"]);

    // Ana. Decisive answers 12 (no ties). Shown first chosen: B on a swapped task (t1,
    // t2, t3, t7) or A on a straight one (t6, t11, t12) = 7 of 12 = 0.5833. Wilson, z² =
    // 3.8415: centre (7/12 + 3.8415/24) / (1 + 3.8415/12) = 0.7434 / 1.3201 = 0.5631,
    // half 1.9600 / 1.3201 · sqrt(0.2431/12 + 3.8415/576) = 0.2436: 0.3195 to 0.8067.
    assert_eq!(a["rated"], 12);
    assert_eq!(a["position"]["n"], 12);
    close(&a["position"]["share"]["value"], 7.0 / 12.0);
    assert!((a["position"]["share"]["low"].as_f64().unwrap() - 0.3195).abs() < 1e-4);
    assert!((a["position"]["share"]["high"].as_f64().unwrap() - 0.8067).abs() < 1e-4);
    // The longer chosen: B in t1-t5, A in t9-t12 = 9 of 12.
    assert_eq!(a["length"]["n"], 12);
    close(&a["length"]["share"]["value"], 0.75);
    // Prefers B: 5 + 2 = 7 of 12. Fit: 5 of 6 where B is longer (x = +0.5), 2 of 6 where
    // it is shorter: b0 = (ln 5 - ln 2) / 2 = 0.4581, sigmoid 0.6126; b1 = ln 5 + ln 2 =
    // ln 10 = 2.3026 (with bytes, x would be ±0.2 and b1 = ln 10 / 0.4: characters
    // count); v = 1 / (6 · 5/6 · 1/6) + 1 / (6 · 1/3 · 2/3) = 1.2 + 0.75 = 1.95.
    let lc = &a["length_controlled"];
    assert_eq!(lc["n"], 12);
    close(&lc["prefers_b"]["value"], 7.0 / 12.0);
    close(&lc["share"]["value"], 0.612_574_113);
    close(&lc["length_coefficient"]["value"], 10f64.ln());
    fitted(lc, (5.0, 6.0), (2.0, 6.0));
    // Time: sorted 300, 450, 600, 900, 1000, 1200 | 1500, 1700, 1800, 1801, 2400, 3000:
    // median (1200 + 1500) / 2 = 1350; over 1800 s: 1801, 2400, 3000 = 3 of 12 (1800
    // itself is within the guidance).
    assert_eq!(a["time"]["n"], 12);
    close(&a["time"]["median_s"], 1350.0);
    close(&a["time"]["over_guidance"]["value"], 0.25);
    // Straight-lining, as shown: clarity tie, factuality "a", safety tie on all 12.
    let lines = &a["straight_lining"];
    assert_eq!(
        lines["straight_lined"],
        json!(["clarity", "factuality", "safety"])
    );
    assert_eq!(lines["questions"]["factuality"]["answer"], "a");
    assert_eq!(lines["questions"]["factuality"]["n"], 12);
    close(&lines["questions"]["factuality"]["share"]["value"], 1.0);
    // Engagement: tie 11 of 12, not straight.
    assert_eq!(lines["questions"]["engagement"]["straight"], false);
    close(
        &lines["questions"]["engagement"]["share"]["value"],
        11.0 / 12.0,
    );

    // Ben: never swapped, so the first shown is A: 6 of 12. The longer every time: 12 of
    // 12. Prefers B 6 of 12, but every B where B is longer and every A where it is
    // shorter: the answers split by length alone, and the fit has no estimate.
    close(&b["position"]["share"]["value"], 0.5);
    close(&b["length"]["share"]["value"], 1.0);
    let lc = &b["length_controlled"];
    close(&lc["prefers_b"]["value"], 0.5);
    assert_eq!(
        (&lc["share"], &lc["length_coefficient"]),
        (&Value::Null, &Value::Null)
    );
    close(&b["time"]["median_s"], 60.0);
    close(&b["time"]["over_guidance"]["value"], 0.0);
    assert_eq!(b["straight_lining"]["straight_lined"], json!([]));
    // Each answer of ben's comes 4 times in 12 but safety: tie 8 times.
    close(
        &b["straight_lining"]["questions"]["safety"]["share"]["value"],
        8.0 / 12.0,
    );

    // The batch: 24 counted ratings. Shown first 7 + 6 = 13 of 24; the longer 9 + 12 =
    // 21 of 24; prefers B 7 + 6 = 13 of 24. Fit: where B is longer 5 + 6 = 11 of 12
    // prefer B, where shorter 2 + 0 = 2 of 12: b0 = (ln 11 - ln 5) / 2 = 0.3942, sigmoid
    // 0.5973; b1 = ln 11 + ln 5 = ln 55 = 4.0073; v = 12/11 + 1 / (12 · 1/6 · 5/6) =
    // 1.0909 + 0.6 = 1.6909.
    assert_eq!(all["rated"], 24);
    assert_eq!(all["position"]["n"], 24);
    close(&all["position"]["share"]["value"], 13.0 / 24.0);
    close(&all["length"]["share"]["value"], 21.0 / 24.0);
    let lc = &all["length_controlled"];
    assert_eq!(lc["n"], 24);
    close(&lc["prefers_b"]["value"], 13.0 / 24.0);
    close(&lc["share"]["value"], 0.597_300_252);
    close(&lc["length_coefficient"]["value"], 55f64.ln());
    fitted(lc, (11.0, 12.0), (2.0, 12.0));
    // Time: twelve 60s then ana's 300, ...: median (60 + 300) / 2 = 180; over: 3 of 24.
    close(&all["time"]["median_s"], 180.0);
    close(&all["time"]["over_guidance"]["value"], 0.125);
    assert_eq!(
        all["straight_lining"],
        json!({"raters_checked": 2, "raters_flagged": 1})
    );
    // One pair of models, every task alpha as A: the batch's fit again.
    assert_eq!(bias["models"].as_array().map(Vec::len), Some(1));
    assert_eq!(bias["models"][0]["model_a"], "alpha");
    assert_eq!(bias["models"][0]["length_controlled"], *lc);

    // The batch page shows the figures, with a chart for each and their words.
    let lead = app.lead().await;
    let browser = lead.browser_for(app).await;
    let html = page_text(app, &browser, &format!("/batches/{batch}")).await;
    let section = &html[html.find("id=\"rater-bias\"").expect("the section")..];
    let section = &section[..section.find("</section>").unwrap()];
    assert!(
        section.contains("58% (32–81%) of 12"),
        "ana's lean: {section}"
    );
    assert!(section.contains("61% (29–86%)"), "ana at equal length");
    assert!(
        section.contains("2.30 (-0.43 to 5.04)"),
        "ana's coefficient"
    );
    assert!(section.contains("22:30"), "ana's median time");
    assert!(section.contains("Clarity, Factuality, Safety"));
    assert!(section.contains("1 of 2 raters with 5 or more"));
    let charts = section.matches("<svg class=\"chart\"").count();
    assert_eq!(
        charts, 6,
        "position, length, at equal length, time, over, sameness"
    );
    assert!(section.contains("30-minute guidance") && section.contains("no lean (50%)"));
    assert!(section.contains("no estimate (n=12)"), "ben has no fit");
}
db_test!(each_bias_figure_matches_the_hand_computed_one: TestApp);

/// Five blackhat tasks, A 50 characters and B 150.
fn blackhat_tasks() -> String {
    (1..=5)
        .map(|n| {
            json!({"external_id": format!("t{n}"), "prompt": format!("Task {n}"),
                   "response_a": text("a", 50), "response_b": text("b", 150)})
            .to_string()
                + "\n"
        })
        .collect()
}

async fn a_scale_and_answers_of_each_response_are_read_as_shown(app: &TestApp) {
    let admin = app.admin().await;
    let eve = app.persona("eve", verdict::auth::Role::Rater).await;
    let batch = app
        .batch(
            &admin,
            "sameness",
            &blackhat_tasks(),
            "&randomize=false&raters_see_external_ids=true",
        )
        .await;
    // Eve sends the same answers as shown on every task: A (the first shown) runs, B
    // does not, A better (2). t2 and t4 are shown swapped.
    let shown = json!({
        "a": {"executability": "yes_fully", "instruction_following": "no_issues", "correctness": "no_issues"},
        "b": {"executability": "no", "executability_explanation": "It stops with a NameError on line 3.",
              "instruction_following": "no_issues", "correctness": "no_issues"},
        "sxs": 2, "sxs_explanation": "A runs as asked; B stops early.", "time_spent_s": 1900
    });
    while let Some(next) = app.next(&eve, &batch).await {
        let external = next["task"]["external_id"].as_str().unwrap().to_owned();
        if external == "t2" || external == "t4" {
            app.execute("UPDATE assignments SET swapped = TRUE WHERE state = 'open'")
                .await;
        }
        let id = next["assignment_id"].as_str().unwrap();
        let done = app.act(&eve, id, "submit", &shown).await;
        assert_eq!(done.status(), StatusCode::OK, "{:?}", done.text().await);
    }
    let m = app.metrics(&admin, &batch).await;
    let e = &m["bias"]["raters"][0];
    assert_eq!(e["rater"], "eve");
    // The first shown chosen every time: 5 of 5. Wilson: centre (1 + 3.8415/10) / (1 +
    // 3.8415/5) = 0.7828, half 1.9600 / 1.7683 · sqrt(3.8415/100) = 0.2172: 0.5655 to 1.
    close(&e["position"]["share"]["value"], 1.0);
    assert!((e["position"]["share"]["low"].as_f64().unwrap() - 0.5655).abs() < 1e-4);
    close(&e["position"]["share"]["high"], 1.0);
    // In the task's orientation: A (the shorter) on t1, t3, t5, B (the longer) on t2, t4:
    // the longer 2 of 5; prefers B 2 of 5; 5 answers are too few to fit.
    close(&e["length"]["share"]["value"], 0.4);
    close(&e["length_controlled"]["prefers_b"]["value"], 0.4);
    assert_eq!(e["length_controlled"]["share"], Value::Null);
    // 1900 s every time: all over the guidance.
    close(&e["time"]["median_s"], 1900.0);
    close(&e["time"]["over_guidance"]["value"], 1.0);
    // As shown, every answer is the same on all five: A's and B's apart, and the score.
    let lines = &e["straight_lining"];
    assert_eq!(lines["questions"]["a.executability"]["answer"], "yes_fully");
    assert_eq!(lines["questions"]["b.executability"]["answer"], "no");
    assert_eq!(lines["questions"]["sxs"]["answer"], "2");
    assert_eq!(
        lines["straight_lined"],
        json!([
            "a.executability",
            "a.instruction_following",
            "a.correctness",
            "b.executability",
            "b.instruction_following",
            "b.correctness",
            "sxs"
        ])
    );
    // Stored in the task's orientation, A's executability differs (yes_fully 3, no 2):
    // the canonical distribution says so, straight-lining does not.
    assert_eq!(
        m["fields"]["a.executability"],
        json!({"no": 2, "yes_fully": 3})
    );
    assert_eq!(m["bias"]["batch"]["straight_lining"]["raters_flagged"], 1);
}
db_test!(a_scale_and_answers_of_each_response_are_read_as_shown: TestApp);
