//! Issue 51, corrections: a batch deleted leaves every list, page and metric at once, its
//! held work ends (410 naming it), and it can be restored until its retention ends, when
//! it is purged for good; a task withdrawn or corrected.

use reqwest::StatusCode;
use serde_json::json;
use verdict::auth::Role;

use crate::helpers::{
    Go, PASSWORD, TestApp, assignment_id, complete_answers, csrf_token, db_test, json_with,
    page_text, tasks_jsonl,
};

async fn audit_actions(app: &TestApp, admin: &crate::helpers::Persona) -> String {
    let got = admin.api.get(app.url("/api/v1/audit")).go().await;
    json_with(got, StatusCode::OK).await.to_string()
}

async fn a_deleted_batch_is_gone_everywhere_until_restored_and_purged_after_its_retention(
    app: &TestApp,
) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let ana = app.persona("ana", Role::Rater).await;
    let bo = app.persona("bo", Role::Rater).await;
    let query = "&overlap=1&randomize=false&raters_see_external_ids=true";
    let batch = app.batch(&admin, "doomed", &tasks_jsonl(3), query).await;
    let kept = app.batch(&admin, "kept", &tasks_jsonl(1), query).await;
    app.rate(&ana, &batch, &complete_answers()).await;
    let held = app.next(&ana, &batch).await.expect("t2");
    assert_eq!(held["task"]["external_id"], "t2");
    let one = format!("/api/v1/batches/{batch}");

    // Only an admin deletes.
    let refused = lead.api.delete(app.url(&one)).go().await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    let deleted = json_with(admin.api.delete(app.url(&one)).go().await, StatusCode::OK).await;
    assert_eq!(deleted["name"], "doomed");
    assert_eq!(deleted["ended_assignments"], 1);
    // Twice: there is no such batch any more.
    let again = admin.api.delete(app.url(&one)).go().await;
    assert_eq!(again.status(), StatusCode::NOT_FOUND);

    // Out of every list, page, metric and export at once, for everyone.
    for who in [&admin, &lead, &ana] {
        let list = json_with(
            who.api.get(app.url("/api/v1/batches")).go().await,
            StatusCode::OK,
        )
        .await;
        let names: Vec<&str> = list
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["kept"], "{}", who.username);
        for path in [
            one.clone(),
            format!("{one}/metrics"),
            format!("{one}/export"),
            format!("{one}/disagreements"),
        ] {
            let got = who.api.get(app.url(&path)).go().await;
            // A rater may not read a batch's figures at all, deleted or not.
            let expected = if who.username == "ana" && path != one {
                StatusCode::FORBIDDEN
            } else {
                StatusCode::NOT_FOUND
            };
            assert_eq!(got.status(), expected, "{path}");
        }
    }
    let browser = app.login("lead", PASSWORD).await;
    let home = page_text(app, &browser, "/").await;
    assert!(!home.contains("doomed") && home.contains("kept"), "{home}");
    let page = browser
        .get(app.url(&format!("/batches/{batch}")))
        .go()
        .await;
    assert_eq!(page.status(), StatusCode::NOT_FOUND);
    let hours = json_with(
        lead.api.get(app.url("/api/v1/reports/hours")).go().await,
        StatusCode::OK,
    )
    .await;
    assert!(!hours.to_string().contains("ana"), "{hours}");
    // The rater's held task ended with it: her submit is refused, naming the batch.
    let late = app
        .act(&ana, &assignment_id(&held), "submit", &complete_answers())
        .await;
    let why = json_with(late, StatusCode::GONE).await;
    assert!(
        why["error"]
            .as_str()
            .unwrap()
            .contains("\"doomed\" was deleted"),
        "{why}"
    );
    let next = ana.api.post(app.url(&format!("{one}/next"))).go().await;
    assert_eq!(next.status(), StatusCode::NOT_FOUND);
    // Its name is not free while it is kept.
    let upload = admin
        .api
        .post(app.url("/api/v1/batches?name=doomed"))
        .header("content-type", "application/x-ndjson")
        .body(tasks_jsonl(1))
        .go()
        .await;
    let refused = json_with(upload, StatusCode::UNPROCESSABLE_ENTITY).await;
    assert!(
        refused["fields"]["name"]
            .as_str()
            .unwrap()
            .contains("a deleted batch is named \"doomed\""),
        "{refused}"
    );
    // Admins list the deleted batches; nobody else does.
    let listed = json_with(
        admin.api.get(app.url("/api/v1/batches/deleted")).go().await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(listed[0]["name"], "doomed");
    assert_eq!(
        (&listed[0]["tasks"], &listed[0]["ratings"]),
        (&json!(3), &json!(1))
    );
    assert_eq!(listed[0]["deleted_by"], "admin");
    let refused = lead.api.get(app.url("/api/v1/batches/deleted")).go().await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);

    // Restored as it was: its rating with it, and the held task back in the pool.
    let restore = format!("{one}/restore");
    let refused = lead.api.post(app.url(&restore)).go().await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    let back = json_with(admin.api.post(app.url(&restore)).go().await, StatusCode::OK).await;
    assert_eq!(back["name"], "doomed");
    assert_eq!(back["progress"]["tasks_done"], 1, "{back}");
    assert_eq!(back["progress"]["in_progress"], 0, "{back}");
    let next = app.next(&bo, &batch).await.expect("the task ana held");
    assert_eq!(next["task"]["external_id"], "t2");
    let metrics = json_with(
        lead.api.get(app.url(&format!("{one}/metrics"))).go().await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(metrics["counts"]["included"], 1, "{}", metrics["counts"]);
    let not_deleted = admin.api.post(app.url(&restore)).go().await;
    assert_eq!(not_deleted.status(), StatusCode::CONFLICT);

    // On the page: the name must be typed; a wrong one deletes nothing.
    let browser = app.login("admin", PASSWORD).await;
    let ask = page_text(app, &browser, &format!("/admin/batches/{batch}/delete")).await;
    assert!(ask.contains("Type the batch's name"), "{ask}");
    let token = csrf_token(&ask);
    let wrong = browser
        .post(app.url(&format!("/admin/batches/{batch}/delete")))
        .form(&[("csrf_token", token.as_str()), ("confirm", "Doomed")])
        .go()
        .await;
    assert_eq!(wrong.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let said = wrong.text().await.unwrap();
    assert!(
        said.contains("id=\"confirm-error\">type the batch&#39;s name"),
        "{said}"
    );
    json_with(admin.api.get(app.url(&one)).go().await, StatusCode::OK).await;
    let right = browser
        .post(app.url(&format!("/admin/batches/{batch}/delete")))
        .form(&[("csrf_token", token.as_str()), ("confirm", "doomed")])
        .go()
        .await;
    assert_eq!(right.status(), StatusCode::SEE_OTHER);
    let list = page_text(app, &browser, "/admin/batches?deleted=doomed").await;
    assert!(
        list.contains("id=\"deleted-batches\"")
            && list.contains(&format!("/admin/batches/{batch}/restore")),
        "{list}"
    );
    let audit = audit_actions(app, &admin).await;
    assert!(
        audit.contains("batch.delete") && audit.contains("batch.restore"),
        "{audit}"
    );

    // Purged: not while its retention lasts; at once with a retention of none.
    let ratings_of = "SELECT COUNT(*) FROM ratings r JOIN batches b ON b.id = r.batch_id WHERE b.name = 'doomed'";
    assert_eq!(app.count(ratings_of).await, 1);
    let kept_purge = crate::cli::verdict(&app.db, &["batch", "purge"], None);
    assert!(kept_purge.status.success());
    assert!(
        String::from_utf8_lossy(&kept_purge.stderr).contains("nothing to purge"),
        "{kept_purge:?}"
    );
    let purge = crate::cli::verdict(
        &app.db,
        &["batch", "purge", "--deleted-retention-days", "0"],
        None,
    );
    assert!(purge.status.success(), "{purge:?}");
    assert!(String::from_utf8_lossy(&purge.stderr).contains("purged \"doomed\""));
    assert_eq!(app.count(ratings_of).await, 0);
    let gone = admin.api.post(app.url(&restore)).go().await;
    assert_eq!(gone.status(), StatusCode::NOT_FOUND);
    let listed = json_with(
        admin.api.get(app.url("/api/v1/batches/deleted")).go().await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(listed, json!([]));
    // The other batch never noticed.
    json_with(
        admin
            .api
            .get(app.url(&format!("/api/v1/batches/{kept}")))
            .go()
            .await,
        StatusCode::OK,
    )
    .await;
    assert!(audit_actions(app, &admin).await.contains("batch.purge"));
}
db_test!(a_deleted_batch_is_gone_everywhere_until_restored_and_purged_after_its_retention: TestApp);

/// A task withdrawn leaves serving and every figure until put back; a task corrected is a
/// new version whose earlier ratings are kept but stale, served again until it has its
/// overlap; bad changes are refused by name; gold is left
/// alone; every change is audited.
async fn a_task_is_withdrawn_and_put_back_and_a_corrected_one_is_rated_again(app: &TestApp) {
    let admin = app.admin().await;
    let lead = app.lead().await;
    let ana = app.persona("ana", Role::Rater).await;
    let bo = app.persona("bo", Role::Rater).await;
    let cy = app.persona("cy", Role::Rater).await;
    let odd = json!({"external_id": "a/b c", "prompt": "Sum a list.", "response_a": "sum(xs)",
                     "response_b": "reduce(add, xs)"})
    .to_string();
    let gold =
        json!({"external_id": "g1", "prompt": "p", "response_a": "GOOD A", "response_b": "B",
                      "gold": {"sxs": {"value": 2, "within": 1}}})
        .to_string();
    let query = "&overlap=2&randomize=false&raters_see_external_ids=true";
    let body = format!("{}{odd}\n{gold}\n", tasks_jsonl(3));
    let batch = app.batch(&admin, "fixes", &body, query).await;
    let task = |id: &str| {
        let id = id.replace('/', "%2F").replace(' ', "%20");
        format!("/api/v1/batches/{batch}/tasks/{id}")
    };
    let patch = |who: &'static str, id: &'static str, body: serde_json::Value| {
        let (lead, ana) = (&lead, &ana);
        let path = task(id);
        async move {
            let by = if who == "lead" { lead } else { ana };
            by.api.patch(app.url(&path)).json(&body).go().await
        }
    };
    let included = || async {
        let got = lead
            .api
            .get(app.url(&format!("/api/v1/batches/{batch}/metrics")))
            .go()
            .await;
        json_with(got, StatusCode::OK).await["counts"]["included"].clone()
    };
    let first_of_ana = app.rate(&ana, &batch, &complete_answers()).await;
    let first_of_bo = app.rate(&bo, &batch, &complete_answers()).await;
    let held = app.next(&cy, &batch).await.expect("t2");
    assert_eq!(held["task"]["external_id"], "t2");
    assert_eq!(included().await, 2);

    // Only the batch's leads change tasks; bad changes are refused by name, changing
    // nothing.
    let refused = patch("ana", "t1", json!({"withdrawn": true})).await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
    for (body, field) in [
        (json!({}), "withdrawn"),
        (json!({"response": "one answer"}), "response"),
        (json!({"response_a": ""}), "response_a"),
        (json!({"prompt": 7}), "prompt"),
        (
            json!({"response_a": "```python\ndef f():\n    return 1 * 1\n```"}),
            "task",
        ),
    ] {
        let got = json_with(
            patch("lead", "t1", body.clone()).await,
            StatusCode::UNPROCESSABLE_ENTITY,
        )
        .await;
        assert!(got["fields"].get(field).is_some(), "{body}: {got}");
    }
    let unknown = patch("lead", "t1", json!({"colour": "red"})).await;
    assert_eq!(unknown.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let missing = patch("lead", "t9", json!({"withdrawn": true})).await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    let graded = patch("lead", "g1", json!({"withdrawn": true})).await;
    assert_eq!(graded.status(), StatusCode::CONFLICT);
    assert_eq!(included().await, 2);

    // Corrected: version 2; both ratings kept, stale, out of the metrics.
    let fixed = json_with(
        patch(
            "lead",
            "t1",
            json!({"response_a": "def f():\n    return 1"}),
        )
        .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(
        (&fixed["version"], &fixed["ratings_changed"]),
        (&json!(2), &json!(2))
    );
    assert_eq!(included().await, 0);
    let view = json_with(
        lead.api.get(app.url(&task("t1"))).go().await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(view["version"], 2);
    assert_eq!(view["versions"][0]["version"], 1);
    assert!(
        view["versions"][0]["response_a"]
            .as_str()
            .unwrap()
            .contains("return 1 * 1")
    );
    assert_eq!(view["versions"][0]["replaced_by"], "lead");
    for rating in view["ratings"].as_array().unwrap() {
        assert_eq!(
            (&rating["stale"], &rating["counts_in_metrics"]),
            (&json!(true), &json!(false))
        );
    }
    // Nobody changes a stale rating: not its rater, not a lead.
    let revise = ana
        .api
        .put(app.url(&format!("/api/v1/ratings/{first_of_ana}")))
        .json(&complete_answers())
        .go()
        .await;
    assert_eq!(revise.status(), StatusCode::CONFLICT);
    let reject = lead
        .api
        .post(app.url(&format!("/api/v1/ratings/{first_of_bo}/review")))
        .json(&json!({"decision": "reject", "version": 1, "comment": "Say why B's loop is wrong."}))
        .go()
        .await;
    assert_eq!(reject.status(), StatusCode::CONFLICT);
    // Served again, to a rater who has not had it (a rater rates a task once), and
    // counted.
    assert_ne!(
        app.next(&ana, &batch).await.expect("a task")["task"]["external_id"],
        "t1"
    );
    let dee = app.persona("dee", Role::Rater).await;
    let again = app.next(&dee, &batch).await.expect("t1 again");
    assert_eq!(again["task"]["external_id"], "t1");
    assert_eq!(
        again["task"]["response_a"], "def f():\n    return 1",
        "{again}"
    );
    let done = app
        .act(&dee, &assignment_id(&again), "submit", &complete_answers())
        .await;
    assert_eq!(done.status(), StatusCode::OK);
    assert_eq!(included().await, 1);
    let export = lead
        .api
        .get(app.url(&format!("/api/v1/batches/{batch}/export?format=jsonl")))
        .go()
        .await;
    let lines = export.text().await.unwrap();
    let stale = lines
        .lines()
        .filter(|l| l.contains("\"stale\":true"))
        .count();
    assert_eq!(stale, 2, "{lines}");

    // Withdrawn: the two assignments held on it (cy's, and ana's since t1 was not hers
    // to take again) end; it is served to no one and leaves the progress; put back, it
    // is served again.
    let out = json_with(
        patch("lead", "t2", json!({"withdrawn": true})).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(
        (&out["withdrawn"], &out["ended_assignments"]),
        (&json!(true), &json!(2))
    );
    let late = app
        .act(&cy, &assignment_id(&held), "submit", &complete_answers())
        .await;
    assert_eq!(late.status(), StatusCode::CONFLICT);
    let view = json_with(
        lead.api
            .get(app.url(&format!("/api/v1/batches/{batch}")))
            .go()
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(view["progress"]["tasks"], 3, "{view}");
    let next = app.next(&bo, &batch).await.expect("a task");
    assert_eq!(next["task"]["external_id"], "t3", "t2 is served to no one");
    let back = json_with(
        patch("lead", "t2", json!({"withdrawn": false})).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(back["withdrawn"], false);
    // A path's external id is percent-encoded.
    let odd = json_with(
        patch("lead", "a/b c", json!({"withdrawn": true})).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(odd["external_id"], "a/b c");

    let got = admin.api.get(app.url("/api/v1/audit")).go().await;
    let audit = json_with(got, StatusCode::OK).await.to_string();
    for action in ["task.correct", "task.withdraw", "task.put_back"] {
        assert!(audit.contains(action), "{action}: {audit}");
    }
}
db_test!(a_task_is_withdrawn_and_put_back_and_a_corrected_one_is_rated_again: TestApp);
