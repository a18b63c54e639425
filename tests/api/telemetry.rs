//! `/metrics` for operators: off unless asked for, behind its token when it has one, and
//! in a text format a Prometheus scraper reads. The test parses the whole output by the
//! format's rules and checks the figures against what it did.

use std::collections::BTreeMap;

use reqwest::StatusCode;
use verdict::Config;
use verdict::config::MetricsAccess;
use verdict::store::Backend;

use crate::helpers::{Fixture, Go, TestApp, complete_answers, db_test, tasks_jsonl};

const TOKEN: &str = "scrape-token-0123456789abcdefghij";

/// The app serving `/metrics` to holders of [`TOKEN`].
pub struct ScrapedApp(pub TestApp);

impl Fixture for ScrapedApp {
    async fn setup(backend: Backend) -> Option<Self> {
        let config = Config {
            metrics: MetricsAccess::from_settings(Some(TOKEN), false).expect("token"),
            ..Config::default()
        };
        TestApp::with_config(backend, config).await.map(Self)
    }

    async fn teardown(self) {
        self.0.teardown().await;
    }
}

/// One sample: its name and labels, as `name{a="x",b="y"}` with labels sorted.
type Samples = BTreeMap<String, f64>;

/// Reads the OpenMetrics text format strictly: `# TYPE`, `# HELP`, `# UNIT` lines, samples
/// `name{label="value",...} number`, and `# EOF` last. Panics naming the line that
/// breaks a rule; returns the samples and each family's type.
fn parse(text: &str) -> (Samples, BTreeMap<String, String>) {
    let mut samples = Samples::new();
    let mut types = BTreeMap::new();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.last(), Some(&"# EOF"), "the text ends with # EOF");
    let name_ok = |name: &str| {
        !name.is_empty()
            && name.chars().enumerate().all(|(i, c)| {
                c == '_' || c == ':' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit())
            })
    };
    for line in &lines[..lines.len() - 1] {
        if let Some(meta) = line.strip_prefix("# ") {
            let mut parts = meta.splitn(3, ' ');
            let (kind, name) = (parts.next().unwrap(), parts.next().unwrap_or(""));
            assert!(["TYPE", "HELP", "UNIT"].contains(&kind), "{line}");
            assert!(name_ok(name), "{line}");
            if kind == "TYPE" {
                types.insert(name.to_owned(), parts.next().unwrap_or("").to_owned());
            }
            continue;
        }
        let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("{line}"));
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            v => v.parse().unwrap_or_else(|_| panic!("a number: {line}")),
        };
        let (name, labels) = match series.split_once('{') {
            None => (series, Vec::new()),
            Some((name, rest)) => {
                let body = rest.strip_suffix('}').unwrap_or_else(|| panic!("{line}"));
                let mut labels = Vec::new();
                let mut rest = body;
                while !rest.is_empty() {
                    let (label, after) = rest.split_once("=\"").unwrap_or_else(|| panic!("{line}"));
                    assert!(name_ok(label), "a label name: {line}");
                    let end = after.find('"').unwrap_or_else(|| panic!("{line}"));
                    labels.push(format!("{label}=\"{}\"", &after[..end]));
                    rest = after[end + 1..].trim_start_matches(',');
                }
                labels.sort();
                (name, labels)
            }
        };
        assert!(name_ok(name), "a metric name: {line}");
        let key = if labels.is_empty() {
            name.to_owned()
        } else {
            format!("{name}{{{}}}", labels.join(","))
        };
        assert!(
            samples.insert(key, value).is_none(),
            "a series twice: {line}"
        );
    }
    (samples, types)
}

async fn scrape(app: &TestApp, token: Option<&str>) -> reqwest::Response {
    let request = app.browser().get(app.url("/metrics"));
    match token {
        Some(token) => request.bearer_auth(token),
        None => request,
    }
    .go()
    .await
}

async fn metrics_are_served_to_the_token_and_read_as_prometheus_text(app: &ScrapedApp) {
    let app = &app.0;
    let (admin, rater) = (app.admin().await, app.rater().await);
    let batch = app.batch(&admin, "scraped", &tasks_jsonl(3), "").await;
    app.rate(&rater, &batch, &complete_answers()).await;
    app.rate(&rater, &batch, &complete_answers()).await;
    app.take(&rater, &batch).await;

    let refused = scrape(app, None).await;
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    assert!(refused.headers().contains_key("www-authenticate"));
    let wrong = scrape(app, Some("scrape-token-0123456789abcdefghiJ")).await;
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);

    let served = scrape(app, Some(TOKEN)).await;
    assert_eq!(served.status(), StatusCode::OK);
    let content_type = served.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        content_type.starts_with("application/openmetrics-text"),
        "{content_type}"
    );
    let (samples, types) = parse(&served.text().await.unwrap());

    let submit = "verdict_http_requests_total{method=\"POST\",route=\"/api/v1/assignments/{id}/submit\",status=\"200\"}";
    assert_eq!(samples.get(submit), Some(&2.0), "{samples:#?}");
    let unauthorized =
        "verdict_http_requests_total{method=\"GET\",route=\"/metrics\",status=\"401\"}";
    assert_eq!(samples.get(unauthorized), Some(&2.0));
    assert_eq!(
        samples.get("verdict_ratings{outcome=\"rated\",status=\"submitted\"}"),
        Some(&2.0)
    );
    assert_eq!(samples.get("verdict_open_assignments"), Some(&1.0));
    assert_eq!(samples.get("verdict_database_up"), Some(&1.0));
    assert_eq!(
        types.get("verdict_http_requests").map(String::as_str),
        Some("counter")
    );
    assert_eq!(
        types
            .get("verdict_http_request_duration_seconds")
            .map(String::as_str),
        Some("histogram")
    );
    let pools: Vec<&String> = samples
        .keys()
        .filter(|k| k.starts_with("verdict_db_connections_max{"))
        .collect();
    match app.db.backend {
        Backend::Sqlite => assert_eq!(pools.len(), 2, "read and write: {pools:?}"),
        Backend::Postgres => assert_eq!(pools.len(), 1, "{pools:?}"),
    }

    // The submit route's histogram: buckets never fall, and +Inf holds every request.
    let series = "method=\"POST\",route=\"/api/v1/assignments/{id}/submit\"";
    let mut buckets: Vec<(f64, f64)> = samples
        .iter()
        .filter(|(k, _)| {
            k.starts_with("verdict_http_request_duration_seconds_bucket{") && k.contains(series)
        })
        .map(|(k, v)| {
            let le = k.split("le=\"").nth(1).unwrap().split('"').next().unwrap();
            (
                if le == "+Inf" {
                    f64::INFINITY
                } else {
                    le.parse().unwrap()
                },
                *v,
            )
        })
        .collect();
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert!(buckets.len() > 5);
    assert!(buckets.windows(2).all(|w| w[0].1 <= w[1].1), "{buckets:?}");
    assert_eq!(buckets.last().unwrap(), &(f64::INFINITY, 2.0));
    let count = format!("verdict_http_request_duration_seconds_count{{{series}}}");
    assert_eq!(samples.get(&count), Some(&2.0));

    // Paths with ids are counted under their route, not one series per id.
    assert!(!samples.keys().any(|k| k.contains(&batch)));
}

db_test!(metrics_are_served_to_the_token_and_read_as_prometheus_text: ScrapedApp);

async fn metrics_are_off_unless_asked_for_and_open_when_asked(app: &TestApp) {
    assert_eq!(scrape(app, None).await.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        scrape(app, Some(TOKEN)).await.status(),
        StatusCode::NOT_FOUND
    );
    let open = TestApp::with_config(
        app.db.backend,
        Config {
            metrics: MetricsAccess::Open,
            ..Config::default()
        },
    )
    .await
    .expect("a second app");
    let served = scrape(&open, None).await;
    assert_eq!(served.status(), StatusCode::OK);
    let (samples, _) = parse(&served.text().await.unwrap());
    assert_eq!(samples.get("verdict_database_up"), Some(&1.0));
    open.teardown().await;
}

db_test!(metrics_are_off_unless_asked_for_and_open_when_asked: TestApp);
