//! The agent card the front serves: the upstream's, with this extension's entry (the
//! registry's card params) in `capabilities.extensions` and every interface URL pointed
//! at the front. The merge is a pure function; [`CardCache`] keeps the upstream's card.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::header::HeaderValue;
use serde_json::{Map, Value};

use crate::registry::Snapshot;
use crate::rules::card::EXTENSION_URI;

/// Which A2A versions an agent serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Versions {
    /// A2A 1.0.
    pub v10: bool,
    /// A2A 0.3.
    pub v03: bool,
}

impl Default for Versions {
    /// Nothing known: 1.0, as the front assumed before it read the agent's card.
    fn default() -> Self {
        Self {
            v10: true,
            v03: false,
        }
    }
}

/// The versions `card` says its agent serves: each interface's `protocolVersion` (1.0
/// cards), and a 0.3 card's top-level one. A card that names none is taken as 1.0.
pub fn versions(card: &Value) -> Versions {
    let mut named: Vec<&str> = card
        .get("supportedInterfaces")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|i| i.get("protocolVersion").and_then(Value::as_str))
        .collect();
    if let Some(top) = card.get("protocolVersion").and_then(Value::as_str) {
        named.push(top);
    }
    if named.is_empty() {
        return Versions::default();
    }
    Versions {
        v10: named.iter().any(|v| v.starts_with("1.") || *v == "1"),
        v03: named.iter().any(|v| v.starts_with("0.3")),
    }
}

/// The `host:port` of `card`'s gRPC interface, when it is on `upstream`'s own host
/// (the front forwards to its one upstream only, never to an address a card names).
/// A 1.0 interface (`supportedInterfaces`) is taken first, then a 0.3 card's
/// (`additionalInterfaces`, and its `url` when its preferred transport is gRPC).
pub fn grpc_address(card: &Value, upstream: &url::Url) -> Option<String> {
    grpc_urls(card).into_iter().find_map(|address| {
        let bare = address
            .split_once("://")
            .map_or(address, |(_, rest)| rest)
            .trim_start_matches('/')
            .trim_end_matches('/');
        let parsed = url::Url::parse(&format!("http://{bare}")).ok()?;
        let host = parsed.host_str()?;
        let port = parsed.port()?;
        let loopback = |h: &str| matches!(h, "localhost" | "127.0.0.1" | "[::1]" | "::1");
        let same = Some(host) == upstream.host_str()
            || (loopback(host) && upstream.host_str().is_some_and(loopback));
        same.then(|| format!("{host}:{port}"))
    })
}

/// The URLs of `card`'s gRPC interfaces, in the order [`grpc_address`] tries them.
fn grpc_urls(card: &Value) -> Vec<&str> {
    let mut urls = Vec::new();
    for (list, binding) in [
        ("supportedInterfaces", "protocolBinding"),
        ("additionalInterfaces", "transport"),
    ] {
        for interface in card
            .get(list)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if interface.get(binding).and_then(Value::as_str) == Some("GRPC") {
                if let Some(url) = interface.get("url").and_then(Value::as_str) {
                    urls.push(url);
                }
            }
        }
    }
    if card.get("preferredTransport").and_then(Value::as_str) == Some("GRPC") {
        if let Some(url) = card.get("url").and_then(Value::as_str) {
            urls.push(url);
        }
    }
    urls
}

/// The upstream's card as the front merges it: `card` with the extension entry
/// `extension` (replacing one with the same URI), every interface URL on `upstream`
/// moved to `public` (its path kept relative to the upstream's), and any `signatures`
/// dropped (they signed another card). Returns whether the card was signed: whether
/// at least one signature was dropped (an empty list, as `@a2a-js/sdk` serves, is no
/// signature). Every gRPC interface's address (1.0's, and a 0.3 card's: its gRPC
/// additional interface, and its `url` when gRPC is its preferred transport) becomes
/// `grpc` (the front's `host:port`) when the front serves gRPC for this agent;
/// otherwise it is left as it is.
pub fn merge(
    card: &mut Value,
    extension: &Value,
    upstream: &url::Url,
    public: &url::Url,
    grpc: Option<&str>,
) -> bool {
    let Some(object) = card.as_object_mut() else {
        return false;
    };
    let capabilities = object
        .entry("capabilities")
        .or_insert_with(|| Value::Object(Map::new()));
    if !capabilities.is_object() {
        *capabilities = Value::Object(Map::new());
    }
    let capabilities = capabilities.as_object_mut().expect("an object");
    let extensions = capabilities
        .entry("extensions")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !extensions.is_array() {
        *extensions = Value::Array(Vec::new());
    }
    let extensions = extensions.as_array_mut().expect("an array");
    extensions.retain(|e| e.get("uri").and_then(Value::as_str) != Some(EXTENSION_URI));
    extensions.push(extension.clone());

    // An interface's URL moved: a gRPC one to the front's gRPC address, when the front
    // serves gRPC for this agent, kept in the form the agent wrote (`host:port`, or
    // with a scheme); any other to the public URL, when it is the upstream's.
    let relocate = |url: &mut Value, is_grpc: bool| {
        let moved = url.as_str().and_then(|u| match (is_grpc, grpc) {
            (true, Some(front)) => Some(match u.split_once("://") {
                Some((scheme, _)) => format!("{scheme}://{front}"),
                None => front.to_owned(),
            }),
            (true, None) => None,
            (false, _) => rebase(u, upstream, public),
        });
        if let Some(moved) = moved {
            *url = Value::String(moved);
        }
    };
    // 1.0's interfaces, and a 0.3 card's additional ones (0.3's gRPC is another
    // service, `a2a.v1`, which the front's gRPC port passes to the agent as it came).
    for (list, binding) in [
        ("supportedInterfaces", "protocolBinding"),
        ("additionalInterfaces", "transport"),
    ] {
        let Some(interfaces) = object.get_mut(list).and_then(Value::as_array_mut) else {
            continue;
        };
        for interface in interfaces {
            let is_grpc = interface.get(binding).and_then(Value::as_str) == Some("GRPC");
            if let Some(url) = interface.get_mut("url") {
                relocate(url, is_grpc);
            }
        }
    }
    // A 0.3 card's top-level URL: its preferred transport's.
    let preferred_grpc = object.get("preferredTransport").and_then(Value::as_str) == Some("GRPC");
    if let Some(url) = object.get_mut("url") {
        relocate(url, preferred_grpc);
    }
    // Signed only with at least one signature: `[]` is none.
    matches!(
        object.remove("signatures"),
        Some(Value::Array(signatures)) if !signatures.is_empty()
    )
}

/// The paths at the front of the agent's HTTP+JSON interfaces (`card`'s, each moved to
/// `public` as the merged card moves it), without a trailing `/`: where a request's
/// path ends and a tenant's segment may begin.
pub fn rest_bases(card: &Value, upstream: &url::Url, public: &url::Url) -> Vec<String> {
    let interfaces = card.get("supportedInterfaces").and_then(Value::as_array);
    interfaces
        .into_iter()
        .flatten()
        .filter(|i| i.get("protocolBinding").and_then(Value::as_str) == Some("HTTP+JSON"))
        .filter_map(|i| rebase(i.get("url")?.as_str()?, upstream, public))
        .filter_map(|url| url::Url::parse(&url).ok())
        .map(|url| url.path().trim_end_matches('/').to_owned())
        .collect()
}

/// `url` (an interface of the upstream) moved to `public`, its path relative to the
/// upstream's base kept; `None` for an interface elsewhere (another host, or a gRPC
/// `host:port`, which this front does not serve yet) or that does not parse.
fn rebase(url: &str, upstream: &url::Url, public: &url::Url) -> Option<String> {
    let parsed = url::Url::parse(url).ok()?;
    let same_origin = parsed.scheme() == upstream.scheme()
        && parsed.host_str() == upstream.host_str()
        && parsed.port_or_known_default() == upstream.port_or_known_default();
    // An upstream that names itself by another host (its public name) is still the
    // upstream when the path is under its base: only the origin differs.
    let base = upstream.path().trim_end_matches('/');
    let path = parsed.path();
    let relative = path
        .strip_prefix(base)
        .filter(|rest| rest.is_empty() || rest.starts_with('/'));
    let relative = match relative {
        Some(rest) => rest,
        None if same_origin => path,
        None => return None,
    };
    let mut moved = public.clone();
    let public_base = moved.path().trim_end_matches('/').to_owned();
    let joined = format!("{public_base}{relative}");
    moved.set_path(if joined.is_empty() { "/" } else { &joined });
    moved.set_query(parsed.query());
    let text = moved.to_string();
    // Keep the upstream's own spelling: no trailing `/` where it wrote none.
    Some(if !url.ends_with('/') && text.ends_with('/') {
        text.trim_end_matches('/').to_owned()
    } else {
        text
    })
}

/// The upstream's card, kept between fetches.
#[derive(Debug, Default)]
pub struct CardCache {
    /// The last good card and when it stops being fresh.
    pub card: Option<(Value, Instant)>,
    /// Its ETag, for a conditional fetch.
    pub etag: Option<String>,
    /// Counts the cards fetched: what the served card was made from is known by it.
    pub generation: u64,
    /// The A2A versions the last card says the agent serves (read once per card, not
    /// at each request that asks).
    pub versions: Versions,
}

impl CardCache {
    /// The card while it is fresh.
    pub fn fresh(&self) -> Option<&Value> {
        self.card
            .as_ref()
            .filter(|(_, until)| Instant::now() < *until)
            .map(|(card, _)| card)
    }

    /// The last good card, fresh or not.
    pub fn last(&self) -> Option<&Value> {
        self.card.as_ref().map(|(card, _)| card)
    }
}

/// The merged card as last served: what it was made from (the agent's card by its
/// [`CardCache::generation`], the registry by its snapshot), its ETag and bytes, and
/// when it changed to that content.
#[derive(Debug)]
pub struct Served {
    agent: u64,
    registry: Arc<Snapshot>,
    etag: HeaderValue,
    body: Bytes,
    changed: HeaderValue,
}

impl Served {
    /// The card made from the agent's card of generation `agent` and `registry`; it
    /// changed now unless `last` had the same ETag.
    pub fn new(
        agent: u64,
        registry: Arc<Snapshot>,
        etag: &str,
        body: Bytes,
        last: Option<&Served>,
    ) -> Self {
        let etag = HeaderValue::from_str(etag).expect("an ETag is hex in quotes");
        let changed = match last {
            Some(last) if last.etag == etag => last.changed.clone(),
            _ => HeaderValue::from_str(&httpdate::fmt_http_date(std::time::SystemTime::now()))
                .expect("an HTTP date"),
        };
        Self {
            agent,
            registry,
            etag,
            body,
            changed,
        }
    }

    /// Whether it was made from these: the agent's card of generation `agent` and
    /// this very snapshot of the registry.
    pub fn made_from(&self, agent: u64, registry: &Arc<Snapshot>) -> bool {
        self.agent == agent && Arc::ptr_eq(&self.registry, registry)
    }

    /// What an answer carries: the ETag, the bytes, and `Last-Modified`.
    pub fn parts(&self) -> (HeaderValue, Bytes, HeaderValue) {
        (self.etag.clone(), self.body.clone(), self.changed.clone())
    }
}

/// How long an answer may be kept, from its `Cache-Control` (`max-age`, `no-cache`,
/// `no-store`), else `default`.
pub fn freshness(cache_control: Option<&str>, default: Duration) -> Duration {
    let Some(value) = cache_control else {
        return default;
    };
    let mut found = default;
    for directive in value.split(',').map(str::trim) {
        let lower = directive.to_ascii_lowercase();
        if lower == "no-cache" || lower == "no-store" {
            return Duration::ZERO;
        }
        if let Some(age) = lower.strip_prefix("max-age=") {
            if let Ok(seconds) = age.trim_matches('"').parse::<u64>() {
                found = Duration::from_secs(seconds);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_come_from_the_interfaces_and_a_0_3_card_s_top_level() {
        let both = serde_json::json!({"protocolVersion": "0.3.0", "url": "http://a",
            "supportedInterfaces": [{"url": "http://a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
                                    {"url": "http://a", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}]});
        assert_eq!(
            versions(&both),
            Versions {
                v10: true,
                v03: true
            }
        );
        let old = serde_json::json!({"protocolVersion": "0.3.0", "url": "http://a"});
        assert_eq!(
            versions(&old),
            Versions {
                v10: false,
                v03: true
            }
        );
        let new = serde_json::json!({"supportedInterfaces": [{"url": "http://a", "protocolVersion": "1.0"}]});
        assert_eq!(
            versions(&new),
            Versions {
                v10: true,
                v03: false
            }
        );
        assert_eq!(versions(&serde_json::json!({})), Versions::default());
    }
    use serde_json::json;

    fn url(text: &str) -> url::Url {
        url::Url::parse(text).unwrap()
    }

    #[test]
    fn the_entry_replaces_the_upstream_s_own_and_urls_move_to_the_front() {
        let mut card = json!({
            "name": "echo",
            "capabilities": {"streaming": true, "extensions": [
                {"uri": EXTENSION_URI, "params": {"commands": [{"name": "stale"}]}},
                {"uri": "https://example.com/other"}
            ]},
            "supportedInterfaces": [
                {"url": "http://127.0.0.1:9000/a2a", "protocolBinding": "JSONRPC"},
                {"url": "http://127.0.0.1:9000/a2a/rest", "protocolBinding": "HTTP+JSON"},
                {"url": "127.0.0.1:9001", "protocolBinding": "GRPC"},
                {"url": "https://elsewhere.example/x", "protocolBinding": "JSONRPC"}
            ],
            "signatures": [{"protected": "x", "signature": "y"}]
        });
        let entry = json!({"uri": EXTENSION_URI, "required": false, "params": {"commands": []}});
        let dropped = merge(
            &mut card,
            &entry,
            &url("http://127.0.0.1:9000/a2a"),
            &url("https://agent.example.com/"),
            None,
        );
        assert!(dropped);
        assert!(card.get("signatures").is_none());
        let extensions = card["capabilities"]["extensions"].as_array().unwrap();
        assert_eq!(extensions.len(), 2);
        assert_eq!(extensions[0]["uri"], "https://example.com/other");
        assert_eq!(extensions[1], entry);
        let urls: Vec<&str> = card["supportedInterfaces"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["url"].as_str().unwrap())
            .collect();
        assert_eq!(
            urls,
            [
                "https://agent.example.com",
                "https://agent.example.com/rest",
                "127.0.0.1:9001",
                "https://elsewhere.example/x"
            ]
        );
        // With the front serving gRPC for the agent, its gRPC interface is the front's.
        merge(
            &mut card,
            &entry,
            &url("http://127.0.0.1:9000/a2a"),
            &url("https://agent.example.com/"),
            Some("agent.example.com:443"),
        );
        assert_eq!(
            card["supportedInterfaces"][2]["url"],
            "agent.example.com:443"
        );
    }

    #[test]
    fn the_agent_s_grpc_address_is_taken_only_on_its_own_host() {
        let card = |address: &str| json!({"supportedInterfaces": [{"url": address, "protocolBinding": "GRPC"}]});
        let upstream = url("http://127.0.0.1:9000/");
        assert_eq!(
            grpc_address(&card("127.0.0.1:9001"), &upstream).as_deref(),
            Some("127.0.0.1:9001")
        );
        assert_eq!(
            grpc_address(&card("grpc://localhost:9001"), &upstream).as_deref(),
            Some("localhost:9001")
        );
        assert_eq!(
            grpc_address(&card("elsewhere.example:9001"), &upstream),
            None
        );
        assert_eq!(grpc_address(&card("127.0.0.1"), &upstream), None);
    }

    #[test]
    fn a_card_with_nothing_to_merge_into_gets_the_entry() {
        let mut card = json!({"name": "bare", "capabilities": "nonsense"});
        let entry = json!({"uri": EXTENSION_URI});
        assert!(!merge(
            &mut card,
            &entry,
            &url("http://a:1/"),
            &url("http://b:2/"),
            None
        ));
        assert_eq!(card["capabilities"]["extensions"], json!([entry]));
    }

    #[test]
    fn a_0_3_card_s_url_moves_too() {
        let mut card = json!({"url": "http://127.0.0.1:9000/", "additionalInterfaces": [
            {"url": "http://127.0.0.1:9000/", "transport": "JSONRPC"}
        ]});
        merge(
            &mut card,
            &json!({}),
            &url("http://127.0.0.1:9000/"),
            &url("http://front:8080/"),
            None,
        );
        assert_eq!(card["url"], "http://front:8080/");
        assert_eq!(card["additionalInterfaces"][0]["url"], "http://front:8080/");
    }

    #[test]
    fn a_0_3_card_s_grpc_interfaces_are_the_front_s_when_it_serves_grpc() {
        let agent = || {
            json!({"url": "http://127.0.0.1:9000/", "preferredTransport": "JSONRPC",
            "additionalInterfaces": [
                {"url": "http://127.0.0.1:9000/", "transport": "JSONRPC"},
                {"url": "127.0.0.1:9001", "transport": "GRPC"},
                {"url": "grpc://127.0.0.1:9001", "transport": "GRPC"}
            ]})
        };
        let upstream = url("http://127.0.0.1:9000/");
        let public = url("http://front:8080/");
        // The front reaches no gRPC of the agent's: its gRPC interfaces stay the agent's.
        let mut card = agent();
        merge(&mut card, &json!({}), &upstream, &public, None);
        assert_eq!(card["url"], "http://front:8080/");
        let interfaces = &card["additionalInterfaces"];
        assert_eq!(interfaces[0]["url"], "http://front:8080/");
        assert_eq!(interfaces[1]["url"], "127.0.0.1:9001");
        assert_eq!(interfaces[2]["url"], "grpc://127.0.0.1:9001");
        // It does: a 0.3 gRPC client goes through the front too, as a 1.0 one does.
        let mut card = agent();
        merge(
            &mut card,
            &json!({}),
            &upstream,
            &public,
            Some("front:8080"),
        );
        let interfaces = &card["additionalInterfaces"];
        assert_eq!(interfaces[0]["url"], "http://front:8080/");
        assert_eq!(interfaces[1]["url"], "front:8080");
        assert_eq!(interfaces[2]["url"], "grpc://front:8080");
        // A card whose preferred transport is gRPC: its `url` is a gRPC address, never
        // the front's HTTP URL.
        let preferring = || json!({"url": "grpc://127.0.0.1:9001", "preferredTransport": "GRPC"});
        let mut card = preferring();
        merge(&mut card, &json!({}), &upstream, &public, None);
        assert_eq!(card["url"], "grpc://127.0.0.1:9001");
        let mut card = preferring();
        merge(
            &mut card,
            &json!({}),
            &upstream,
            &public,
            Some("front:8080"),
        );
        assert_eq!(card["url"], "grpc://front:8080");
    }

    #[test]
    fn a_0_3_card_s_grpc_address_is_found_after_1_0_s() {
        let upstream = url("http://127.0.0.1:9000/");
        let additional = json!({"url": "http://127.0.0.1:9000/", "additionalInterfaces": [
            {"url": "http://127.0.0.1:9000/", "transport": "JSONRPC"},
            {"url": "127.0.0.1:9001", "transport": "GRPC"}
        ]});
        assert_eq!(
            grpc_address(&additional, &upstream).as_deref(),
            Some("127.0.0.1:9001")
        );
        let preferred = json!({"url": "localhost:9002", "preferredTransport": "GRPC"});
        assert_eq!(
            grpc_address(&preferred, &upstream).as_deref(),
            Some("localhost:9002")
        );
        let both = json!({
            "supportedInterfaces": [{"url": "127.0.0.1:9003", "protocolBinding": "GRPC"}],
            "additionalInterfaces": [{"url": "127.0.0.1:9001", "transport": "GRPC"}]
        });
        assert_eq!(
            grpc_address(&both, &upstream).as_deref(),
            Some("127.0.0.1:9003")
        );
        let elsewhere = json!({"additionalInterfaces": [
            {"url": "grpc.example:9001", "transport": "GRPC"}
        ]});
        assert_eq!(grpc_address(&elsewhere, &upstream), None);
    }

    #[test]
    fn only_a_card_with_a_signature_counts_as_signed() {
        let merged = |mut card: Value| {
            let signed = merge(
                &mut card,
                &json!({}),
                &url("http://a:1/"),
                &url("http://b:2/"),
                None,
            );
            assert!(card.get("signatures").is_none());
            signed
        };
        // What @a2a-js/sdk serves: an empty list, no signature.
        assert!(!merged(json!({"name": "js", "signatures": []})));
        assert!(!merged(json!({"name": "unsigned"})));
        assert!(!merged(json!({"name": "null", "signatures": null})));
        assert!(merged(
            json!({"name": "signed", "signatures": [{"protected": "x", "signature": "y"}]})
        ));
    }

    #[test]
    fn freshness_follows_cache_control() {
        let default = Duration::from_secs(30);
        assert_eq!(freshness(None, default), default);
        assert_eq!(
            freshness(Some("public, max-age=600"), default),
            Duration::from_secs(600)
        );
        assert_eq!(freshness(Some("no-cache"), default), Duration::ZERO);
        assert_eq!(freshness(Some("private"), default), default);
    }
}
