//! Connections: a client that opens one and sends nothing, or stalls half-way, cannot
//! hold it for ever, and open connections are limited (issue 25).

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use verdict::Config;
use verdict::store::Backend;

use crate::helpers::{Fixture, Go, TestApp};

/// Reads until the server closes the connection; `None` if it is still open after
/// `within`. Returns what was read.
async fn closed_within(stream: &mut TcpStream, within: Duration) -> Option<Vec<u8>> {
    let mut seen = Vec::new();
    tokio::time::timeout(within, async {
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await
    .ok()
    .map(|()| seen)
}

async fn connect(app: &TestApp) -> TcpStream {
    TcpStream::connect(app.addr).await.expect("connect")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_and_idle_connections_are_closed_after_the_header_timeout() {
    let timeout = Duration::from_millis(500);
    let config = Config {
        header_timeout: timeout,
        ..Config::default()
    };
    let app = TestApp::with_config(Backend::Sqlite, config).await.unwrap();
    let opened = Instant::now();
    let mut silent = connect(&app).await;
    // Meanwhile others are answered.
    let health = app.browser().get(app.url("/healthz")).go().await;
    assert_eq!(health.status(), StatusCode::OK);
    assert!(
        closed_within(&mut silent, Duration::from_secs(5))
            .await
            .is_some(),
        "a silent connection is closed"
    );
    assert!(
        opened.elapsed() >= timeout * 8 / 10,
        "{:?}",
        opened.elapsed()
    );

    // A kept-alive connection that goes quiet after a request is closed too.
    let mut idle = connect(&app).await;
    let host = app.addr;
    idle.write_all(format!("GET /healthz HTTP/1.1\r\nHost: {host}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let seen = closed_within(&mut idle, Duration::from_secs(5))
        .await
        .expect("an idle kept-alive connection is closed");
    assert!(
        String::from_utf8_lossy(&seen).starts_with("HTTP/1.1 200"),
        "it was answered first"
    );
    app.teardown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_body_is_abandoned() {
    let config = Config {
        body_idle_timeout: Duration::from_millis(500),
        ..Config::default()
    };
    let app = TestApp::with_config(Backend::Sqlite, config).await.unwrap();
    let admin = app.admin().await;
    let mut stream = connect(&app).await;
    let head = format!(
        "POST /api/v1/users HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\
         Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"username\":",
        app.addr, admin.token
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let seen = closed_within(&mut stream, Duration::from_secs(5))
        .await
        .expect("the request is given up on, and its connection closed");
    let answer = String::from_utf8_lossy(&seen);
    assert!(answer.starts_with("HTTP/1.1 4"), "{answer}");
    app.teardown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_limit_wait_for_a_free_slot() {
    let timeout = Duration::from_secs(1);
    let config = Config {
        header_timeout: timeout,
        max_connections: 2,
        ..Config::default()
    };
    let app = TestApp::with_config(Backend::Sqlite, config).await.unwrap();
    let _first = connect(&app).await;
    let _second = connect(&app).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    let health = app.browser().get(app.url("/healthz")).go().await;
    assert_eq!(health.status(), StatusCode::OK);
    assert!(
        started.elapsed() >= timeout * 7 / 10,
        "a third connection was served only once a silent one was closed ({:?})",
        started.elapsed()
    );
    app.teardown().await;
}
