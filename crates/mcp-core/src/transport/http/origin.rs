//! `Host` and `Origin` checks: DNS-rebinding and cross-site protection for the MCP endpoint.

use super::config::Access;

/// An accepted `Host`: a host name or address, and a port if one was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AllowedHost {
    host: String,
    port: Option<u16>,
}

impl AllowedHost {
    /// `localhost`, `127.0.0.1` and `::1` on any port.
    pub(super) fn loopback() -> Vec<Self> {
        ["localhost", "127.0.0.1", "::1"]
            .into_iter()
            .map(|host| Self {
                host: host.to_owned(),
                port: None,
            })
            .collect()
    }

    /// `host` or `host:port`; `None` if it is neither.
    pub(super) fn parse(entry: &str) -> Option<Self> {
        let entry = entry.trim();
        if entry.is_empty() {
            return None;
        }
        let authority = http::uri::Authority::try_from(entry).ok()?;
        Some(Self {
            host: normalize_host(authority.host()),
            port: authority.port_u16(),
        })
    }
}

/// An accepted `Origin`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AllowedOrigin {
    /// The literal `null` origin of sandboxed documents.
    Null,
    /// `scheme://host`, on one port (`Some`) or any (`None`).
    Tuple {
        scheme: String,
        host: String,
        port: Option<u16>,
    },
}

impl AllowedOrigin {
    /// `http(s)://localhost`, `127.0.0.1` and `[::1]` on any port.
    pub(super) fn loopback() -> Vec<Self> {
        ["http", "https"]
            .into_iter()
            .flat_map(|scheme| {
                ["localhost", "127.0.0.1", "::1"].map(|host| Self::Tuple {
                    scheme: scheme.to_owned(),
                    host: host.to_owned(),
                    port: None,
                })
            })
            .collect()
    }

    /// `null`, `scheme://host`, `scheme://host:port` or `scheme://host:*`. An entry without a
    /// port means the scheme's default port.
    pub(super) fn parse(entry: &str) -> Option<Self> {
        let entry = entry.trim();
        if entry == "null" {
            return Some(Self::Null);
        }
        if let Some(base) = entry.strip_suffix(":*") {
            let (scheme, host, _) = parse_origin(base)?;
            return Some(Self::Tuple {
                scheme,
                host,
                port: None,
            });
        }
        let (scheme, host, port) = parse_origin(entry)?;
        Some(Self::Tuple {
            scheme,
            host,
            port: Some(port),
        })
    }

    fn matches(&self, origin: &str) -> bool {
        match self {
            Self::Null => origin == "null",
            Self::Tuple { scheme, host, port } => {
                parse_origin(origin).is_some_and(|(their_scheme, their_host, their_port)| {
                    *scheme == their_scheme
                        && *host == their_host
                        && port.is_none_or(|port| port == their_port)
                })
            }
        }
    }
}

/// `(scheme, host, port)` of a serialized origin, the port defaulted from the scheme.
fn parse_origin(origin: &str) -> Option<(String, String, u16)> {
    let uri: http::Uri = origin.parse().ok()?;
    let scheme = uri.scheme_str()?.to_ascii_lowercase();
    let authority = uri.authority()?;
    // An origin is only scheme, host and port: no path, query or user info.
    if uri.path_and_query().is_some_and(|p| p.as_str() != "/") || authority.as_str().contains('@') {
        return None;
    }
    let port = match (authority.port_u16(), scheme.as_str()) {
        (Some(port), _) => port,
        (None, "https") => 443,
        (None, "http") => 80,
        (None, _) => return None,
    };
    Some((scheme, normalize_host(authority.host()), port))
}

fn normalize_host(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase()
}

/// Why a request was refused before it reached the MCP endpoint.
#[derive(Debug)]
pub(super) enum Refusal {
    /// No usable `Host` (`400`).
    BadHost(&'static str),
    /// A `Host` outside the allowed list (`403`).
    Host(String),
    /// An `Origin` outside the allowed list (`403`).
    Origin(String),
}

/// Checks `Host` and `Origin` of a request to the MCP endpoint against `access`.
pub(super) fn check(access: &Access, parts: &http::request::Parts) -> Result<(), Refusal> {
    if let Some(hosts) = &access.hosts {
        let parsed;
        let (text, host, port) = match parts.headers.get(http::header::HOST) {
            Some(value) => {
                let text = value
                    .to_str()
                    .map_err(|_| Refusal::BadHost("the Host header is not text"))?;
                match plain_host(text) {
                    Some((host, port)) => (text, host, port),
                    None => {
                        parsed = http::uri::Authority::try_from(text)
                            .map_err(|_| Refusal::BadHost("the Host header is not host[:port]"))?;
                        (text, parsed.host(), parsed.port_u16())
                    }
                }
            }
            None => {
                let authority = parts
                    .uri
                    .authority()
                    .ok_or(Refusal::BadHost("the request has no Host header"))?;
                (authority.as_str(), authority.host(), authority.port_u16())
            }
        };
        // Compared without a lowered copy: the allowed names are stored lowered.
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let allowed = hosts.iter().any(|allowed| {
            allowed.host.eq_ignore_ascii_case(host)
                && allowed.port.is_none_or(|wanted| Some(wanted) == port)
        });
        if !allowed {
            return Err(Refusal::Host(text.to_owned()));
        }
    }
    if let Some(origins) = &access.origins {
        for value in parts.headers.get_all(http::header::ORIGIN) {
            let origin = String::from_utf8_lossy(value.as_bytes());
            if !origins.iter().any(|allowed| allowed.matches(&origin)) {
                return Err(Refusal::Origin(origin.into_owned()));
            }
        }
    }
    Ok(())
}

/// A `Host` of the usual form, a name or IPv4 address (letters, digits, `.` and `-`) and
/// maybe a port, read without copying it into an `http::uri::Authority`; `None` for
/// anything else, which `Authority` then parses (and refuses if it must).
fn plain_host(text: &str) -> Option<(&str, Option<u16>)> {
    let (host, port) = match text.split_once(':') {
        Some((host, port)) => {
            if port.is_empty() || port.len() > 5 || !port.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            (host, Some(port.parse::<u16>().ok()?))
        }
        None => (text, None),
    };
    let plain = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-');
    plain.then_some((host, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The usual `Host` values read as `http::uri::Authority` reads them; others are left
    /// to it.
    #[test]
    fn plain_hosts_read_as_an_authority_reads_them() {
        for text in [
            "localhost",
            "127.0.0.1:34645",
            "Example.COM:443",
            "a-b.example:0",
            "x:65535",
        ] {
            let authority = http::uri::Authority::try_from(text).unwrap();
            assert_eq!(
                plain_host(text),
                Some((authority.host(), authority.port_u16())),
                "{text}"
            );
        }
        for text in [
            "[::1]:8080",
            "host:",
            "host:65536",
            "host:+80",
            "user@host",
            "",
            ":80",
            "h\u{e9}te",
            "a b",
        ] {
            assert_eq!(plain_host(text), None, "{text}");
        }
    }

    #[test]
    fn origin_entries_parse_and_match_by_scheme_host_and_port() {
        let exact = AllowedOrigin::parse("https://App.example.com").unwrap();
        assert!(exact.matches("https://app.example.com"));
        assert!(exact.matches("https://app.example.com:443"));
        assert!(!exact.matches("http://app.example.com"));
        assert!(!exact.matches("https://app.example.com:8443"));
        let any_port = AllowedOrigin::parse("http://localhost:*").unwrap();
        assert!(any_port.matches("http://localhost:5173"));
        assert!(!any_port.matches("http://localhost.evil.com"));
        assert!(AllowedOrigin::parse("localhost").is_none());
        assert!(AllowedOrigin::parse("https://a.com/path").is_none());
        assert!(
            AllowedOrigin::loopback()
                .iter()
                .any(|o| o.matches("http://[::1]:8080"))
        );
    }
}
