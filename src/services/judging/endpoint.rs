//! Where a judge may be sent, and how much of its reply is kept: the rules checked when a
//! judge is configured and again when it is called. Loopback and private addresses stay
//! allowed (local model servers are the main use); link-local and metadata addresses,
//! the unspecified address and URLs carrying credentials never are. A server may narrow
//! the hosts further (`--judge-allow-hosts`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;

/// The most of a reply read when a judge sets no limit of its own.
pub const DEFAULT_MAX_REPLY_BYTES: u64 = 4 * 1024 * 1024;

/// The smallest reply limit a judge may set: a chat completion needs some room.
pub const MIN_MAX_REPLY_BYTES: u64 = 1024;

/// The most of a raw output or an error text that is stored with a call.
pub const MAX_STORED_BYTES: usize = 64 * 1024;

/// The most of an endpoint's error reply kept (shown to admins only).
pub const MAX_ERROR_BODY_CHARS: usize = 200;

/// A host a server allows judges to be sent to: by name, or a network of addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowedHost {
    Name(String),
    Net(IpNet),
}

impl std::str::FromStr for AllowedHost {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("an empty host".into());
        }
        if let Ok(net) = text.parse::<IpNet>() {
            return Ok(AllowedHost::Net(net.trunc()));
        }
        if let Ok(ip) = text.trim_matches(['[', ']']).parse::<IpAddr>() {
            return Ok(AllowedHost::Net(IpNet::from(ip)));
        }
        let name = text.trim_end_matches('.').to_ascii_lowercase();
        if name.contains('/')
            || !name
                .chars()
                .all(|c| c.is_alphanumeric() || "-.".contains(c))
        {
            return Err(format!(
                "{text:?} is neither a host name, an address nor a CIDR"
            ));
        }
        Ok(AllowedHost::Name(name))
    }
}

impl std::fmt::Display for AllowedHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AllowedHost::Name(name) => f.write_str(name),
            AllowedHost::Net(net) => write!(f, "{net}"),
        }
    }
}

/// What a server lets its judges do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointPolicy {
    /// The hosts judges may be sent to; none: any but the refused ranges.
    pub allow_hosts: Option<Vec<AllowedHost>>,
    /// The largest reply limit a judge may set.
    pub max_reply_bytes: u64,
}

impl Default for EndpointPolicy {
    fn default() -> Self {
        Self {
            allow_hosts: None,
            max_reply_bytes: 64 * 1024 * 1024,
        }
    }
}

impl EndpointPolicy {
    /// Why a judge may not be sent to `url`, or `Ok`. The URL's host is checked as
    /// written: an address against the refused ranges and the allowed hosts, a name
    /// against the allowed hosts (its addresses are checked when it is called).
    pub fn check_url(&self, url: &reqwest::Url) -> Result<(), String> {
        if !url.username().is_empty() || url.password().is_some() {
            return Err("must not carry a user name or password (give the key as api_key)".into());
        }
        // The URL parser has already read odd spellings of addresses (`0`, `2852039166`)
        // as the addresses they are.
        let host = url.host_str().ok_or("must name a host")?;
        if let Ok(ip) = host.trim_start_matches('[').trim_end_matches(']').parse() {
            return self.check_addr(None, ip);
        }
        match &self.allow_hosts {
            Some(allowed) if !allowed.iter().any(|a| a.allows_name(host)) => Err(format!(
                "names a host this server does not allow judges to reach (--judge-allow-hosts: {})",
                list(allowed)
            )),
            _ => Ok(()),
        }
    }

    /// Why a judge may not be sent to `ip` (what `host`, if a name, resolved to), or `Ok`.
    pub fn check_addr(&self, host: Option<&str>, ip: IpAddr) -> Result<(), String> {
        if let Some(why) = refused(ip) {
            return Err(format!(
                "reaches {ip}, {why}, which judges are never sent to"
            ));
        }
        match &self.allow_hosts {
            Some(allowed)
                if !allowed
                    .iter()
                    .any(|a| a.allows_addr(ip) || host.is_some_and(|name| a.allows_name(name))) =>
            {
                Err(format!(
                    "reaches {ip}, which this server does not allow judges to reach (--judge-allow-hosts: {})",
                    list(allowed)
                ))
            }
            _ => Ok(()),
        }
    }

    /// The reply limit of a judge that sets `own` (or none): at most the server's.
    pub fn reply_limit(&self, own: Option<u64>) -> u64 {
        own.unwrap_or(DEFAULT_MAX_REPLY_BYTES)
            .min(self.max_reply_bytes)
    }
}

impl AllowedHost {
    fn allows_name(&self, name: &str) -> bool {
        match self {
            AllowedHost::Name(allowed) => allowed.eq_ignore_ascii_case(name.trim_end_matches('.')),
            AllowedHost::Net(_) => false,
        }
    }

    fn allows_addr(&self, ip: IpAddr) -> bool {
        match self {
            AllowedHost::Net(net) => {
                net.contains(&ip) || v4_inside(ip).is_some_and(|v4| net.contains(&IpAddr::V4(v4)))
            }
            AllowedHost::Name(_) => false,
        }
    }
}

fn list(allowed: &[AllowedHost]) -> String {
    allowed
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The IPv4 address an IPv6 one carries: mapped (`::ffff:a.b.c.d`), compatible
/// (`::a.b.c.d`) or NAT64 (`64:ff9b::a.b.c.d`).
fn v4_inside(ip: IpAddr) -> Option<Ipv4Addr> {
    let IpAddr::V6(v6) = ip else { return None };
    if let Some(v4) = v6.to_ipv4_mapped() {
        return Some(v4);
    }
    let [.., a, b, c, d] = v6.octets();
    let tail = Ipv4Addr::new(a, b, c, d);
    let s = v6.segments();
    let compatible = s[..6] == [0; 6] && !v6.is_unspecified() && !v6.is_loopback();
    let nat64 = s[..6] == [0x64, 0xff9b, 0, 0, 0, 0];
    (compatible || nat64).then_some(tail)
}

/// Why an address is never reached, or `None`.
fn refused(ip: IpAddr) -> Option<&'static str> {
    if let Some(v4) = v4_inside(ip) {
        return refused_v4(v4);
    }
    match ip {
        IpAddr::V4(v4) => refused_v4(v4),
        IpAddr::V6(v6) => refused_v6(v6),
    }
}

fn refused_v4(ip: Ipv4Addr) -> Option<&'static str> {
    if ip.is_link_local() {
        Some("a link-local address (where cloud metadata services answer)")
    } else if ip.octets()[0] == 0 {
        Some("the unspecified address (\"this host\")")
    } else if ip.is_broadcast() || ip.is_multicast() {
        Some("a broadcast or multicast address")
    } else {
        None
    }
}

fn refused_v6(ip: Ipv6Addr) -> Option<&'static str> {
    /// AWS's metadata service over IPv6.
    const METADATA: Ipv6Addr = Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254);
    if ip.is_unspecified() {
        Some("the unspecified address")
    } else if ip.segments()[0] & 0xffc0 == 0xfe80 {
        Some("a link-local address")
    } else if ip == METADATA {
        Some("a cloud metadata address")
    } else if ip.is_multicast() {
        Some("a multicast address")
    } else {
        None
    }
}

/// `text` kept to `max` bytes (on a character boundary), with a marker saying how much
/// more there was.
pub fn cap(text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let cut = text.len() - end;
    let mut out = text;
    out.truncate(end);
    out.push_str(&format!(
        "\n[… {cut} more bytes not stored: verdict keeps {} KiB of it]",
        max / 1024
    ));
    out
}

/// A size in words: `4 MiB`, `12 KiB`, `900 bytes`.
pub fn size_text(bytes: u64) -> String {
    if bytes >= 1024 * 1024 && bytes % (1024 * 1024) == 0 {
        format!("{} MiB", bytes / (1024 * 1024))
    } else if bytes >= 1024 && bytes % 1024 == 0 {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(policy: &EndpointPolicy, url: &str) -> Result<(), String> {
        policy.check_url(&reqwest::Url::parse(url).expect("a URL"))
    }

    #[test]
    fn link_local_metadata_unspecified_and_credentials_are_refused_in_every_spelling() {
        let open = EndpointPolicy::default();
        for url in [
            "http://169.254.169.254/v1",
            "http://2852039166/v1",
            "http://0/v1",
            "http://0.0.0.0:8080/v1",
            "http://[::]/v1",
            "http://[fe80::1]/v1",
            "http://[::ffff:169.254.169.254]/v1",
            "http://[64:ff9b::a9fe:a9fe]/v1",
            "http://[fd00:ec2::254]/v1",
            "http://user:pw@127.0.0.1/v1",
            "http://user@localhost/v1",
        ] {
            assert!(check(&open, url).is_err(), "{url}");
        }
        for url in [
            "http://127.0.0.1:8081/v1",
            "http://[::1]:8081/v1",
            "http://10.1.2.3/v1",
            "http://192.168.1.9/v1",
            "http://localhost:8081/v1",
            "https://api.openai.com/v1",
        ] {
            assert_eq!(check(&open, url), Ok(()), "{url}");
        }
    }

    #[test]
    fn an_allow_list_narrows_by_name_and_network() {
        let policy = EndpointPolicy {
            allow_hosts: Some(
                ["llm.internal", "10.0.0.0/8", "::1"]
                    .iter()
                    .map(|h| h.parse().expect("a host"))
                    .collect(),
            ),
            ..EndpointPolicy::default()
        };
        assert_eq!(check(&policy, "http://LLM.internal:8000/v1"), Ok(()));
        assert_eq!(check(&policy, "http://10.9.8.7/v1"), Ok(()));
        assert_eq!(check(&policy, "http://[::1]/v1"), Ok(()));
        assert!(check(&policy, "http://127.0.0.1/v1").is_err());
        assert!(check(&policy, "http://api.openai.com/v1").is_err());
        // A listed name reaches what it resolves to, unless that is never reached.
        let ip: IpAddr = "192.168.0.4".parse().unwrap();
        assert_eq!(policy.check_addr(Some("llm.internal"), ip), Ok(()));
        assert!(policy.check_addr(Some("other.host"), ip).is_err());
        let metadata: IpAddr = "169.254.169.254".parse().unwrap();
        assert!(policy.check_addr(Some("llm.internal"), metadata).is_err());
        assert!("a/b/c".parse::<AllowedHost>().is_err());
    }

    #[test]
    fn the_reply_limit_is_the_judges_within_the_servers() {
        let policy = EndpointPolicy {
            max_reply_bytes: 2 * 1024 * 1024,
            ..EndpointPolicy::default()
        };
        assert_eq!(policy.reply_limit(None), 2 * 1024 * 1024);
        assert_eq!(policy.reply_limit(Some(5000)), 5000);
        assert_eq!(
            EndpointPolicy::default().reply_limit(None),
            DEFAULT_MAX_REPLY_BYTES
        );
    }

    #[test]
    fn long_texts_are_capped_with_a_marker_on_a_character_boundary() {
        assert_eq!(cap("short".into(), 10), "short");
        let capped = cap("é".repeat(10), 5);
        assert!(
            capped.starts_with("éé\n[… 16 more bytes not stored"),
            "{capped}"
        );
        assert_eq!(size_text(4 * 1024 * 1024), "4 MiB");
        assert_eq!(size_text(2048), "2 KiB");
        assert_eq!(size_text(1500), "1500 bytes");
    }
}
