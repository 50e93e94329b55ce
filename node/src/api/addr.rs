//! A node's API address as a person types it: `HOST:PORT`, or the URL `testnet init`
//! prints for each node (`http://HOST:PORT`, with or without a trailing `/`). Every flag
//! and variable that names a node's API (`--api`, `TRUST_API`, `run --state-sync`) reads
//! it through [`ApiAddr`], so they all accept the same forms and refuse the same way.

use std::{fmt, str::FromStr};

/// The forms an API address may take, as the error of a refused one lists them.
pub const ACCEPTED_FORMS: &str = "HOST:PORT or http://HOST:PORT, optionally with a trailing / (e.g. 127.0.0.1:8480 or http://127.0.0.1:8480/)";

/// A node's API address, `HOST:PORT` (a host name, an IPv4 address, or an IPv6 address
/// in brackets), as the client connects to it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ApiAddr(String);

/// Why a text is no API address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{input:?} is not a node API address ({why}): give {ACCEPTED_FORMS}")]
pub struct ApiAddrError {
    input: String,
    why: &'static str,
}

impl ApiAddr {
    /// The address as `HOST:PORT`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ApiAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<ApiAddr> for String {
    fn from(a: ApiAddr) -> String {
        a.0
    }
}

impl FromStr for ApiAddr {
    type Err = ApiAddrError;

    fn from_str(input: &str) -> Result<Self, Self::Err> {
        let bad = |why| ApiAddrError {
            input: input.to_string(),
            why,
        };
        let s = input.trim();
        let rest = match s.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => rest,
            Some((scheme, _)) if scheme.eq_ignore_ascii_case("https") => {
                return Err(bad("the node API speaks plain HTTP, not https"));
            }
            Some(_) => return Err(bad("the only scheme is http://")),
            None => s,
        };
        // One trailing slash, as a URL is often written; nothing after it.
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.contains(['/', '?', '#']) {
            return Err(bad("a path, query or fragment is not part of it"));
        }
        if rest.contains('@') {
            return Err(bad("a user name is not part of it"));
        }
        let (host, port) = match rest.strip_prefix('[') {
            Some(v6) => {
                let (ip, after) = v6
                    .split_once(']')
                    .ok_or_else(|| bad("an IPv6 address in [ ] is not closed"))?;
                ip.parse::<std::net::Ipv6Addr>()
                    .map_err(|_| bad("not an IPv6 address in [ ]"))?;
                let port = after
                    .strip_prefix(':')
                    .ok_or_else(|| bad("no :PORT after the host"))?;
                (format!("[{ip}]"), port)
            }
            None => {
                let (host, port) = rest
                    .rsplit_once(':')
                    .ok_or_else(|| bad("no :PORT after the host"))?;
                (host.to_string(), port)
            }
        };
        if host.is_empty() {
            return Err(bad("no host before :PORT"));
        }
        let host_ok = host.starts_with('[')
            || host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'));
        if !host_ok {
            return Err(bad("the host is not a host name or an IP address"));
        }
        match port.parse::<u16>() {
            Ok(p) if p > 0 && port.bytes().all(|b| b.is_ascii_digit()) => {}
            _ => return Err(bad("the port is not a number from 1 to 65535")),
        }
        Ok(Self(format!("{host}:{port}")))
    }
}

#[cfg(test)]
mod tests {
    use super::ApiAddr;

    fn parse(s: &str) -> Result<String, String> {
        s.parse::<ApiAddr>()
            .map(|a| a.to_string())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn host_port_and_the_url_testnet_init_prints_are_the_same_address() {
        for s in [
            "127.0.0.1:31002",
            "http://127.0.0.1:31002",
            "http://127.0.0.1:31002/",
            "HTTP://127.0.0.1:31002",
            " 127.0.0.1:31002 ",
        ] {
            assert_eq!(parse(s).as_deref(), Ok("127.0.0.1:31002"), "{s}");
        }
        assert_eq!(parse("node0:8480").as_deref(), Ok("node0:8480"));
        assert_eq!(
            parse("http://localhost:8480/").as_deref(),
            Ok("localhost:8480")
        );
        assert_eq!(parse("[::1]:8480").as_deref(), Ok("[::1]:8480"));
        assert_eq!(parse("http://[::1]:8480/").as_deref(), Ok("[::1]:8480"));
    }

    #[test]
    fn anything_else_is_refused_naming_the_forms_accepted() {
        for (s, why) in [
            ("https://127.0.0.1:8480", "not https"),
            ("ftp://127.0.0.1:8480", "only scheme"),
            ("http://127.0.0.1:8480/v1/status", "path"),
            ("127.0.0.1:8480/v1", "path"),
            ("http://127.0.0.1:8480//", "path"),
            ("127.0.0.1:8480?x=1", "path"),
            ("http://user@127.0.0.1:8480", "user name"),
            ("127.0.0.1", "no :PORT"),
            ("http://127.0.0.1", "no :PORT"),
            (":8480", "no host"),
            ("127.0.0.1:0", "port"),
            ("127.0.0.1:99999", "port"),
            ("127.0.0.1:+80", "port"),
            ("127.0.0.1:http", "port"),
            ("garbage here:80", "host"),
            ("[::1:8480", "not closed"),
            ("[zz]:8480", "IPv6"),
            ("", "no :PORT"),
        ] {
            let e = parse(s).expect_err(s);
            assert!(e.contains(why), "{s}: {e}");
            assert!(
                e.contains("HOST:PORT or http://HOST:PORT"),
                "{s}: the accepted forms are not named: {e}"
            );
        }
    }
}
