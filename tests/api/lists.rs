//! Paged lists (the audit log, a rater's history, the review queue), on the API and the
//! pages: every row once, in order, with the total, however small the pages; and the
//! list APIs that only pages had: a rating's history and a task's ratings side by side.

use std::collections::BTreeSet;

use reqwest::{Client, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{
    Go, Persona, TestApp, complete_answers, db_test, json_with, page_text, tasks_jsonl,
};

/// Reads every page of a paged API list, `limit` rows at a time: the rows in order, the
/// total every page gave (it must not change), and how many pages there were.
async fn walk(app: &TestApp, who: &Persona, path: &str, limit: usize) -> (Vec<Value>, i64, usize) {
    walk_from(app, who, path, limit, None).await
}

/// Like [`walk`], from the page after `cursor`.
async fn walk_from(
    app: &TestApp,
    who: &Persona,
    path: &str,
    limit: usize,
    mut cursor: Option<String>,
) -> (Vec<Value>, i64, usize) {
    let sep = if path.contains('?') { '&' } else { '?' };
    let (mut rows, mut total, mut pages) = (Vec::new(), None, 0);
    loop {
        let mut url = format!("{path}{sep}limit={limit}");
        if let Some(cursor) = &cursor {
            url.push_str(&format!("&cursor={cursor}"));
        }
        let page = json_with(who.api.get(app.url(&url)).go().await, StatusCode::OK).await;
        pages += 1;
        let items = page["items"].as_array().expect("items").clone();
        assert!(items.len() <= limit, "a page longer than its limit: {page}");
        let this_total = page["total"].as_i64().expect("total");
        assert_eq!(
            *total.get_or_insert(this_total),
            this_total,
            "total changed"
        );
        rows.extend(items);
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
        assert!(pages < 100, "paging does not end");
    }
    (rows, total.unwrap_or(0), pages)
}

/// Follows the "Next page" links of a list page from `path`; returns each page's HTML.
async fn walk_pages(app: &TestApp, browser: &Client, path: &str) -> Vec<String> {
    let mut pages = Vec::new();
    let mut next = Some(path.to_owned());
    while let Some(path) = next {
        let response = browser.get(app.url(&path)).go().await;
        assert_eq!(response.status(), StatusCode::OK, "GET {path}");
        let html = response.text().await.unwrap();
        next = html.split("\" rel=\"next\"").next().and_then(|before| {
            (before.len() < html.len()).then(|| {
                let href = &before[before.rfind("href=\"").expect("href") + 6..];
                href.replace("&#38;", "&").replace("&amp;", "&")
            })
        });
        pages.push(html);
        assert!(pages.len() < 100, "paging does not end");
    }
    pages
}

fn field(rows: &[Value], key: &str) -> Vec<String> {
    rows.iter()
        .map(|r| r[key].as_str().expect(key).to_owned())
        .collect()
}

fn all_distinct(values: &[String]) -> bool {
    values.iter().collect::<BTreeSet<_>>().len() == values.len()
}

/// Submits `n` tasks of `batch` as `rater`; returns the rating ids.
async fn rate_n(app: &TestApp, rater: &Persona, batch: &str, n: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for _ in 0..n {
        ids.push(app.rate(rater, batch, &complete_answers()).await);
    }
    ids
}

async fn the_audit_log_pages_through_every_entry_once(app: &TestApp) {
    let admin = app.admin().await;
    let target = app.rater().await;
    let change = |role: &str| {
        admin
            .api
            .patch(app.url(&format!("/api/v1/users/{}", target.id)))
            .json(&json!({ "role": role }))
    };
    for i in 0..7 {
        let role = if i % 2 == 0 { "lead" } else { "rater" };
        assert_eq!(change(role).go().await.status(), StatusCode::OK);
    }
    let (all, total, _) = walk(app, &admin, "/api/v1/audit", 200).await;
    assert_eq!((all.len(), total), (7, 7));
    let (paged, total, pages) = walk(app, &admin, "/api/v1/audit", 3).await;
    assert_eq!((total, pages), (7, 3));
    assert_eq!(
        paged, all,
        "the same entries in the same order, newest first"
    );
    let times = field(&paged, "at");
    assert!(times.windows(2).all(|w| w[0] >= w[1]), "{times:?}");

    // Entries added between pages do not shift the pages being read.
    let first = json_with(
        admin.api.get(app.url("/api/v1/audit?limit=3")).go().await,
        StatusCode::OK,
    )
    .await;
    // The last change made the account a lead: back to rater is a change (a role it
    // already has would record nothing).
    assert_eq!(change("rater").go().await.status(), StatusCode::OK);
    let cursor = first["next_cursor"].as_str().unwrap();
    let second = json_with(
        admin
            .api
            .get(app.url(&format!("/api/v1/audit?limit=3&cursor={cursor}")))
            .go()
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(second["items"].as_array().unwrap(), &all[3..6].to_vec());
    assert_eq!(second["total"], 8);

    // A filter pages too, and counts only what it keeps.
    let (only, total, _) = walk(app, &admin, "/api/v1/audit?action=user.update", 5).await;
    assert_eq!((only.len(), total), (8, 8));
    let (none, total, _) = walk(app, &admin, "/api/v1/audit?action=batch.upload", 5).await;
    assert_eq!((none.len(), total), (0, 0));

    // Bad paging parameters are named.
    for (query, name) in [
        ("cursor=not-a-cursor", "cursor"),
        ("cursor=YXVkaXQ", "cursor"),
        ("limit=0", "limit"),
        ("limit=201", "limit"),
    ] {
        let refused = admin
            .api
            .get(app.url(&format!("/api/v1/audit?{query}")))
            .go()
            .await;
        let body = json_with(refused, StatusCode::UNPROCESSABLE_ENTITY).await;
        assert!(body["fields"][name].is_string(), "{query}: {body}");
    }
    // Another list's cursor is not this list's.
    use base64::Engine;
    let foreign = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(format!("history|2025-01-01T00:00:00Z|{}", target.id));
    let refused = admin
        .api
        .get(app.url(&format!("/api/v1/audit?cursor={foreign}")))
        .go()
        .await;
    let body = json_with(refused, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(body["fields"]["cursor"].is_string(), "{body}");

    // The page: every entry once, across pages of two.
    let browser = admin.browser_for(app).await;
    let pages = walk_pages(app, &browser, "/admin/audit?limit=2").await;
    assert_eq!(pages.len(), 4, "8 entries, 2 a page");
    let shown: usize = pages.iter().map(|p| p.matches("<td><code>").count()).sum();
    assert_eq!(shown, 8);
    assert!(pages[0].contains("2 shown of 8"), "{}", pages[0]);
    assert!(pages[1].contains("rel=\"first\""));
    let bad = browser.get(app.url("/admin/audit?cursor=zzz")).go().await;
    assert_eq!(bad.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(bad.text().await.unwrap().contains("cursor"));
}
db_test!(the_audit_log_pages_through_every_entry_once: TestApp);

async fn a_raters_history_pages_through_their_own_ratings_only(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    let other = app.persona("other", verdict::auth::Role::Rater).await;
    let batch = app.batch(&admin, "history", &tasks_jsonl(6), "").await;
    let mut rated = rate_n(app, &rater, &batch, 5).await;
    rate_n(app, &other, &batch, 1).await;

    let (rows, total, pages) = walk(app, &rater, "/api/v1/ratings", 2).await;
    assert_eq!((rows.len(), total, pages), (5, 5, 3));
    let mut ids = field(&rows, "id");
    assert!(all_distinct(&ids), "{ids:?}");
    // Newest first.
    rated.reverse();
    assert_eq!(ids, rated);
    ids.sort();
    assert_eq!(rows[0]["batch"], "history");
    assert_eq!(rows[0]["status"], "submitted");
    assert!(
        rows[0].get("answers").is_none(),
        "answers are read one rating at a time"
    );
    let (theirs, total, _) = walk(app, &other, "/api/v1/ratings", 2).await;
    assert_eq!((theirs.len(), total), (1, 1));
    assert!(!ids.contains(&field(&theirs, "id")[0]));

    // A revision does not move a rating from one page to another.
    let first = json_with(
        rater.api.get(app.url("/api/v1/ratings?limit=2")).go().await,
        StatusCode::OK,
    )
    .await;
    let oldest = rated.last().unwrap();
    let mut answers = complete_answers();
    answers["sxs"] = json!(3);
    let revised = rater
        .api
        .put(app.url(&format!("/api/v1/ratings/{oldest}")))
        .json(&answers)
        .go()
        .await;
    assert_eq!(revised.status(), StatusCode::OK);
    let cursor = first["next_cursor"].as_str().map(str::to_owned);
    let (rest, _, _) = walk_from(app, &rater, "/api/v1/ratings", 2, cursor).await;
    assert_eq!(field(&rest, "id"), rated[2..].to_vec());

    // The page: every rating once, across pages of two.
    let browser = rater.browser_for(app).await;
    let pages = walk_pages(app, &browser, "/ratings?limit=2").await;
    assert_eq!(pages.len(), 3);
    let links: Vec<String> = pages
        .iter()
        .flat_map(|p| {
            p.split("href=\"/ratings/")
                .skip(1)
                .map(|s| s[..36].to_owned())
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(links, rated);
    assert!(pages[2].contains("1 shown of 5"));
}
db_test!(a_raters_history_pages_through_their_own_ratings_only: TestApp);

async fn the_review_queue_pages_by_batch_for_its_leads_only(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let outsider = app.persona("outsider", verdict::auth::Role::Lead).await;
    let rater = app.rater().await;
    let first = app.batch(&admin, "first", &tasks_jsonl(5), "").await;
    let second = app.batch(&admin, "second", &tasks_jsonl(3), "").await;
    let led = admin
        .api
        .patch(app.url(&format!("/api/v1/batches/{first}")))
        .json(&json!({ "leads": [lead.username] }))
        .go()
        .await;
    assert_eq!(led.status(), StatusCode::OK);
    let in_first = rate_n(app, &rater, &first, 5).await;
    let in_second = rate_n(app, &rater, &second, 3).await;

    let (rows, total, pages) = walk(app, &lead, "/api/v1/review", 2).await;
    assert_eq!((rows.len(), total, pages), (8, 8, 4));
    let ids = field(&rows, "rating_id");
    assert!(all_distinct(&ids));
    assert_eq!(
        ids,
        [in_first.clone(), in_second.clone()].concat(),
        "oldest first"
    );
    let (only, total, _) = walk(app, &lead, &format!("/api/v1/review?batch={second}"), 2).await;
    assert_eq!((field(&only, "rating_id"), total), (in_second.clone(), 3));
    assert_eq!(only[0]["batch_name"], "second");
    assert_eq!(only[0]["rater"], rater.username);

    // A lead of other batches does not see the first one's ratings, nor may filter by it.
    let (theirs, _, _) = walk(app, &outsider, "/api/v1/review", 50).await;
    assert_eq!(field(&theirs, "rating_id"), in_second);
    let hidden = outsider
        .api
        .get(app.url(&format!("/api/v1/review?batch={first}")))
        .go()
        .await;
    assert_eq!(hidden.status(), StatusCode::NOT_FOUND);
    let bad = json_with(
        lead.api
            .get(app.url("/api/v1/review?batch=nope"))
            .go()
            .await,
        StatusCode::UNPROCESSABLE_ENTITY,
    )
    .await;
    assert!(bad["fields"]["batch"].is_string(), "{bad}");
    let refused = rater.api.get(app.url("/api/v1/review")).go().await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);

    // Deciding a rating takes it out of the queue without disturbing the next page.
    let page = json_with(
        lead.api.get(app.url("/api/v1/review?limit=3")).go().await,
        StatusCode::OK,
    )
    .await;
    let accepted = lead
        .api
        .post(app.url(&format!("/api/v1/ratings/{}/review", ids[0])))
        .json(&json!({"decision": "accept", "version": 1}))
        .go()
        .await;
    assert_eq!(accepted.status(), StatusCode::OK);
    let cursor = page["next_cursor"].as_str().map(str::to_owned);
    let (rest, total, _) = walk_from(app, &lead, "/api/v1/review", 3, cursor).await;
    assert_eq!((field(&rest, "rating_id"), total), (ids[3..].to_vec(), 7));

    // The page, filtered to one batch, across pages of two.
    let browser = lead.browser_for(app).await;
    let pages = walk_pages(app, &browser, &format!("/review?batch={first}&limit=2")).await;
    assert_eq!(pages.len(), 2);
    let links: Vec<String> = pages
        .iter()
        .flat_map(|p| {
            p.split("href=\"/review/")
                .skip(1)
                .filter(|s| !s.starts_with("accept"))
                .map(|s| s[..36].to_owned())
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(links, in_first[1..].to_vec());
    assert!(pages[0].contains("2 shown of 4"), "{}", pages[0]);
}
db_test!(the_review_queue_pages_by_batch_for_its_leads_only: TestApp);

async fn a_ratings_history_shows_each_viewer_their_own_orientation(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let rater = app.rater().await;
    let other = app.persona("other", verdict::auth::Role::Rater).await;
    let batch = app.batch(&admin, "traced", &tasks_jsonl(2), "").await;
    let next = app.next(&rater, &batch).await.unwrap();
    // Shown swapped: B first. The rater must never learn it.
    app.execute("UPDATE assignments SET swapped = TRUE WHERE state = 'open'")
        .await;
    let assignment = next["assignment_id"].as_str().unwrap();
    let done = app
        .act(&rater, assignment, "submit", &complete_answers())
        .await;
    let rating = json_with(done, StatusCode::OK).await["rating_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let returned = lead
        .api
        .post(app.url(&format!("/api/v1/ratings/{rating}/review")))
        .json(&json!({"decision": "return", "comment": "say more about B", "version": 1}))
        .go()
        .await;
    assert_eq!(returned.status(), StatusCode::OK);

    let history = |who: &Persona| {
        who.api
            .get(app.url(&format!("/api/v1/ratings/{rating}/history")))
    };
    let own = json_with(history(&rater).go().await, StatusCode::OK).await;
    let own = own.as_array().unwrap();
    assert_eq!(own.len(), 2, "{own:?}");
    assert_eq!(own[0]["before"], Value::Null);
    assert_eq!(own[0]["after"]["status"], "submitted");
    assert_eq!(own[1]["action"], "review: return");
    assert_eq!(own[1]["actor"], lead.username);
    assert_eq!(own[1]["before"]["status"], "submitted");
    assert_eq!(own[1]["after"]["status"], "returned");
    // As the rater sent them: score 2, B's instruction-following explanation under b.
    for snapshot in [&own[0]["after"], &own[1]["before"], &own[1]["after"]] {
        assert_eq!(snapshot["answers"]["sxs"], 2, "{snapshot}");
        assert_eq!(
            snapshot["answers"]["b"]["instruction_following"],
            "minor_issues"
        );
    }
    // The lead reads the task's own order: the score turned, the sides exchanged.
    let canonical = json_with(history(&lead).go().await, StatusCode::OK).await;
    assert_eq!(canonical[0]["after"]["answers"]["sxs"], 6);
    assert_eq!(
        canonical[0]["after"]["answers"]["a"]["instruction_following"],
        "minor_issues"
    );
    assert_eq!(history(&other).go().await.status(), StatusCode::NOT_FOUND);
}
db_test!(a_ratings_history_shows_each_viewer_their_own_orientation: TestApp);

async fn a_tasks_ratings_side_by_side_for_leads_of_its_batch(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let outsider = app.persona("outsider", verdict::auth::Role::Lead).await;
    let rater = app.rater().await;
    let other = app.persona("other", verdict::auth::Role::Rater).await;
    let batch = app
        .batch(&admin, "overlapping", &tasks_jsonl(1), "&overlap=2")
        .await;
    let led = admin
        .api
        .patch(app.url(&format!("/api/v1/batches/{batch}")))
        .json(&json!({ "leads": [lead.username] }))
        .go()
        .await;
    assert_eq!(led.status(), StatusCode::OK);
    // One rater saw it swapped and one did not; both gave A the edge as they saw it.
    let first = app.next(&rater, &batch).await.unwrap();
    app.execute("UPDATE assignments SET swapped = TRUE WHERE state = 'open'")
        .await;
    let done = app
        .act(
            &rater,
            first["assignment_id"].as_str().unwrap(),
            "submit",
            &complete_answers(),
        )
        .await;
    assert_eq!(done.status(), StatusCode::OK);
    let second = app.next(&other, &batch).await.unwrap();
    app.execute("UPDATE assignments SET swapped = FALSE WHERE state = 'open'")
        .await;
    let done = app
        .act(
            &other,
            second["assignment_id"].as_str().unwrap(),
            "submit",
            &complete_answers(),
        )
        .await;
    assert_eq!(done.status(), StatusCode::OK);

    let path = format!("/api/v1/batches/{batch}/tasks/t1");
    let view = json_with(lead.api.get(app.url(&path)).go().await, StatusCode::OK).await;
    assert_eq!(view["external_id"], "t1");
    assert_eq!(view["batch"], "overlapping");
    let ratings = view["ratings"].as_array().unwrap();
    let by = |name: &str| {
        ratings
            .iter()
            .find(|r| r["rater"] == name)
            .unwrap_or_else(|| panic!("{name} in {view}"))
    };
    assert_eq!(ratings.len(), 2);
    assert_eq!(
        (
            by(&rater.username)["swapped"].clone(),
            by(&rater.username)["answers"]["sxs"].clone()
        ),
        (json!(true), json!(6))
    );
    assert_eq!(
        (
            by("other")["swapped"].clone(),
            by("other")["answers"]["sxs"].clone()
        ),
        (json!(false), json!(2))
    );
    assert_eq!(by("other")["counts_in_metrics"], true);
    assert_eq!(by("other")["status"], "submitted");

    // The page reads the same order, and marks the explanations written the other way
    // round: in the overall row, the swapped rater's only.
    let page = page_text(
        app,
        &lead.browser_for(app).await,
        &format!("/batches/{batch}/tasks/t1"),
    )
    .await;
    let label = "<th scope=\"row\">Which answer is better overall?</th>";
    let at = page.find(label).expect("the overall row");
    let row = &page[at..at + page[at..].find("</tr>").unwrap()];
    assert_eq!(
        row.matches("written when B was shown first").count(),
        1,
        "{row}"
    );
    assert!(
        row.contains("B better") && row.contains("A better"),
        "{row}"
    );

    for (who, status) in [
        (&outsider, StatusCode::NOT_FOUND),
        (&rater, StatusCode::FORBIDDEN),
        (&admin, StatusCode::OK),
    ] {
        assert_eq!(
            who.api.get(app.url(&path)).go().await.status(),
            status,
            "{}",
            who.username
        );
    }
    let unknown = lead
        .api
        .get(app.url(&format!("/api/v1/batches/{batch}/tasks/t9")))
        .go()
        .await;
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
}
db_test!(a_tasks_ratings_side_by_side_for_leads_of_its_batch: TestApp);
