//! Where a judge or a webhook may be sent, and how much of a judge's reply is kept: the
//! rules checked when one is configured and again, on the addresses its host resolves
//! to, when it is sent. Link-local and metadata addresses (every cloud's, in every
//! spelling), the unspecified address, broadcast and multicast, and URLs carrying
//! credentials are never reached. Internal addresses (loopback, private, unique local,
//! carrier-grade NAT and other reserved ranges) are for judges (local model servers are
//! their main use, and a server may narrow the hosts with `--judge-allow-hosts`), but not
//! for webhooks, which any lead may point anywhere, unless an admin allows them by name or
//! network with `--webhook-allow-hosts`.

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

/// Where a server lets its judges (the default) or its webhooks be sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointPolicy {
    /// Judges: the only hosts they may be sent to (none: any but the refused ranges).
    /// Webhooks: the internal hosts and networks they may reach beside every public one.
    pub allow_hosts: Option<Vec<AllowedHost>>,
    /// Whether internal addresses may be reached without being allowed by name.
    pub reach_internal: bool,
    /// What is sent, and the flag that allows hosts, as refusals name them.
    pub sends: &'static str,
    pub flag: &'static str,
    /// The largest reply limit a judge may set.
    pub max_reply_bytes: u64,
}

impl Default for EndpointPolicy {
    /// The judges' policy with no hosts listed.
    fn default() -> Self {
        Self {
            allow_hosts: None,
            reach_internal: true,
            sends: "judges",
            flag: "--judge-allow-hosts",
            max_reply_bytes: 64 * 1024 * 1024,
        }
    }
}

impl EndpointPolicy {
    /// The webhooks' policy: public addresses, and the internal ones `allow_hosts` names.
    pub fn webhooks(allow_hosts: Option<Vec<AllowedHost>>) -> Self {
        Self {
            allow_hosts,
            reach_internal: false,
            sends: "webhooks",
            flag: "--webhook-allow-hosts",
            ..Self::default()
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
        // The URL parser has already read odd spellings of addresses (`0`, `2852039166`,
        // `0x7f000001`, `0177.0.0.1`, `127.1`) as the addresses they are.
        let host = url.host_str().ok_or("must name a host")?;
        if let Ok(ip) = host.trim_start_matches('[').trim_end_matches(']').parse() {
            return self.check_addr(None, ip);
        }
        let name = host.trim_end_matches('.').to_ascii_lowercase();
        // `localhost` is loopback by definition (RFC 6761), whatever a resolver says.
        let loopback_name = name == "localhost" || name.ends_with(".localhost");
        if loopback_name && !self.reach_internal && !self.allows(Some(&name), None) {
            return Err(self.internal_refusal(&name, "a loopback name"));
        }
        match &self.allow_hosts {
            Some(allowed)
                if self.reach_internal && !allowed.iter().any(|a| a.allows_name(host)) =>
            {
                Err(format!(
                    "names a host this server does not allow {} to reach ({}: {})",
                    self.sends,
                    self.flag,
                    list(allowed)
                ))
            }
            _ => Ok(()),
        }
    }

    /// Why nothing may be sent to `ip` (what `host`, if a name, resolved to), or `Ok`.
    pub fn check_addr(&self, host: Option<&str>, ip: IpAddr) -> Result<(), String> {
        match classify(ip) {
            Some(Class::Never(why)) => Err(format!(
                "reaches {ip}, {why}, which {} are never sent to",
                self.sends
            )),
            Some(Class::Internal(why)) if !self.reach_internal => {
                if self.allows(host, Some(ip)) {
                    Ok(())
                } else {
                    Err(self.internal_refusal(&ip.to_string(), why))
                }
            }
            _ => match &self.allow_hosts {
                Some(allowed) if self.reach_internal && !self.allows(host, Some(ip)) => {
                    Err(format!(
                        "reaches {ip}, which this server does not allow {} to reach ({}: {})",
                        self.sends,
                        self.flag,
                        list(allowed)
                    ))
                }
                _ => Ok(()),
            },
        }
    }

    /// Whether the listed hosts take `host` (a name) or `ip`.
    fn allows(&self, host: Option<&str>, ip: Option<IpAddr>) -> bool {
        self.allow_hosts.as_ref().is_some_and(|allowed| {
            allowed.iter().any(|a| {
                ip.is_some_and(|ip| a.allows_addr(ip))
                    || host.is_some_and(|name| a.allows_name(name))
            })
        })
    }

    fn internal_refusal(&self, what: &str, why: &str) -> String {
        format!(
            "reaches {what}, {why}, which {} are not sent to unless an admin allows it ({})",
            self.sends, self.flag
        )
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

/// The IPv4 address an IPv6 one carries: mapped (`::ffff:a.b.c.d`), IPv4-translated
/// (`::ffff:0:a.b.c.d`), compatible (`::a.b.c.d`), NAT64's well-known prefix
/// (`64:ff9b::a.b.c.d`), 6to4 (`2002:aabb:ccdd::`) or Teredo (the client's address,
/// inverted, in the last 32 bits of `2001:0::/32`).
fn v4_inside(ip: IpAddr) -> Option<Ipv4Addr> {
    let IpAddr::V6(v6) = ip else { return None };
    if let Some(v4) = v6.to_ipv4_mapped() {
        return Some(v4);
    }
    let [.., a, b, c, d] = v6.octets();
    let tail = Ipv4Addr::new(a, b, c, d);
    let s = v6.segments();
    let compatible = s[..6] == [0; 6] && !v6.is_unspecified() && !v6.is_loopback();
    let translated = s[..6] == [0, 0, 0, 0, 0xffff, 0];
    let nat64 = s[..6] == [0x64, 0xff9b, 0, 0, 0, 0];
    if compatible || translated || nat64 {
        return Some(tail);
    }
    let o = v6.octets();
    if s[0] == 0x2002 {
        return Some(Ipv4Addr::new(o[2], o[3], o[4], o[5]));
    }
    if s[0] == 0x2001 && s[1] == 0 {
        return Some(Ipv4Addr::from(!u32::from(tail)));
    }
    None
}

/// How an address that is not plainly public is treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// Never reached, whatever is allowed: why.
    Never(&'static str),
    /// Reached by judges, and by webhooks only where an admin allows it: why.
    Internal(&'static str),
}

/// How `ip` is treated, or `None` for a public address.
fn classify(ip: IpAddr) -> Option<Class> {
    if let IpAddr::V6(v6) = ip {
        let s = v6.segments();
        // NAT64's local-use prefix can be set up to reach any IPv4 address, in any of
        // the embeddings RFC 6052 allows: no one address inside it can be read off.
        if s[..3] == [0x64, 0xff9b, 1] {
            return Some(Class::Never(
                "a local-use NAT64 address (it may stand for any IPv4 address)",
            ));
        }
    }
    if let Some(v4) = v4_inside(ip) {
        return classify_v4(v4);
    }
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<Class> {
    /// Alibaba Cloud's metadata service (inside the carrier-grade NAT range).
    const ALIBABA_METADATA: Ipv4Addr = Ipv4Addr::new(100, 100, 100, 200);
    /// Azure's wire server, which hands a virtual machine its configuration.
    const AZURE_WIRE_SERVER: Ipv4Addr = Ipv4Addr::new(168, 63, 129, 16);
    let [a, b, ..] = ip.octets();
    let never = if ip.is_link_local() {
        Some("a link-local address (where cloud metadata services answer)")
    } else if ip == ALIBABA_METADATA || ip == AZURE_WIRE_SERVER {
        Some("a cloud metadata address")
    } else if a == 0 {
        Some("the unspecified address (\"this host\")")
    } else if ip.is_broadcast() || ip.is_multicast() {
        Some("a broadcast or multicast address")
    } else {
        None
    };
    if let Some(why) = never {
        return Some(Class::Never(why));
    }
    let internal = if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_private() {
        Some("a private address")
    } else if a == 100 && (64..128).contains(&b) {
        Some("a carrier-grade NAT address")
    } else if (a == 192 && b == 0 && ip.octets()[2] == 0) || (a == 198 && (18..20).contains(&b)) {
        Some("a special-purpose address")
    } else if a >= 240 {
        Some("a reserved address")
    } else {
        None
    };
    internal.map(Class::Internal)
}

fn classify_v6(ip: Ipv6Addr) -> Option<Class> {
    /// AWS's metadata service over IPv6.
    const METADATA: Ipv6Addr = Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254);
    let first = ip.segments()[0];
    if ip.is_unspecified() {
        Some(Class::Never("the unspecified address"))
    } else if first & 0xffc0 == 0xfe80 {
        Some(Class::Never("a link-local address"))
    } else if ip == METADATA {
        Some(Class::Never("a cloud metadata address"))
    } else if ip.is_multicast() {
        Some(Class::Never("a multicast address"))
    } else if ip.is_loopback() {
        Some(Class::Internal("a loopback address"))
    } else if first & 0xfe00 == 0xfc00 {
        Some(Class::Internal("a unique local address"))
    } else if first & 0xffc0 == 0xfec0 {
        Some(Class::Internal("a site-local address"))
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
    fn webhooks_reach_public_addresses_and_only_the_internal_ones_an_admin_allows() {
        let guarded = EndpointPolicy::webhooks(None);
        for url in [
            "http://127.0.0.1/",
            "http://2130706433/",
            "http://0x7f000001/",
            "http://0177.0.0.1/",
            "http://127.1/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::1]/",
            "http://LOCALHOST./",
            "http://db.localhost/",
            "http://10.0.0.1/",
            "http://172.31.255.255/",
            "http://192.168.0.1/",
            "http://100.64.0.1/",
            "http://[fd00::1]/",
            "http://[fec0::1]/",
            "http://198.18.0.1/",
            "http://240.0.0.1/",
            "http://[2002:0a00:0001::1]/",
            "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/",
        ] {
            let refused = check(&guarded, url).expect_err(url);
            assert!(
                refused.contains("--webhook-allow-hosts"),
                "{url}: {refused}"
            );
        }
        for url in [
            "http://169.254.169.254/",
            "http://100.100.100.200/",
            "http://168.63.129.16/",
            "http://[2002:a9fe:a9fe::1]/",
            "http://[64:ff9b:1::a9fe:a9fe]/",
            "http://[64:ff9b:1:ffff::1]/",
            "http://[::ffff:0:a9fe:a9fe]/",
            "http://[64:ff9b::a9fe:a9fe]/",
            "http://0/",
            "http://255.255.255.255/",
            "http://224.0.0.1/",
        ] {
            let refused = check(&guarded, url).expect_err(url);
            assert!(
                refused.contains("webhooks are never sent to"),
                "{url}: {refused}"
            );
            // Judges never reach them either, whatever a server allows.
            assert!(check(&EndpointPolicy::default(), url).is_err(), "{url}");
        }
        for url in [
            "https://hooks.example.com/x",
            "http://93.184.216.34/",
            "http://[2606:4700::1]/",
        ] {
            assert_eq!(check(&guarded, url), Ok(()), "{url}");
        }
        let allowed = EndpointPolicy::webhooks(Some(
            ["10.1.0.0/16", "hooks.internal", "localhost"]
                .iter()
                .map(|h| h.parse().expect("a host"))
                .collect(),
        ));
        assert_eq!(check(&allowed, "http://10.1.2.3/"), Ok(()));
        assert_eq!(check(&allowed, "http://localhost:9/"), Ok(()));
        assert!(check(&allowed, "http://10.2.0.1/").is_err());
        // The list widens, it does not narrow: public hosts stay reachable.
        assert_eq!(check(&allowed, "https://hooks.example.com/x"), Ok(()));
        let ip: IpAddr = "10.9.9.9".parse().unwrap();
        assert_eq!(allowed.check_addr(Some("hooks.internal"), ip), Ok(()));
        assert!(allowed.check_addr(Some("elsewhere.example"), ip).is_err());
        let metadata: IpAddr = "169.254.169.254".parse().unwrap();
        assert!(
            allowed
                .check_addr(Some("hooks.internal"), metadata)
                .is_err()
        );
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
