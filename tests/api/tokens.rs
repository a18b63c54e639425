//! API tokens from the API and from the `/tokens` page: each user their own, an admin
//! everyone's; and an admin resetting a password from the users page.

use reqwest::{Client, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{Go, PASSWORD, TestApp, bearer, csrf_token, db_test, json_with};

/// A page's HTML and the CSRF token of its forms.
async fn load(app: &TestApp, browser: &Client, path: &str) -> (String, String) {
    let response = browser.get(app.url(path)).go().await;
    assert_eq!(response.status(), StatusCode::OK, "GET {path}");
    let html = response.text().await.unwrap();
    let token = csrf_token(&html);
    (html, token)
}

/// The `value` of the new token's read-only field on the page that made it.
fn secret_in(html: &str) -> String {
    let at = html.find("class=\"secret\"").expect("the secret is shown");
    let rest = &html[at..];
    let start = rest.find("value=\"").expect("its value") + 7;
    rest[start..start + rest[start..].find('"').unwrap()].to_owned()
}

async fn admins_list_and_revoke_every_users_tokens_others_only_their_own(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    let other = app.persona("other", verdict::auth::Role::Rater).await;

    let all = json_with(
        admin.api.get(app.url("/api/v1/tokens?all=true")).go().await,
        StatusCode::OK,
    )
    .await;
    let owners: Vec<&str> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["username"].as_str().unwrap())
        .collect();
    assert_eq!(owners, vec!["admin", "rater", "other"]);
    let own = json_with(
        rater.api.get(app.url("/api/v1/tokens")).go().await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(own.as_array().unwrap().len(), 1);
    assert_eq!(own[0]["username"], "rater");
    let refused = rater.api.get(app.url("/api/v1/tokens?all=true")).go().await;
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);

    let of = |name: &str| -> String {
        all.as_array()
            .unwrap()
            .iter()
            .find(|t| t["username"] == name)
            .unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    // A rater cannot revoke another's token; an admin can, and it stops working.
    let theirs = rater
        .api
        .delete(app.url(&format!("/api/v1/tokens/{}", of("other"))))
        .go()
        .await;
    assert_eq!(theirs.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        other.api.get(app.url("/api/v1/me")).go().await.status(),
        StatusCode::OK
    );
    let revoked = admin
        .api
        .delete(app.url(&format!("/api/v1/tokens/{}", of("other"))))
        .go()
        .await;
    assert_eq!(revoked.status(), StatusCode::NO_CONTENT);
    assert_eq!(
        other.api.get(app.url("/api/v1/me")).go().await.status(),
        StatusCode::UNAUTHORIZED
    );
    let again = admin
        .api
        .delete(app.url(&format!("/api/v1/tokens/{}", of("other"))))
        .go()
        .await;
    assert_eq!(again.status(), StatusCode::NOT_FOUND);
    let audit = json_with(
        admin
            .api
            .get(app.url("/api/v1/audit?action=token.revoke"))
            .go()
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(audit["total"], 1);
    assert_eq!(audit["items"][0]["target"], "other");
    assert_eq!(audit["items"][0]["actor"], "admin");
}
db_test!(admins_list_and_revoke_every_users_tokens_others_only_their_own: TestApp);

async fn a_user_makes_uses_and_revokes_a_token_on_the_tokens_page(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    let _other = app.persona("other", verdict::auth::Role::Rater).await;
    let browser = rater.browser_for(app).await;
    let (html, csrf) = load(app, &browser, "/tokens").await;
    assert!(
        html.contains("href=\"/tokens\""),
        "linked from the navigation"
    );
    assert!(html.contains("<td>tests</td>"), "the rater's own token");
    assert!(!html.contains("Owner"), "a rater sees only their own");
    assert_eq!(html.matches("/revoke\"").count(), 1, "{html}");

    // A name is required, and the refusal says so.
    let refused = browser
        .post(app.url("/tokens"))
        .form(&[("csrf_token", csrf.as_str()), ("name", "  ")])
        .go()
        .await;
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(refused.text().await.unwrap().contains("Name is required"));
    // A rater may not make one for someone else.
    let forbidden = browser
        .post(app.url("/tokens"))
        .form(&[
            ("csrf_token", csrf.as_str()),
            ("name", "theirs"),
            ("username", "other"),
        ])
        .go()
        .await;
    assert_eq!(forbidden.status(), StatusCode::FORBIDDEN);

    let made = browser
        .post(app.url("/tokens"))
        .form(&[
            ("csrf_token", csrf.as_str()),
            ("name", "<b>nightly</b> export"),
        ])
        .go()
        .await;
    assert_eq!(made.status(), StatusCode::CREATED);
    assert_eq!(made.headers()["cache-control"], "no-store");
    let html = made.text().await.unwrap();
    assert!(html.contains("shown only this once"));
    assert!(html.contains("&#60;b&#62;nightly") && !html.contains("<b>nightly"));
    let secret = secret_in(&html);
    assert!(secret.starts_with("vdt_"), "{secret}");
    let me = json_with(
        bearer(&secret).get(app.url("/api/v1/me")).go().await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(me["username"], "rater");
    // Shown once: the list has the token, never its secret again.
    let (html, csrf) = load(app, &browser, "/tokens").await;
    assert!(!html.contains(&secret));
    assert!(html.contains("nightly"));

    let listed = json_with(
        rater.api.get(app.url("/api/v1/tokens")).go().await,
        StatusCode::OK,
    )
    .await;
    let id = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "<b>nightly</b> export")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let revoked = browser
        .post(app.url(&format!("/tokens/{id}/revoke")))
        .form(&[("csrf_token", csrf.as_str())])
        .go()
        .await;
    assert_eq!(revoked.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        bearer(&secret)
            .get(app.url("/api/v1/me"))
            .go()
            .await
            .status(),
        StatusCode::UNAUTHORIZED
    );
    // Another user's token is not the rater's to revoke from the page either.
    let all = json_with(
        admin.api.get(app.url("/api/v1/tokens?all=true")).go().await,
        StatusCode::OK,
    )
    .await;
    let admins: Vec<&Value> = all
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["username"] == "admin")
        .collect();
    let not_theirs = browser
        .post(app.url(&format!(
            "/tokens/{}/revoke",
            admins[0]["id"].as_str().unwrap()
        )))
        .form(&[("csrf_token", csrf.as_str())])
        .go()
        .await;
    assert_eq!(not_theirs.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        admin.api.get(app.url("/api/v1/me")).go().await.status(),
        StatusCode::OK
    );

    // An admin sees every token with its owner, makes one for someone else and revokes
    // anyone's.
    let browser = admin.browser_for(app).await;
    let (html, csrf) = load(app, &browser, "/tokens").await;
    assert!(html.contains("<th>Owner</th>"));
    assert!(html.contains("<td>other</td>") && html.contains("<td>rater</td>"));
    let made = browser
        .post(app.url("/tokens"))
        .form(&[
            ("csrf_token", csrf.as_str()),
            ("name", "for other"),
            ("username", "other"),
        ])
        .go()
        .await;
    assert_eq!(made.status(), StatusCode::CREATED);
    let secret = secret_in(&made.text().await.unwrap());
    let me = json_with(
        bearer(&secret).get(app.url("/api/v1/me")).go().await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(me["username"], "other");
    let raters = json_with(
        rater.api.get(app.url("/api/v1/tokens")).go().await,
        StatusCode::OK,
    )
    .await;
    let raters_token = raters[0]["id"].as_str().unwrap();
    let revoked = browser
        .post(app.url(&format!("/tokens/{raters_token}/revoke")))
        .form(&[("csrf_token", csrf.as_str())])
        .go()
        .await;
    assert_eq!(revoked.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        rater.api.get(app.url("/api/v1/me")).go().await.status(),
        StatusCode::UNAUTHORIZED
    );
}
db_test!(a_user_makes_uses_and_revokes_a_token_on_the_tokens_page: TestApp);

async fn an_admin_resets_a_password_from_the_users_page(app: &TestApp) {
    let admin = app.admin().await;
    let rater = app.rater().await;
    let signed_in = rater.browser_for(app).await;
    let browser = admin.browser_for(app).await;
    let (html, csrf) = load(app, &browser, "/admin/users").await;
    assert!(html.contains(&format!("/admin/users/{}/password", rater.id)));
    assert!(html.contains("revokes all its API tokens"));
    assert!(
        html.contains(&format!(
            "A new password must be from {} to {} characters",
            verdict::auth::password::MIN_PASSWORD_LEN,
            verdict::auth::password::MAX_PASSWORD_LEN
        )),
        "the rules are stated"
    );

    let path = format!("/admin/users/{}/password", rater.id);
    let weak = browser
        .post(app.url(&path))
        .form(&[("csrf_token", csrf.as_str()), ("password", "password1")])
        .go()
        .await;
    assert_eq!(weak.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        weak.text()
            .await
            .unwrap()
            .contains("role=\"alert\">Password")
    );
    assert_eq!(
        rater.api.get(app.url("/api/v1/me")).go().await.status(),
        StatusCode::OK,
        "a refused reset changes nothing"
    );

    let new_password = "quartz lantern over seven hills";
    let reset = browser
        .post(app.url(&path))
        .form(&[("csrf_token", csrf.as_str()), ("password", new_password)])
        .go()
        .await;
    assert_eq!(reset.status(), StatusCode::SEE_OTHER);
    let to = reset.headers()["location"].to_str().unwrap().to_owned();
    let (html, _) = load(app, &browser, &to).await;
    assert!(html.contains("The password of rater was reset"), "{html}");

    // Signed out everywhere, tokens revoked, the old password refused, the new one taken.
    let home = signed_in.get(app.url("/ratings")).go().await;
    assert_eq!(home.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        rater.api.get(app.url("/api/v1/me")).go().await.status(),
        StatusCode::UNAUTHORIZED
    );
    let old = app
        .submit_login(&app.browser(), "rater", PASSWORD, "/")
        .await;
    assert_ne!(old.status(), StatusCode::SEE_OTHER);
    app.login("rater", new_password).await;
    let audit = json_with(
        admin
            .api
            .get(app.url("/api/v1/audit?action=user.update"))
            .go()
            .await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(audit["total"], 1);
    assert_eq!(
        audit["items"][0]["detail"],
        json!({"user_id": rater.id, "changed": ["password"], "before": {}, "after": {}})
    );
}
db_test!(an_admin_resets_a_password_from_the_users_page: TestApp);
