//! The client's network address: the connection's peer, or, when that peer is a trusted
//! reverse proxy, the address the proxies forwarded in `X-Forwarded-For`.
//!
//! Only the right end of `X-Forwarded-For` is believed: each trusted proxy appends the
//! address it was connected from, so reading from the right, the first address that is
//! not a trusted proxy is the one that connected to the outermost of them. Whatever
//! stands left of it came from the client and could be anything.

use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::HeaderMap;
use axum::http::request::Parts;
use ipnet::IpNet;

use crate::error::AppError;
use crate::state::AppState;

/// Reads `--trusted-proxies`: addresses or CIDR networks, separated by commas (blank
/// entries are ignored, so an empty setting trusts none). A bad entry is named.
pub fn parse_trusted_proxies(list: &str) -> Result<Vec<IpNet>, String> {
    list.split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .map(|entry| {
            entry
                .parse::<IpNet>()
                .or_else(|_| entry.parse::<IpAddr>().map(IpNet::from))
                .map_err(|_| {
                    format!(
                        "trusted proxy {entry:?} is not an address or a CIDR network \
                         (e.g. 172.30.80.10 or 10.0.0.0/8)"
                    )
                })
        })
        .collect()
}

/// The client of a request that `peer` connected for, given the proxies trusted.
pub fn client_address(peer: IpAddr, headers: &HeaderMap, trusted: &[IpNet]) -> IpAddr {
    let is_trusted = |address: &IpAddr| trusted.iter().any(|net| net.contains(address));
    let mut client = peer.to_canonical();
    if !is_trusted(&client) {
        return client;
    }
    let forwarded: Vec<&str> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(str::trim)
        .collect();
    for entry in forwarded.into_iter().rev() {
        let Some(address) = forwarded_address(entry) else {
            // Unreadable: the last trusted hop is all that is known.
            return client;
        };
        client = address;
        if !is_trusted(&client) {
            return client;
        }
    }
    client
}

/// One entry of `X-Forwarded-For`: an address, perhaps with a port.
fn forwarded_address(entry: &str) -> Option<IpAddr> {
    entry
        .parse::<IpAddr>()
        .ok()
        .or_else(|| entry.parse::<SocketAddr>().ok().map(|s| s.ip()))
        .map(|address| address.to_canonical())
}

/// The address of the client a request comes from (see the module's docs).
pub struct ClientAddress(pub IpAddr);

impl FromRequestParts<AppState> for ClientAddress {
    type Rejection = AppError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, AppError> {
        let ConnectInfo(peer) = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .copied()
            .ok_or_else(|| AppError::internal("connection info missing"))?;
        Ok(Self(client_address(
            peer.ip(),
            &parts.headers,
            &state.config().trusted_proxies,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for value in values {
            map.append("x-forwarded-for", value.parse().unwrap());
        }
        map
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn entries_are_addresses_or_networks_and_a_bad_one_is_named() {
        let nets = parse_trusted_proxies(" 172.30.80.10, 10.0.0.0/8,,fd00::/8 ").unwrap();
        assert_eq!(nets.len(), 3);
        assert!(nets[0].contains(&ip("172.30.80.10")));
        assert!(!nets[0].contains(&ip("172.30.80.11")));
        assert!(nets[1].contains(&ip("10.1.2.3")));
        assert_eq!(parse_trusted_proxies("").unwrap(), vec![]);
        for bad in ["10.0.0.0/33", "caddy", "10.0.0.1;10.0.0.2"] {
            let why = parse_trusted_proxies(&format!("10.0.0.1,{bad}")).unwrap_err();
            assert!(why.contains(&format!("{bad:?}")), "{why}");
        }
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_forwards() {
        let trusted = parse_trusted_proxies("10.0.0.5").unwrap();
        let forged = headers(&["198.51.100.7"]);
        assert_eq!(
            client_address(ip("203.0.113.5"), &forged, &trusted),
            ip("203.0.113.5")
        );
        assert_eq!(
            client_address(ip("203.0.113.5"), &forged, &[]),
            ip("203.0.113.5")
        );
    }

    #[test]
    fn behind_trusted_proxies_the_rightmost_untrusted_address_is_the_client() {
        let trusted = parse_trusted_proxies("10.0.0.0/24").unwrap();
        let proxy = ip("10.0.0.5");
        // What the client wrote itself stands left of what the proxy appended.
        let spoofed = headers(&["198.51.100.7, 203.0.113.5"]);
        assert_eq!(client_address(proxy, &spoofed, &trusted), ip("203.0.113.5"));
        // Two trusted hops, and the header split over two lines.
        let chained = headers(&["198.51.100.7", "203.0.113.5, 10.0.0.9"]);
        assert_eq!(client_address(proxy, &chained, &trusted), ip("203.0.113.5"));
        let with_port = headers(&["[2001:db8::1]:4711"]);
        assert_eq!(
            client_address(proxy, &with_port, &trusted),
            ip("2001:db8::1")
        );
        // Nothing forwarded, or nothing readable: the proxy is all that is known.
        assert_eq!(client_address(proxy, &HeaderMap::new(), &trusted), proxy);
        assert_eq!(
            client_address(proxy, &headers(&["not an address"]), &trusted),
            proxy
        );
        // IPv4 written as IPv6 is trusted as IPv4.
        assert_eq!(
            client_address(ip("::ffff:10.0.0.5"), &headers(&["203.0.113.5"]), &trusted),
            ip("203.0.113.5")
        );
    }
}
