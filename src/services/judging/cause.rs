//! Why a request to a judge's endpoint got no HTTP reply, in plain words: nothing listens
//! there, something that is not an HTTP server answered (an SSH or a database port), TLS
//! failed, the host name is not found, it timed out connecting or waiting, or the
//! connection dropped. The cause is read from the typed errors in the request error's
//! chain of sources, and decides whether the call is asked again: a refused port or a
//! reply that is not HTTP fails it at once, since asking again gets the same answer.

use std::error::Error;
use std::io;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::endpoint::EndpointPolicy;

/// How long the look at what an address answers waits for its first bytes.
const PROBE_WAIT: Duration = Duration::from_secs(3);

/// The most of a non-HTTP answer quoted back.
const QUOTED_CHARS: usize = 40;

/// Why a request got no HTTP reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Cause {
    /// Nothing listens at the address (`at`, host:port): the connection was refused.
    Refused { at: String },
    /// Something answered that is not an HTTP server; `said` is the start of what it
    /// sent, if anything.
    NotHttp { at: String, said: Option<String> },
    /// The TLS handshake failed.
    Tls { at: String, why: String },
    /// The host name is not found (DNS has no address for it).
    NoSuchHost { host: String },
    /// Looking the host name up failed for now (the resolver did not answer).
    Dns { host: String, why: String },
    /// The connection was not made within the connect time-out.
    ConnectTimeout { at: String, after: Duration },
    /// The reply did not come (whole) within the judge's time-out.
    ReplyTimeout { after: Duration },
    /// The connection was closed or reset before a whole reply came.
    Dropped { at: String },
    /// Anything else, as the error chain says it.
    Other(String),
}

impl Cause {
    /// Whether asking again may go otherwise: time-outs, dropped connections and a
    /// resolver that did not answer may; a refused port, a server that does not speak
    /// HTTP, a failed TLS handshake and an unknown host name will not.
    pub(super) fn retryable(&self) -> bool {
        match self {
            Cause::ConnectTimeout { .. }
            | Cause::ReplyTimeout { .. }
            | Cause::Dropped { .. }
            | Cause::Dns { .. }
            | Cause::Other(_) => true,
            Cause::Refused { .. }
            | Cause::NotHttp { .. }
            | Cause::Tls { .. }
            | Cause::NoSuchHost { .. } => false,
        }
    }

    pub(super) fn describe(&self) -> String {
        match self {
            Cause::Refused { at } => {
                format!("connection refused: nothing listens at {at} (is the model server up?)")
            }
            Cause::NotHttp {
                at,
                said: Some(said),
            } => {
                format!("not an HTTP server at {at}: it answered {said:?}")
            }
            Cause::NotHttp { at, said: None } => format!(
                "not an HTTP server at {at}: it closed the connection without an HTTP reply"
            ),
            Cause::Tls { at, why } => format!("TLS failure with {at}: {why}"),
            Cause::NoSuchHost { host } => {
                format!("name not found: DNS has no address for {host}")
            }
            Cause::Dns { host, why } => format!("DNS lookup of {host} failed: {why}"),
            Cause::ConnectTimeout { at, after } => format!(
                "timed out connecting to {at} (no connection after {} s)",
                after.as_secs()
            ),
            Cause::ReplyTimeout { after } => format!(
                "timed out waiting for the reply (none after {} s, the judge's timeout_s)",
                after.as_secs()
            ),
            Cause::Dropped { at } => {
                format!("connection dropped: {at} closed it before a whole reply came")
            }
            Cause::Other(why) => format!("connection failed: {why}"),
        }
    }

    /// The cause of a request's error `e`, sent to `at` (host:port) with these
    /// time-outs.
    pub(super) fn of(e: &reqwest::Error, at: &str, connect: Duration, reply: Duration) -> Self {
        let at = at.to_owned();
        if e.is_timeout() {
            return if e.is_connect() {
                Cause::ConnectTimeout { at, after: connect }
            } else {
                Cause::ReplyTimeout { after: reply }
            };
        }
        for err in chain(e) {
            if let Some(lookup) = err.downcast_ref::<LookupFailed>() {
                return lookup.cause();
            }
            if let Some(tls) = err.downcast_ref::<rustls::Error>() {
                return Cause::Tls {
                    at,
                    why: tls.to_string(),
                };
            }
            if let Some(hyper) = err.downcast_ref::<hyper::Error>() {
                if hyper.is_parse() || hyper.is_parse_status() || hyper.is_parse_version_h2() {
                    return Cause::NotHttp { at, said: None };
                }
                // Closed before a whole reply came or before the request went; or bytes
                // came before any request did (a server that speaks first, as SSH does,
                // or an HTTP server's 408 on an idle connection): the look closer tells.
                if hyper.is_incomplete_message()
                    || hyper.is_canceled()
                    || hyper.is_closed()
                    || unasked(hyper)
                {
                    return Cause::Dropped { at };
                }
            }
            if let Some(io) = err.downcast_ref::<io::Error>() {
                // tokio-rustls hands a failed handshake on as an `io::Error` holding the
                // `rustls::Error`, which `source()` skips over.
                if let Some(tls) = io.get_ref().and_then(|e| e.downcast_ref::<rustls::Error>()) {
                    return Cause::Tls {
                        at,
                        why: tls.to_string(),
                    };
                }
                match io.kind() {
                    io::ErrorKind::ConnectionRefused => return Cause::Refused { at },
                    io::ErrorKind::ConnectionReset
                    | io::ErrorKind::ConnectionAborted
                    | io::ErrorKind::BrokenPipe
                    | io::ErrorKind::UnexpectedEof => return Cause::Dropped { at },
                    _ => {}
                }
            }
        }
        Cause::Other(chain_text(e))
    }

    /// For a cause a look at the address can tell more of (a reply that is not HTTP, or
    /// a connection closed without one), what the address answers an HTTP request
    /// itself: a PostgreSQL port closes the connection at once without a byte, an SSH
    /// server sends its banner, and an HTTP server whose connection merely dropped
    /// answers HTTP. Only `http` URLs are looked at.
    pub(super) async fn look_closer(self, url: &reqwest::Url, policy: &EndpointPolicy) -> Self {
        let at = match &self {
            Cause::NotHttp { at, said: None } | Cause::Dropped { at } => at.clone(),
            _ => return self,
        };
        if url.scheme() != "http" {
            return self;
        }
        match probe(url, policy).await {
            Some(Answer::Said(said)) => Cause::NotHttp {
                at,
                said: Some(said),
            },
            Some(Answer::Closed) => Cause::NotHttp { at, said: None },
            // HTTP, or nothing to tell by (refused now, silent, not allowed): what was
            // met stands.
            Some(Answer::Http) | None => self,
        }
    }
}

/// Whether hyper read bytes on a connection before any request was sent on it. hyper has
/// no predicate for this kind (`UnexpectedMessage`), so its words are matched.
fn unasked(e: &hyper::Error) -> bool {
    e.to_string()
        .starts_with("received unexpected message from connection")
}

/// What an address answered a bare HTTP request.
enum Answer {
    /// An HTTP status line.
    Http,
    /// Something else; the start of it, printable.
    Said(String),
    /// It closed the connection without a byte.
    Closed,
}

/// Sends `GET /` to the URL's address and reads the start of the answer.
async fn probe(url: &reqwest::Url, policy: &EndpointPolicy) -> Option<Answer> {
    let host = url
        .host_str()?
        .trim_start_matches('[')
        .trim_end_matches(']');
    let port = url.port_or_known_default()?;
    let addrs = checked_addrs(policy, host, port).await.ok()?;
    let look = async {
        let mut stream = tokio::net::TcpStream::connect(&addrs[..]).await.ok()?;
        let request = format!(
            "GET / HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            url.authority()
        );
        // A server that closes at once may reset the connection before this is written;
        // what it sends back (nothing) is what counts.
        let _ = stream.write_all(request.as_bytes()).await;
        let mut start = [0u8; 64];
        let mut got = 0;
        while got < 5 {
            match stream.read(&mut start[got..]).await {
                Ok(0) | Err(_) => break,
                Ok(n) => got += n,
            }
        }
        Some(start[..got].to_vec())
    };
    let start = tokio::time::timeout(PROBE_WAIT, look).await.ok()??;
    Some(if start.is_empty() {
        Answer::Closed
    } else if start.starts_with(b"HTTP/") {
        Answer::Http
    } else {
        Answer::Said(printable(&start))
    })
}

/// The first line of `bytes`, as text a page can show: other control characters are
/// dropped, and it is kept short.
fn printable(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .filter(|c| !c.is_control())
        .take(QUOTED_CHARS)
        .collect()
}

/// The addresses `host` resolves to that the policy lets a judge reach; why none, if so.
pub(super) async fn checked_addrs(
    policy: &EndpointPolicy,
    host: &str,
    port: u16,
) -> Result<Vec<std::net::SocketAddr>, Box<dyn Error + Send + Sync>> {
    let found: Vec<std::net::SocketAddr> = tokio::net::lookup_host((host, port))
        .await
        .map_err(|e| LookupFailed {
            host: host.to_owned(),
            error: e,
        })?
        .collect();
    let mut why = None;
    let allowed: Vec<std::net::SocketAddr> = found
        .into_iter()
        .filter(|addr| match policy.check_addr(Some(host), addr.ip()) {
            Ok(()) => true,
            Err(e) => {
                why.get_or_insert(e);
                false
            }
        })
        .collect();
    if allowed.is_empty() {
        let why = why.unwrap_or_else(|| "resolves to no address".into());
        return Err(Box::new(RefusedAddress(format!("{host} {why}"))));
    }
    Ok(allowed)
}

/// A host name that resolved only to addresses a judge (or a webhook) may not reach.
#[derive(Debug)]
pub(crate) struct RefusedAddress(pub(super) String);

impl std::fmt::Display for RefusedAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Error for RefusedAddress {}

/// A host name that could not be looked up.
#[derive(Debug)]
struct LookupFailed {
    host: String,
    error: io::Error,
}

impl LookupFailed {
    fn cause(&self) -> Cause {
        let why = self.error.to_string();
        // The standard library hands on getaddrinfo's failures as text only (an
        // uncategorized `io::Error`), so a resolver that did not answer (EAI_AGAIN) is
        // told from a name that does not exist by its words.
        let lower = why.to_ascii_lowercase();
        if lower.contains("temporary failure") || lower.contains("try again") {
            Cause::Dns {
                host: self.host.clone(),
                why,
            }
        } else {
            Cause::NoSuchHost {
                host: self.host.clone(),
            }
        }
    }
}

impl std::fmt::Display for LookupFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "looking up {}: {}", self.host, self.error)
    }
}

impl Error for LookupFailed {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&self.error)
    }
}

/// `e` and its sources, outermost first.
fn chain(e: &reqwest::Error) -> impl Iterator<Item = &(dyn Error + 'static)> {
    std::iter::successors(Some(e as &(dyn Error + 'static)), |&err| err.source())
}

/// What reqwest was doing ("error sending request for url (…)") and the innermost cause.
fn chain_text(e: &reqwest::Error) -> String {
    let (what, why) = (
        e.to_string(),
        chain(e).last().map(ToString::to_string).unwrap_or_default(),
    );
    if why == what {
        what
    } else {
        format!("{what}: {why}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_causes_that_may_go_otherwise_are_retried() {
        let at = || "127.0.0.1:9".to_owned();
        for cause in [
            Cause::Refused { at: at() },
            Cause::NotHttp {
                at: at(),
                said: None,
            },
            Cause::Tls {
                at: at(),
                why: "bad certificate".into(),
            },
            Cause::NoSuchHost { host: "x".into() },
        ] {
            assert!(!cause.retryable(), "{cause:?}");
        }
        for cause in [
            Cause::Dropped { at: at() },
            Cause::ReplyTimeout {
                after: Duration::from_secs(1),
            },
            Cause::ConnectTimeout {
                at: at(),
                after: Duration::from_secs(10),
            },
            Cause::Dns {
                host: "x".into(),
                why: "Temporary failure in name resolution".into(),
            },
        ] {
            assert!(cause.retryable(), "{cause:?}");
        }
    }

    #[test]
    fn a_non_http_answer_is_quoted_short_on_one_line() {
        assert_eq!(
            printable(b"SSH-2.0-OpenSSH_9.2\r\nmore"),
            "SSH-2.0-OpenSSH_9.2"
        );
        assert_eq!(printable(b"\x1b[31mred"), "[31mred");
        assert_eq!(printable(&[b'x'; 100]).len(), QUOTED_CHARS);
    }
}
