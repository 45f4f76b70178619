//! What a request head must be before any of it is believed: one way to frame its body,
//! a target of a form the front serves, its one `Host`. Pure functions of the head's
//! bytes, applied by the front's own loop before it takes a request and, in `route`, to
//! every request whichever parser read it (RFC 9112 §§3.2, 3.2.1–3.2.4, 6.1–6.3; what
//! nginx and pingora refuse).

use crate::http1::token::same_name;
use hyper::{Method, StatusCode, Uri, Version};

/// Why a request is refused before anything of it is passed on: its answer's status and
/// a sentence for the client. The connection it came on is closed after the answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// The answer's status.
    pub status: StatusCode,
    /// What was wrong, for the answer's body.
    pub why: &'static str,
}

impl Refusal {
    const fn bad(why: &'static str) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            why,
        }
    }

    /// A head that does not parse as HTTP/1.1 (a bare CR, a space in a name, an
    /// unknown version, a control byte in the target).
    pub const MALFORMED: Self = Self::bad("the request head is malformed (RFC 9112)");

    /// More header lines than are read.
    pub const TOO_MANY_LINES: Self = Self {
        status: StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
        why: "the request head has too many header lines",
    };

    /// An HTTP/2 preface after the connection's first bytes (h2c smuggling).
    pub const LATE_PREFACE: Self =
        Self::bad("an HTTP/2 preface is taken only as a connection's first bytes");

    /// The head or the body stopped arriving.
    pub const TOO_SLOW: Self = Self {
        status: StatusCode::REQUEST_TIMEOUT,
        why: "the request did not arrive in time (--request-read-timeout-seconds)",
    };

    /// A chunked body whose framing is broken.
    pub const MALFORMED_BODY: Self = Self::bad("the request body's chunked framing is malformed");

    /// A body that ended before its declared length.
    pub const CUT_BODY: Self = Self::bad("the request body ended before its declared length");
}

/// Why a request head is refused, if it is: its `Host` lines, its target's form, and
/// the lines that frame its body, read in one pass over `headers` (the head's lines as
/// they came, names in any case).
pub fn head_refusal<'a>(
    version: Version,
    method: &Method,
    target: &Uri,
    headers: impl IntoIterator<Item = (&'a [u8], &'a [u8])>,
) -> Option<Refusal> {
    let mut lines = Lines::default();
    for (name, value) in headers {
        lines.count(name, value);
    }
    host_refusal(version, lines.hosts)
        .or_else(|| target_refusal(method, target))
        .or_else(|| lines.framing_refusal(version))
}

/// Why a plain head is refused, if it is: one the front's own loop parsed, whose body is
/// framed by one `Content-Length` or none (its lines counted as it read them: `hosts`).
pub fn plain_refusal(
    version: Version,
    method: &Method,
    target: &Uri,
    hosts: usize,
) -> Option<Refusal> {
    host_refusal(version, hosts).or_else(|| target_refusal(method, target))
}

/// What one pass over a head counts.
#[derive(Default)]
struct Lines {
    hosts: usize,
    lengths: usize,
    codings: usize,
    unknown: bool,
    empty: bool,
}

impl Lines {
    fn count(&mut self, name: &[u8], value: &[u8]) {
        // Told apart by length first: most lines are neither.
        match name.len() {
            4 if same_name(name, b"host") => self.hosts += 1,
            14 if same_name(name, b"content-length") => self.lengths += 1,
            17 if same_name(name, b"transfer-encoding") => {
                for coding in value.split(|&b| b == b',') {
                    let coding = coding.trim_ascii();
                    self.codings += 1;
                    if coding.is_empty() {
                        self.empty = true;
                    } else if !coding.eq_ignore_ascii_case(b"chunked") {
                        // A coding with parameters (`chunked;q=1`) is as unknown as any.
                        self.unknown = true;
                    }
                }
            }
            _ => {}
        }
    }

    /// Whether the `Transfer-Encoding` and `Content-Length` lines frame the body one way
    /// only. Only a single `chunked` is taken (nginx and HAProxy refuse the rest): a
    /// list, two lines, or `chunked` twice is the TE.TE smuggling primitive (400); a
    /// coding the front does not decode is 501. Beside a `Content-Length` (CL.TE), or in
    /// an HTTP/1.0 request (RFC 9112 §6.1: faulty framing), it is refused too (400), as
    /// nginx refuses both.
    fn framing_refusal(&self, version: Version) -> Option<Refusal> {
        if self.codings == 0 {
            return None;
        }
        Some(if self.empty {
            Refusal::bad("the request's Transfer-Encoding has an empty coding")
        } else if self.unknown {
            Refusal {
                status: StatusCode::NOT_IMPLEMENTED,
                why: "the front takes no Transfer-Encoding but a single chunked",
            }
        } else if self.codings > 1 {
            Refusal::bad("the request's Transfer-Encoding names chunked more than once")
        } else if self.lengths > 0 {
            Refusal::bad("the request has both Content-Length and Transfer-Encoding")
        } else if version != Version::HTTP_11 {
            Refusal::bad("an HTTP/1.0 request cannot be chunked (RFC 9112, section 6.1)")
        } else {
            return None;
        })
    }
}

/// Whether the request target is of a form the front passes on: origin-form (`/path`),
/// absolute-form with an `http` or `https` scheme, or `*` (refused elsewhere with its
/// own words, as CONNECT and its authority form are). A target read as an authority
/// alone in any other method (`GET any-target`) would reach the agent as `/`: it is
/// malformed.
fn target_refusal(method: &Method, target: &Uri) -> Option<Refusal> {
    let fits = match target.scheme_str() {
        None => target.authority().is_none() || method == Method::CONNECT,
        Some(scheme) => scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https"),
    };
    (!fits).then_some(Refusal::bad(
        "the request target is neither origin-form nor absolute-form (RFC 9112, section 3.2)",
    ))
}

/// Whether the head's `Host` lines are as RFC 9112 (§3.2) requires: exactly one in an
/// HTTP/1.1 request, at most one before; HTTP/2 names the authority in a pseudo-header
/// instead, so its requests are not held to it.
fn host_refusal(version: Version, hosts: usize) -> Option<Refusal> {
    let fits = match version {
        Version::HTTP_11 => hosts == 1,
        Version::HTTP_09 | Version::HTTP_10 => hosts <= 1,
        _ => true,
    };
    (!fits).then_some(Refusal::bad(
        "an HTTP/1.1 request needs exactly one Host header (RFC 9112, section 3.2)",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(version: Version, target: &str, lines: &[(&str, &str)]) -> Option<u16> {
        let target: Uri = target.parse().unwrap();
        let host = [("Host", "h")];
        let lines = host.iter().chain(lines);
        let lines = lines.map(|(n, v)| (n.as_bytes(), v.as_bytes()));
        head_refusal(version, &Method::POST, &target, lines).map(|r| r.status.as_u16())
    }

    #[test]
    fn only_a_single_chunked_frames_a_body() {
        let te = "Transfer-Encoding";
        let v11 = Version::HTTP_11;
        assert_eq!(refused(v11, "/", &[]), None);
        assert_eq!(refused(v11, "/", &[("Content-Length", "5")]), None);
        assert_eq!(refused(v11, "/", &[(te, "chunked")]), None);
        assert_eq!(
            refused(v11, "/", &[("transfer-encoding", " Chunked ")]),
            None
        );
        for (lines, status) in [
            (vec![(te, "identity, chunked")], 501),
            (vec![(te, "gzip, chunked")], 501),
            (vec![(te, "gzip")], 501),
            (vec![(te, "chunked;q=1")], 501),
            (vec![(te, "chunked, chunked")], 400),
            (vec![(te, ", chunked")], 400),
            (vec![(te, "")], 400),
            (vec![(te, "chunked"), (te, "chunked")], 400),
            (vec![(te, "chunked"), ("Content-Length", "5")], 400),
            (vec![("Content-Length", "5"), (te, "chunked")], 400),
        ] {
            assert_eq!(refused(v11, "/", &lines), Some(status), "{lines:?}");
        }
        assert_eq!(
            refused(Version::HTTP_10, "/", &[(te, "chunked")]),
            Some(400)
        );
    }

    #[test]
    fn targets_are_origin_or_absolute_form() {
        for good in ["/", "/a?b", "*", "http://h/x", "HTTPS://h"] {
            assert_eq!(refused(Version::HTTP_11, good, &[]), None, "{good}");
        }
        for bad in ["any-target", "h:80", "ftp://h/x"] {
            assert_eq!(refused(Version::HTTP_11, bad, &[]), Some(400), "{bad}");
        }
        // CONNECT's own form is refused elsewhere, as a method the front does not serve.
        let authority: Uri = "h:80".parse().unwrap();
        let host = [(&b"Host"[..], &b"h"[..])];
        assert_eq!(
            head_refusal(Version::HTTP_11, &Method::CONNECT, &authority, host),
            None
        );
    }

    #[test]
    fn host_lines_are_counted_by_version() {
        assert!(host_refusal(Version::HTTP_11, 1).is_none());
        assert!(host_refusal(Version::HTTP_11, 0).is_some());
        assert!(host_refusal(Version::HTTP_11, 2).is_some());
        assert!(host_refusal(Version::HTTP_10, 0).is_none());
        assert!(host_refusal(Version::HTTP_10, 2).is_some());
        assert!(host_refusal(Version::HTTP_2, 0).is_none());
        assert_eq!(refused(Version::HTTP_11, "/", &[("HOST", "b")]), Some(400));
    }
}
