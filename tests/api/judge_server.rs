//! A scripted OpenAI-compatible chat completions server, for the judge faults a real
//! model server cannot be made to produce on demand (429 with Retry-After, 500,
//! time-outs, truncated output), for the replies of a hostile endpoint (a body without
//! end, a huge one, a redirect, an error reply carrying a secret), and for outputs of an
//! exact form. Each request is answered by a script given the request's body and its
//! number (from 0), and kept with the moment it arrived.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, post};
use serde_json::{Value, json};
use tokio::sync::oneshot;

/// How the server answers one request.
pub enum Reply {
    /// A chat completion with this content and finish reason.
    Content(String, &'static str),
    /// An error status, with a Retry-After header when given.
    Status(u16, Option<&'static str>),
    /// Waits, then answers.
    After(Duration, Box<Reply>),
    /// A 200 chat completion whose content never ends (streamed as fast as it is read).
    Endless,
    /// An error status whose reply is this text.
    StatusBody(u16, String),
    /// A redirect (302) to this URL.
    Redirect(String),
}

impl Reply {
    pub fn text(content: impl Into<String>) -> Self {
        Reply::Content(content.into(), "stop")
    }
}

pub type Script = Arc<dyn Fn(&Value, usize) -> Reply + Send + Sync>;

/// One request the server received.
#[derive(Clone)]
pub struct Seen {
    pub body: Value,
    pub at: Instant,
    pub authorization: Option<String>,
}

impl Seen {
    /// The prompt the judge was sent.
    pub fn prompt(&self) -> &str {
        self.body["messages"][0]["content"].as_str().unwrap_or("")
    }
}

#[derive(Clone)]
struct Shared {
    script: Script,
    seen: Arc<Mutex<Vec<Seen>>>,
    /// Requests to `/elsewhere`, where a [`Reply::Redirect`] may point.
    followed: Arc<AtomicUsize>,
}

pub struct ScriptedJudge {
    /// The base URL to configure a judge with (`http://127.0.0.1:PORT/v1`).
    pub base_url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    followed: Arc<AtomicUsize>,
    _stop: oneshot::Sender<()>,
}

impl ScriptedJudge {
    pub async fn start(script: impl Fn(&Value, usize) -> Reply + Send + Sync + 'static) -> Self {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let followed = Arc::new(AtomicUsize::new(0));
        let shared = Shared {
            script: Arc::new(script),
            seen: Arc::clone(&seen),
            followed: Arc::clone(&followed),
        };
        let app = axum::Router::new()
            .route("/v1/chat/completions", post(complete))
            .route("/elsewhere", any(elsewhere))
            .with_state(shared);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (tx, rx) = oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await;
        });
        Self {
            base_url: format!("http://{addr}/v1"),
            seen,
            followed,
            _stop: tx,
        }
    }

    /// How many requests reached `/elsewhere` (a redirect followed).
    pub fn followed(&self) -> usize {
        self.followed.load(Ordering::SeqCst)
    }

    /// Every request so far, in the order they came.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("log").clone()
    }
}

/// What a redirect leads to: a chat completion that would count, were it followed.
async fn elsewhere(State(shared): State<Shared>) -> Response {
    shared.followed.fetch_add(1, Ordering::SeqCst);
    completion(0, &Value::Null, "score: 5\nFollowed a redirect.", "stop")
}

fn completion(n: usize, model: &Value, content: &str, finish_reason: &str) -> Response {
    Json(json!({
        "id": format!("chatcmpl-{n}"),
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "finish_reason": finish_reason,
                     "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
    }))
    .into_response()
}

async fn complete(
    State(shared): State<Shared>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let n = {
        let mut seen = shared.seen.lock().expect("log");
        seen.push(Seen {
            body: body.clone(),
            at: Instant::now(),
            authorization: headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
        });
        seen.len() - 1
    };
    let mut reply = (shared.script)(&body, n);
    loop {
        match reply {
            Reply::After(wait, then) => {
                tokio::time::sleep(wait).await;
                reply = *then;
            }
            Reply::Status(code, retry_after) => {
                let mut response = (
                    StatusCode::from_u16(code).expect("a status"),
                    Json(json!({"error": {"message": "scripted failure"}})),
                )
                    .into_response();
                if let Some(wait) = retry_after {
                    response
                        .headers_mut()
                        .insert("retry-after", HeaderValue::from_static(wait));
                }
                return response;
            }
            Reply::Content(content, finish_reason) => {
                return completion(n, &body["model"], &content, finish_reason);
            }
            Reply::Endless => {
                let start = futures_util::stream::once(async {
                    Ok::<_, std::convert::Infallible>(bytes::Bytes::from_static(
                        br#"{"choices": [{"message": {"content": ""#,
                    ))
                });
                let chunk = bytes::Bytes::from(vec![b'x'; 256 * 1024]);
                let rest = futures_util::stream::repeat_with(move || Ok(chunk.clone()));
                use futures_util::StreamExt;
                return (
                    [("content-type", "application/json")],
                    axum::body::Body::from_stream(start.chain(rest)),
                )
                    .into_response();
            }
            Reply::StatusBody(code, text) => {
                return (StatusCode::from_u16(code).expect("a status"), text).into_response();
            }
            Reply::Redirect(to) => {
                return (StatusCode::FOUND, [("location", to)]).into_response();
            }
        }
    }
}

/// The text shown as "Response A" in a prompt of the built-in pairwise template.
pub fn shown_first(prompt: &str) -> &str {
    let start = prompt.find("## Response A\n").map_or(0, |i| i + 14);
    let end = prompt.find("## Response B\n").unwrap_or(prompt.len());
    &prompt[start..end.max(start)]
}

/// A pairwise judge that prefers the response marked GOOD on helpfulness, wherever it is
/// shown, and ties everything else.
pub fn prefers_good(body: &Value, _: usize) -> Reply {
    let prompt = body["messages"][0]["content"].as_str().unwrap_or("");
    let first = shown_first(prompt);
    let help = if first.contains("GOOD") {
        "A"
    } else if prompt.contains("GOOD") {
        "B"
    } else {
        "tie"
    };
    Reply::text(
        json!({"rationale": "Judged each aspect on its own merits.", "choices": {
            "helpfulness": help, "clarity": "tie", "factuality": "tie", "depth": "tie",
            "engagement": "tie", "safety": "tie"}})
        .to_string(),
    )
}
