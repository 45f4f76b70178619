//! A request and an answer as the front carries them through its stages: their header
//! lines kept as they came, in order, names and values slices of the bytes read, found
//! by name in any case. No map is built, no name is hashed or parsed into a type: a
//! message has a handful of lines, and a pass over them costs less than one lookup in
//! `http`'s `HeaderMap` (whose building and dropping was the largest cost of a proxied
//! request that nginx does not pay). hyper's requests and answers (HTTP/2, the
//! HTTP/1.1 connections handed to it, the agent's gRPC interface) are turned into
//! these and back at the door ([`Request::from`], [`Answer::into_http`]).

use axum::body::Body;
use bytes::Bytes;
use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use hyper::http::Extensions;
use hyper::{Method, StatusCode, Uri, Version};

use crate::http1::rules::{self, Refusal};
use crate::http1::token::same_name;

/// The longest header name kept as read (`http`'s `HeaderName` takes no longer one):
/// the parsers refuse a longer one, so every name read converts to `http`'s.
pub const MAX_NAME: usize = (1 << 16) - 1;

/// A header line's name: as it came on the wire, or one the front set.
#[derive(Clone, Debug)]
enum Name {
    /// As read (any case); httparse checked it is a token.
    Read(Bytes),
    /// Set by the front, or taken from hyper.
    Typed(HeaderName),
}

impl Name {
    fn as_bytes(&self) -> &[u8] {
        match self {
            Name::Read(bytes) => bytes,
            Name::Typed(name) => name.as_str().as_bytes(),
        }
    }

    /// Whether this is `name`, in any case.
    fn is(&self, name: &str) -> bool {
        same_name(self.as_bytes(), name.as_bytes())
    }
}

/// A message's header lines (or trailers), in the order they came, found by name in
/// any case.
#[derive(Clone, Debug, Default)]
pub struct Headers {
    lines: Vec<(Name, HeaderValue)>,
}

impl Headers {
    /// No lines.
    pub fn new() -> Self {
        Self::default()
    }

    /// Room for `n` lines.
    pub fn with_capacity(n: usize) -> Self {
        Self {
            lines: Vec::with_capacity(n),
        }
    }

    /// Adds a line as it was read: `name` a token httparse accepted, in any case.
    pub fn push_read(&mut self, name: Bytes, value: HeaderValue) {
        self.lines.push((Name::Read(name), value));
    }

    /// How many lines there are.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// The first value of `name`.
    pub fn get(&self, name: impl AsRef<str>) -> Option<&HeaderValue> {
        let name = name.as_ref();
        self.lines.iter().find(|(n, _)| n.is(name)).map(|(_, v)| v)
    }

    /// Every value of `name`, in order.
    pub fn get_all<N: AsRef<str>>(&self, name: N) -> impl Iterator<Item = &HeaderValue> {
        self.lines
            .iter()
            .filter(move |(n, _)| n.is(name.as_ref()))
            .map(|(_, v)| v)
    }

    /// Whether there is a line named `name`.
    pub fn contains_key(&self, name: impl AsRef<str>) -> bool {
        let name = name.as_ref();
        self.lines.iter().any(|(n, _)| n.is(name))
    }

    /// Sets `name` to `value` alone: its first line takes the value (keeping its
    /// place), any later ones go.
    pub fn insert(&mut self, name: HeaderName, value: HeaderValue) {
        let Some(at) = self.lines.iter().position(|(n, _)| n.is(name.as_str())) else {
            self.lines.push((Name::Typed(name), value));
            return;
        };
        if self.lines[at + 1..]
            .iter()
            .any(|(n, _)| n.is(name.as_str()))
        {
            let mut index = 0;
            self.lines.retain(|(n, _)| {
                let keep = index <= at || !n.is(name.as_str());
                index += 1;
                keep
            });
        }
        self.lines[at] = (Name::Typed(name), value);
    }

    /// Adds `more`'s lines after these.
    pub fn extend(&mut self, more: impl Into<Headers>) {
        self.lines.extend(more.into().lines);
    }

    /// Adds a line after the others.
    pub fn append(&mut self, name: HeaderName, value: HeaderValue) {
        self.lines.push((Name::Typed(name), value));
    }

    /// Removes every line named `name`.
    pub fn remove(&mut self, name: impl AsRef<str>) {
        let name = name.as_ref();
        self.lines.retain(|(n, _)| !n.is(name));
    }

    /// Keeps the lines `keep` says yes to (given the name, lowercase or not, and the
    /// value).
    pub fn retain(&mut self, mut keep: impl FnMut(&[u8], &HeaderValue) -> bool) {
        self.lines.retain(|(n, v)| keep(n.as_bytes(), v));
    }

    /// The lines in order: each name as it came (any case), and its value.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &HeaderValue)> {
        self.lines.iter().map(|(n, v)| (n.as_bytes(), v))
    }

    /// The same lines in `http`'s map, for hyper and for the front's rarer paths.
    pub fn to_map(&self) -> HeaderMap {
        let mut map = HeaderMap::with_capacity(self.lines.len());
        for (name, value) in &self.lines {
            let name = match name {
                Name::Typed(name) => name.clone(),
                // A token no longer than [`MAX_NAME`] (what the parsers take) is a valid
                // name: the `Err` arm is never taken.
                Name::Read(bytes) => match HeaderName::from_bytes(bytes) {
                    Ok(name) => name,
                    Err(_) => continue,
                },
            };
            map.append(name, value.clone());
        }
        map
    }

    /// Joins `cookie` lines into one, where the first was, with `; ` between them: an
    /// HTTP/2 client may send a cookie in crumbs, one field each, which must be one line
    /// before they go on over HTTP/1.1 (RFC 9113, section 8.2.3).
    fn join_cookies(&mut self) {
        if self.get_all("cookie").nth(1).is_none() {
            return;
        }
        let mut joined = Vec::new();
        for (i, crumb) in self.get_all("cookie").enumerate() {
            if i > 0 {
                joined.extend_from_slice(b"; ");
            }
            joined.extend_from_slice(crumb.as_bytes());
        }
        // Each crumb was a valid value, and so is their join.
        let Ok(joined) = HeaderValue::from_maybe_shared(Bytes::from(joined)) else {
            return;
        };
        let mut joined = Some(joined);
        self.lines.retain_mut(|(name, value)| {
            if !name.is("cookie") {
                return true;
            }
            match joined.take() {
                Some(all) => {
                    *value = all;
                    true
                }
                None => false,
            }
        });
    }
}

impl From<HeaderMap> for Headers {
    fn from(map: HeaderMap) -> Self {
        let mut lines = Vec::with_capacity(map.len());
        let mut last: Option<HeaderName> = None;
        for (name, value) in map {
            // `None`: another value of the name before.
            if let Some(name) = name {
                last = Some(name);
            }
            if let Some(name) = &last {
                lines.push((Name::Typed(name.clone()), value));
            }
        }
        Self { lines }
    }
}

/// A request's head: what `http`'s request parts hold, with [`Headers`] for its map.
#[derive(Clone, Debug, Default)]
pub struct Parts {
    /// The method.
    pub method: Method,
    /// The target: a path and query, as the request line gave it.
    pub uri: Uri,
    /// The protocol version.
    pub version: Version,
    /// The header lines.
    pub headers: Headers,
    /// What the layers above attach to it.
    pub extensions: Extensions,
    /// Whether the head has been held to [`rules`] already: the front's own loop does
    /// so as it parses it, and [`Request::refusal`] does not read it a second time.
    pub checked: bool,
}

/// A request through the front: its head and its body.
#[derive(Debug)]
pub struct Request {
    parts: Parts,
    body: Body,
}

impl Request {
    /// A `method` request for `uri` with `headers` and `body`.
    pub fn new(method: Method, uri: Uri, headers: Headers, body: Body) -> Self {
        let parts = Parts {
            method,
            uri,
            headers,
            ..Parts::default()
        };
        Self { parts, body }
    }

    /// A request of `parts` with `body`.
    pub fn from_parts(parts: Parts, body: Body) -> Self {
        Self { parts, body }
    }

    /// Its head and body, apart.
    pub fn into_parts(self) -> (Parts, Body) {
        (self.parts, self.body)
    }

    /// The method.
    pub fn method(&self) -> &Method {
        &self.parts.method
    }

    /// The target.
    pub fn uri(&self) -> &Uri {
        &self.parts.uri
    }

    /// Why the request must be refused before any of it is believed, if it must: its
    /// `Host` lines, its target's form, the lines that frame its body
    /// ([`rules::head_refusal`]).
    pub fn refusal(&self) -> Option<Refusal> {
        if self.parts.checked {
            return None;
        }
        let lines = self.parts.headers.iter().map(|(n, v)| (n, v.as_bytes()));
        rules::head_refusal(
            self.parts.version,
            &self.parts.method,
            &self.parts.uri,
            lines,
        )
    }

    /// The header lines.
    pub fn headers(&self) -> &Headers {
        &self.parts.headers
    }

    /// The header lines, to change.
    pub fn headers_mut(&mut self) -> &mut Headers {
        &mut self.parts.headers
    }

    /// What the stages attached.
    pub fn extensions(&self) -> &Extensions {
        &self.parts.extensions
    }

    /// What the stages attached, to change.
    pub fn extensions_mut(&mut self) -> &mut Extensions {
        &mut self.parts.extensions
    }

    /// The body.
    pub fn body(&self) -> &Body {
        &self.body
    }

    /// The same request as `http`'s, for hyper's client.
    pub fn into_http(self) -> hyper::Request<Body> {
        let (parts, body) = self.into_parts();
        let mut request = hyper::Request::new(body);
        *request.method_mut() = parts.method;
        *request.uri_mut() = parts.uri;
        *request.version_mut() = parts.version;
        *request.headers_mut() = parts.headers.to_map();
        *request.extensions_mut() = parts.extensions;
        request
    }
}

impl From<hyper::Request<Body>> for Request {
    fn from(request: hyper::Request<Body>) -> Self {
        let (parts, body) = request.into_parts();
        let mut headers = Headers::from(parts.headers);
        if parts.version >= Version::HTTP_2 {
            headers.join_cookies();
        }
        Self {
            parts: Parts {
                method: parts.method,
                uri: parts.uri,
                version: parts.version,
                headers,
                extensions: parts.extensions,
                checked: false,
            },
            body,
        }
    }
}

/// An answer's head: what `http`'s answer parts hold, with [`Headers`] for its map.
#[derive(Debug, Default)]
pub struct AnswerParts {
    /// The status.
    pub status: StatusCode,
    /// The protocol version.
    pub version: Version,
    /// The header lines.
    pub headers: Headers,
    /// What the layers above attach to it.
    pub extensions: Extensions,
}

/// An answer through the front: its head and its body.
#[derive(Debug, Default)]
pub struct Answer {
    parts: AnswerParts,
    body: Body,
}

impl Answer {
    /// A 200 answer with `body` and no header lines.
    pub fn new(body: Body) -> Self {
        Self {
            parts: AnswerParts::default(),
            body,
        }
    }

    /// An answer of `parts` with `body`.
    pub fn from_parts(parts: AnswerParts, body: Body) -> Self {
        Self { parts, body }
    }

    /// Its head and body, apart.
    pub fn into_parts(self) -> (AnswerParts, Body) {
        (self.parts, self.body)
    }

    /// Its body.
    pub fn into_body(self) -> Body {
        self.body
    }

    /// The status.
    pub fn status(&self) -> StatusCode {
        self.parts.status
    }

    /// The status, to change.
    pub fn status_mut(&mut self) -> &mut StatusCode {
        &mut self.parts.status
    }

    /// The header lines.
    pub fn headers(&self) -> &Headers {
        &self.parts.headers
    }

    /// The header lines, to change.
    pub fn headers_mut(&mut self) -> &mut Headers {
        &mut self.parts.headers
    }

    /// What the stages attached.
    pub fn extensions(&self) -> &Extensions {
        &self.parts.extensions
    }

    /// What the stages attached, to change.
    pub fn extensions_mut(&mut self) -> &mut Extensions {
        &mut self.parts.extensions
    }

    /// The same answer as `http`'s, for hyper's server.
    pub fn into_http(self) -> hyper::Response<Body> {
        let (parts, body) = self.into_parts();
        let mut answer = hyper::Response::new(body);
        *answer.status_mut() = parts.status;
        *answer.version_mut() = parts.version;
        *answer.headers_mut() = parts.headers.to_map();
        *answer.extensions_mut() = parts.extensions;
        answer
    }
}

impl From<hyper::Response<Body>> for Answer {
    fn from(answer: hyper::Response<Body>) -> Self {
        let (parts, body) = answer.into_parts();
        Self {
            parts: AnswerParts {
                status: parts.status,
                version: parts.version,
                headers: Headers::from(parts.headers),
                extensions: parts.extensions,
            },
            body,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(lines: &[(&str, &str)]) -> Headers {
        let mut headers = Headers::new();
        for (name, value) in lines {
            headers.push_read(
                Bytes::copy_from_slice(name.as_bytes()),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        headers
    }

    #[test]
    fn an_http2_request_s_cookie_crumbs_become_one_line_and_http1_s_are_kept() {
        let request = |version, crumbs: &[&str]| {
            let mut request = hyper::Request::new(Body::empty());
            *request.version_mut() = version;
            let headers = request.headers_mut();
            for crumb in crumbs {
                headers.append("cookie", HeaderValue::from_str(crumb).unwrap());
            }
            headers.append("x-other", HeaderValue::from_static("y"));
            Request::from(request)
        };
        let joined = request(Version::HTTP_2, &["a=1", "b=2", "c=3"]);
        let cookies: Vec<_> = joined.headers().get_all("cookie").collect();
        assert_eq!(cookies, ["a=1; b=2; c=3"]);
        assert_eq!(joined.headers().get("x-other").unwrap(), "y");
        let one = request(Version::HTTP_2, &["a=1"]);
        assert_eq!(one.headers().get_all("cookie").collect::<Vec<_>>(), ["a=1"]);
        let none = request(Version::HTTP_2, &[]);
        assert!(!none.headers().contains_key("cookie"));
        // HTTP/1.1 has no crumbs: what a client sent goes on as it was.
        let kept = request(Version::HTTP_11, &["a=1", "b=2"]);
        assert_eq!(kept.headers().get_all("cookie").count(), 2);
    }

    #[test]
    fn http1_requests_need_their_one_host_and_http2_none() {
        let request = |version, hosts: &[(&str, &str)]| {
            let parts = Parts {
                version,
                headers: read(hosts),
                ..Parts::default()
            };
            Request::from_parts(parts, Body::empty())
                .refusal()
                .is_none()
        };
        let one = [("Host", "a")];
        let two = [("host", "a"), ("HOST", "b")];
        assert!(request(Version::HTTP_11, &one));
        assert!(!request(Version::HTTP_11, &[]), "missing");
        assert!(!request(Version::HTTP_11, &two), "said twice");
        assert!(request(Version::HTTP_10, &[]), "optional before 1.1");
        assert!(!request(Version::HTTP_10, &two));
        assert!(request(Version::HTTP_2, &[]), ":authority instead");
    }

    #[test]
    fn names_are_found_in_any_case_and_values_kept_in_order() {
        let headers = read(&[("Content-Type", "a"), ("X-A", "1"), ("x-a", "2")]);
        assert_eq!(headers.get("content-type").unwrap(), "a");
        assert_eq!(headers.get(hyper::header::CONTENT_TYPE).unwrap(), "a");
        assert!(headers.contains_key("content-type"));
        assert!(
            headers.contains_key("CONTENT-TYPE"),
            "asked in any case too"
        );
        assert!(!headers.contains_key("content-length"));
        assert!(!headers.contains_key("content-typ"));
        let all: Vec<_> = headers.get_all("x-a").collect();
        assert_eq!(all, ["1", "2"]);
        let names: Vec<_> = headers.iter().map(|(n, _)| n).collect();
        assert_eq!(names, [&b"Content-Type"[..], b"X-A", b"x-a"]);
    }

    #[test]
    fn insert_replaces_every_line_of_a_name_in_the_first_ones_place() {
        let mut headers = read(&[("Host", "a"), ("X-A", "1"), ("host", "b"), ("X-B", "2")]);
        headers.insert(hyper::header::HOST, HeaderValue::from_static("c"));
        let lines: Vec<_> = headers
            .iter()
            .map(|(n, v)| (n.to_vec(), v.clone()))
            .collect();
        assert_eq!(
            lines,
            [
                (b"host".to_vec(), HeaderValue::from_static("c")),
                (b"X-A".to_vec(), HeaderValue::from_static("1")),
                (b"X-B".to_vec(), HeaderValue::from_static("2")),
            ]
        );
        headers.insert(hyper::header::TE, HeaderValue::from_static("trailers"));
        assert_eq!(headers.len(), 4);
        headers.remove("x-a");
        headers.remove("x-none");
        assert_eq!(headers.len(), 3);
        assert_eq!(headers.get("te").unwrap(), "trailers");
    }

    #[test]
    fn a_map_and_lines_carry_the_same_headers_both_ways() {
        let headers = read(&[("Accept", "a"), ("X-A", "1"), ("x-a", "2")]);
        let map = headers.to_map();
        assert_eq!(map.len(), 3);
        assert_eq!(map.get_all("x-a").iter().count(), 2);
        let back = Headers::from(map);
        let lines: Vec<_> = back.iter().map(|(n, v)| (n.to_vec(), v.clone())).collect();
        assert_eq!(
            lines,
            [
                (b"accept".to_vec(), HeaderValue::from_static("a")),
                (b"x-a".to_vec(), HeaderValue::from_static("1")),
                (b"x-a".to_vec(), HeaderValue::from_static("2")),
            ]
        );
    }
}
