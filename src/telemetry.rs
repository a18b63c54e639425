//! Figures for operators, written in the Prometheus text format (OpenMetrics 1.0); the
//! web layer serves them at `/metrics` (`web::metrics`) when `--metrics-token` or
//! `--metrics-open` says so.
//!
//! Two kinds of figure. This instance's own: requests by route, method and status with
//! their latency, and its database connections in use. The database's: ratings by
//! outcome and status, tasks held, judge calls by status and webhook deliveries by
//! state, counted at each scrape, so every instance reports the same numbers for them
//! (sum the first kind over instances, take one instance's value of the second).

use axum::http::StatusCode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: String,
    route: String,
    status: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    method: String,
    route: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RatingLabels {
    outcome: String,
    status: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabel {
    status: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabel {
    state: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PoolLabel {
    pool: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PoolLabels {
    pool: String,
    state: String,
}

/// Latency buckets in seconds: from a cached page (a millisecond) to a long export.
const LATENCY_BUCKETS: [f64; 14] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

/// This process's figures, and the gauges filled from the database at each scrape.
pub struct Telemetry {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Family<RouteLabels, Histogram, fn() -> Histogram>,
    ratings: Family<RatingLabels, Gauge>,
    open_assignments: Gauge,
    judge_calls: Family<StatusLabel, Gauge>,
    webhook_deliveries: Family<StateLabel, Gauge>,
    pool: Family<PoolLabels, Gauge>,
    pool_max: Family<PoolLabel, Gauge>,
    database_up: Gauge,
    /// One scrape at a time fills the gauges and writes them out, so two scrapes at once
    /// cannot interleave one's counts with the other's.
    scrape: tokio::sync::Mutex<()>,
}

impl Default for Telemetry {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("verdict");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "http_requests",
            "HTTP requests answered by this instance, by method, route and status",
            requests.clone(),
        );
        let latency = Family::<RouteLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            latency_histogram,
        );
        registry.register(
            "http_request_duration_seconds",
            "Time from a request's arrival to its response's headers, by method and route",
            latency.clone(),
        );
        let ratings = Family::<RatingLabels, Gauge>::default();
        registry.register(
            "ratings",
            "Ratings in the database other than drafts, by outcome and review status",
            ratings.clone(),
        );
        let open_assignments = Gauge::default();
        registry.register(
            "open_assignments",
            "Tasks raters hold right now (open assignments), in the database",
            open_assignments.clone(),
        );
        let judge_calls = Family::<StatusLabel, Gauge>::default();
        registry.register(
            "judge_calls",
            "Judge calls recorded in the database, by status",
            judge_calls.clone(),
        );
        let webhook_deliveries = Family::<StateLabel, Gauge>::default();
        registry.register(
            "webhook_deliveries",
            "Webhook deliveries in the database, by state (pending, delivered, failed)",
            webhook_deliveries.clone(),
        );
        let pool = Family::<PoolLabels, Gauge>::default();
        registry.register(
            "db_connections",
            "This instance's database connections by pool and state (in_use, idle, waiting)",
            pool.clone(),
        );
        let pool_max = Family::<PoolLabel, Gauge>::default();
        registry.register(
            "db_connections_max",
            "The most connections each of this instance's pools opens",
            pool_max.clone(),
        );
        let database_up = Gauge::default();
        registry.register(
            "database_up",
            "1 when the database answered this scrape's counts, 0 when it did not",
            database_up.clone(),
        );
        Self {
            registry,
            requests,
            latency,
            ratings,
            open_assignments,
            judge_calls,
            webhook_deliveries,
            pool,
            pool_max,
            database_up,
            scrape: tokio::sync::Mutex::new(()),
        }
    }
}

/// A method as a label: the usual ones by name, anything else as `other`, so a client
/// cannot add label values at will.
pub fn method_label(method: &axum::http::Method) -> &'static str {
    match method.as_str() {
        "GET" => "GET",
        "HEAD" => "HEAD",
        "POST" => "POST",
        "PUT" => "PUT",
        "PATCH" => "PATCH",
        "DELETE" => "DELETE",
        "OPTIONS" => "OPTIONS",
        _ => "other",
    }
}

impl Telemetry {
    /// Counts one answered request. The route is the pattern it matched
    /// (`/api/v1/batches/{id}`), or `unmatched`, never the path itself, so the number of
    /// series stays that of the routes.
    pub fn record(&self, method: &'static str, route: &str, status: StatusCode, seconds: f64) {
        self.requests
            .get_or_create(&RequestLabels {
                method: method.to_owned(),
                route: route.to_owned(),
                status: status.as_str().to_owned(),
            })
            .inc();
        self.latency
            .get_or_create(&RouteLabels {
                method: method.to_owned(),
                route: route.to_owned(),
            })
            .observe(seconds);
    }

    /// Reads the database's counts and the pools' use into the gauges, then writes every
    /// figure out in the text format.
    pub async fn scrape(&self, store: &crate::Store) -> String {
        let _one_at_a_time = self.scrape.lock().await;
        for pool in store.pool_use() {
            let set = |state: &str, value: u32| {
                self.pool
                    .get_or_create(&PoolLabels {
                        pool: pool.pool.to_owned(),
                        state: state.to_owned(),
                    })
                    .set(i64::from(value));
            };
            set("in_use", pool.open.saturating_sub(pool.idle));
            set("idle", pool.idle);
            if let Some(waiting) = pool.waiting {
                set("waiting", waiting);
            }
            self.pool_max
                .get_or_create(&PoolLabel {
                    pool: pool.pool.to_owned(),
                })
                .set(i64::from(pool.max));
        }
        let counts = async {
            Ok::<_, crate::store::StoreError>((
                store.work_counts().await?,
                store.webhook_delivery_counts().await?,
            ))
        };
        match counts.await {
            Ok((work, deliveries)) => {
                self.database_up.set(1);
                // Cleared first, so a count that fell to nothing is not kept at its last
                // value.
                self.ratings.clear();
                for (outcome, status, n) in work.ratings {
                    self.ratings
                        .get_or_create(&RatingLabels { outcome, status })
                        .set(n);
                }
                self.open_assignments.set(work.open_assignments);
                self.judge_calls.clear();
                for (status, n) in work.judge_calls {
                    self.judge_calls
                        .get_or_create(&StatusLabel { status })
                        .set(n);
                }
                self.webhook_deliveries.clear();
                for (state, n) in deliveries {
                    self.webhook_deliveries
                        .get_or_create(&StateLabel { state })
                        .set(n);
                }
            }
            Err(err) => {
                tracing::warn!(%err, "metrics: the database did not answer its counts");
                self.database_up.set(0);
            }
        }
        let mut text = String::new();
        if let Err(err) = prometheus_client::encoding::text::encode(&mut text, &self.registry) {
            tracing::error!(%err, "metrics: could not write the figures");
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_counted_by_route_pattern_and_timed() {
        let telemetry = Telemetry::default();
        telemetry.record("GET", "/api/v1/batches/{id}", StatusCode::OK, 0.003);
        telemetry.record("GET", "/api/v1/batches/{id}", StatusCode::OK, 0.2);
        telemetry.record("other", "unmatched", StatusCode::NOT_FOUND, 0.0001);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &telemetry.registry).unwrap();
        assert!(text.contains(
            "verdict_http_requests_total{method=\"GET\",route=\"/api/v1/batches/{id}\",status=\"200\"} 2"
        ), "{text}");
        assert!(text.contains(
            "verdict_http_request_duration_seconds_bucket{le=\"0.005\",method=\"GET\",route=\"/api/v1/batches/{id}\"} 1"
        ), "{text}");
        assert!(text.contains(
            "verdict_http_request_duration_seconds_count{method=\"GET\",route=\"/api/v1/batches/{id}\"} 2"
        ), "{text}");
        assert!(
            text.contains(
                "verdict_http_requests_total{method=\"other\",route=\"unmatched\",status=\"404\"} 1"
            ),
            "{text}"
        );
    }
}
