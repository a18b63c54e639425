//! verdict: a self-hosted web app for human rating of AI answers to coding prompts.
//!
//! `router` builds the whole app from the feature routers; `serve` runs it on a listener
//! the caller has already bound (tests bind port 0 and read the port back).
#![forbid(unsafe_code)]

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::get;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::ServiceExt;
use tower_http::compression::CompressionLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::timeout::RequestBodyTimeoutLayer;
use tower_http::trace::{DefaultMakeSpan, DefaultOnResponse, TraceLayer};
use tower_sessions::cookie::SameSite;
use tower_sessions::{Expiry, SessionManagerLayer};
use tracing::Level;

pub mod access;
pub mod api;
pub mod assign;
pub mod audit;
pub mod auth;
pub mod batches;
pub mod body;
pub mod cli;
pub mod config;
pub mod credentials;
pub mod dashboard;
pub mod demo;
pub mod diff;
pub mod error;
pub mod export;
pub mod heavy;
pub mod home;
pub mod judges;
pub mod metrics;
pub mod migrate_data;
pub mod ratings;
pub mod reports;
pub mod review;
pub mod rubrics;
pub mod runner;
pub mod services;
pub mod state;
pub mod telemetry;
pub mod users;
pub mod web;
pub mod webhooks;

pub use config::Config;
pub use state::AppState;
pub use store::Store;
pub use verdict_store as store;

/// The name of the session cookie.
pub const SESSION_COOKIE: &str = "verdict_session";

/// The whole application: feature routers merged, then the layers every request passes.
pub fn router(state: AppState) -> Router {
    let config = state.config().clone();
    let sessions = SessionManagerLayer::new(state.store().clone())
        .with_name(SESSION_COOKIE)
        .with_http_only(true)
        .with_same_site(SameSite::Lax)
        .with_secure(config.cookie_secure)
        .with_expiry(Expiry::OnInactivity(
            time::Duration::try_from(config.session_idle).unwrap_or(time::Duration::HOUR),
        ));
    let limit = usize::try_from(config.max_upload_bytes).unwrap_or(usize::MAX);
    let (api_routes, document) = api::split();
    let app = Router::new()
        .merge(auth::signin::router())
        .merge(home::router())
        .merge(users::page_router())
        .merge(batches::page_router())
        .merge(assign::page_router())
        .merge(ratings::page_router())
        .merge(review::page_router())
        .merge(reports::page_router())
        .merge(audit::page_router())
        .merge(dashboard::page_router())
        .merge(rubrics::page_router())
        .merge(judges::page_router())
        .merge(runner::router(&config))
        .merge(diff::page_router())
        .merge(webhooks::pages::router())
        .merge(api_routes)
        .merge(api::router(&document))
        .merge(web::metrics::router())
        .route("/static/{*path}", get(web::assets::serve))
        .route("/healthz", get(web::healthz))
        .fallback(web::not_found)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            web::screen,
        ))
        .layer(axum::middleware::from_fn(web::finish_errors))
        .layer(sessions)
        // Body extractors stop reading at the configured limit and answer 413 in the
        // app's error format, without buffering the rest of an oversized body.
        .layer(DefaultBodyLimit::max(limit))
        // A body that stalls (a client sending a byte a minute) is abandoned, so it cannot
        // hold its connection and its handler for ever.
        .layer(RequestBodyTimeoutLayer::new(config.body_idle_timeout))
        .layer(CompressionLayer::new())
        // Outermost of the router's layers, where the matched route is known: every
        // request is counted and timed with what the layers inside it took.
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            web::metrics::track,
        ))
        .with_state(state);
    web::headers::apply(app)
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(DefaultMakeSpan::new().level(Level::INFO))
                .on_response(DefaultOnResponse::new().level(Level::INFO)),
        )
        .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid))
}

/// Serves `state` on `listener` until `shutdown` resolves, then finishes requests under
/// way. Also runs the housekeeping task (expired sessions, leases and old login
/// attempts).
///
/// Connections are served by hyper directly rather than through `axum::serve`, which
/// has no time-outs: a connection must send its request headers within
/// `Config::header_timeout` (of opening, or of its previous response, so idle kept-alive
/// connections close too), and at most `Config::max_connections` are open at once; the
/// listener waits for a free slot before accepting more.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let housekeeping = tokio::spawn(housekeeping(state.clone()));
    let judge_runs = tokio::spawn(take_over_judge_runs(state.clone()));
    let webhooks = tokio::spawn(webhooks::deliver::run(state.clone()));
    let stalls = tokio::spawn(report_stalls(state.clone()));
    let config = state.config().clone();
    let app = router(state.clone());
    let slots = Arc::new(Semaphore::new(config.max_connections.max(1)));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(config.header_timeout);
    tokio::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            () = &mut shutdown => break,
            slot = slots.clone().acquire_owned() => slot.map_err(std::io::Error::other)?,
        };
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    accept_failed(err).await;
                    continue;
                }
            },
        };
        let service =
            app.clone()
                .map_request(move |mut req: hyper::Request<hyper::body::Incoming>| {
                    req.extensions_mut()
                        .insert(axum::extract::ConnectInfo(peer));
                    req
                });
        let connection = http.serve_connection(
            hyper_util::rt::TokioIo::new(stream),
            hyper_util::service::TowerToHyperService::new(service),
        );
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(err) = connection.await {
                tracing::debug!(%err, %peer, "connection ended with an error");
            }
            drop(slot);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    housekeeping.abort();
    judge_runs.abort();
    webhooks.abort();
    stalls.abort();
    state.store().close().await;
    Ok(())
}

/// After a failed `accept`: a connection that went away before it was accepted is
/// nothing; anything else (out of file descriptors, say) is logged, and the loop pauses
/// so it does not spin while the cause lasts.
async fn accept_failed(err: std::io::Error) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        err.kind(),
        ConnectionAborted | ConnectionRefused | ConnectionReset
    ) {
        return;
    }
    tracing::error!(%err, "cannot accept a connection");
    tokio::time::sleep(Duration::from_millis(250)).await;
}

async fn housekeeping(state: AppState) {
    let mut tick = tokio::time::interval(Duration::from_secs(60));
    loop {
        tick.tick().await;
        if let Err(err) = state.login_limiter().prune(state.store()).await {
            tracing::warn!(%err, "could not prune login attempts");
        }
        if let Err(err) = state.store().delete_expired_sessions().await {
            tracing::warn!(%err, "could not delete expired sessions");
        }
        // Taking a task sweeps its batch too; this keeps progress true where nobody does.
        match services::assignment::release_lapsed(state.store()).await {
            Ok(ended) if !ended.is_empty() => {
                tracing::info!(
                    count = ended.len(),
                    "assignments whose lease ran out went back to the pool"
                );
            }
            Ok(_) => {}
            Err(err) => tracing::warn!(%err, "could not end assignments whose lease ran out"),
        }
        let retention = state.config().deleted_retention;
        let server = services::audit::Actor::Server;
        match services::corrections::purge(state.store(), retention, None, server).await {
            Ok(purged) if !purged.is_empty() => {
                tracing::info!(batches = ?purged, "deleted batches purged, their retention over");
            }
            Ok(_) => {}
            Err(err) => tracing::warn!(%err, "could not purge deleted batches"),
        }
    }
}

/// Sends `batch.stalled` for each batch that stalled since the last look, where someone
/// asked for it.
async fn report_stalls(state: AppState) {
    let mut tick = tokio::time::interval(state.config().webhooks.stall_check);
    loop {
        tick.tick().await;
        match services::stalls::report(state.store()).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(batches = n, "stalled batches reported"),
            Err(err) => tracing::warn!(%err, "could not look for stalled batches"),
        }
    }
}

/// Works the judge runs nobody works: at start-up (runs a stopped server was working)
/// and whenever a worker falls silent for the lease (its process died).
async fn take_over_judge_runs(state: AppState) {
    let mut tick = tokio::time::interval(state.config().judge_lease / 2);
    loop {
        tick.tick().await;
        match state.judging().take_over().await {
            Ok(0) => {}
            Ok(n) => tracing::info!(runs = n, "judge runs taken over"),
            Err(err) => tracing::warn!(%err, "could not look for judge runs to take over"),
        }
    }
}

/// Resolves on Ctrl-C or SIGTERM.
pub(crate) async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
    tracing::info!("shutting down: finishing requests under way");
}
