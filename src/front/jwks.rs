//! JWK sets for verifying callers' tokens and the agent's card: read from a file or a
//! fetched document, each key kept with the one family of algorithms it may verify, and
//! kept fresh ([`KeyRing`]).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use arc_swap::ArcSwap;

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::Value;

/// The largest key set read.
pub(super) const MAX_KEY_SET_BYTES: usize = 1 << 20;

/// One key of the set, ready to verify with.
pub(super) struct Key {
    pub(super) id: Option<String>,
    /// The one algorithm the key is for, when it says (or its curve does).
    pub(super) algorithm: Option<Algorithm>,
    pub(super) key: DecodingKey,
    pub(super) family: Family,
}

/// A key's type, and so the algorithms it may verify.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Family {
    Rsa,
    P256,
    P384,
    Ed25519,
}

impl Family {
    pub(super) fn fits(self, algorithm: Algorithm) -> bool {
        use Algorithm::*;
        match self {
            Family::Rsa => matches!(algorithm, RS256 | RS384 | RS512 | PS256 | PS384 | PS512),
            Family::P256 => algorithm == ES256,
            Family::P384 => algorithm == ES384,
            Family::Ed25519 => algorithm == EdDSA,
        }
    }
}

/// The algorithms a token or a card may be signed with: the asymmetric ones. A shared
/// secret (HS*) is refused: a key set is public, and a key from it must never verify
/// what anyone could have made.
pub(super) const ALLOWED: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// A key set as read, and what it came from.
pub(super) struct KeySet {
    pub(super) keys: Vec<Key>,
    /// When it was read (a URL's), and the file's modification time and length.
    pub(super) read_at: Instant,
    pub(super) stamp: Option<(SystemTime, u64)>,
}

/// Where a key set is.
#[derive(Clone, Debug, PartialEq)]
pub enum KeySource {
    /// A JWKS file, read again when it changes (a mounted Secret or ConfigMap).
    File(PathBuf),
    /// A JWKS URL (an issuer's `jwks_uri`), fetched and kept for the refresh period,
    /// fetched again early when a signature names a key it does not hold.
    Url(url::Url),
}

/// A file's key set is looked at again at most this often; a URL's key set is fetched
/// again early (an unknown `kid`) at most this often.
const FILE_CHECK: Duration = Duration::from_secs(1);
const EARLY_FETCH: Duration = Duration::from_secs(10);
/// How long a key set fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// A key set kept fresh: a file's read again when it changes, a URL's fetched again
/// after its refresh period (or early, for a key it lacks). A set that cannot be read
/// leaves the last one read in use, logged once.
pub(super) struct KeyRing {
    source: KeySource,
    refresh: Duration,
    /// What the keys verify, for the logs (`JWT`, `card`).
    what: &'static str,
    keys: ArcSwap<Option<KeySet>>,
    /// When the source was last looked at (a file's stamp, or an early fetch).
    looked: std::sync::Mutex<Instant>,
    /// One fetch at a time; the others go on with the keys they have.
    fetching: tokio::sync::Mutex<()>,
    http: Option<reqwest::Client>,
    /// A key set that could not be read is logged once until one is read again.
    failing: AtomicBool,
}

impl KeyRing {
    /// The key set at `source`, read once: a file that cannot be read or holds no usable
    /// key is an error (the front does not start); a URL that cannot be fetched yet is
    /// logged, and fetched again when next needed.
    pub(super) async fn start(
        source: KeySource,
        refresh: Duration,
        what: &'static str,
    ) -> Result<Self, String> {
        let http = match &source {
            KeySource::File(_) => None,
            KeySource::Url(_) => {
                // rustls needs one process-wide crypto provider; ring is the one we build.
                let _ = rustls::crypto::ring::default_provider().install_default();
                Some(
                    reqwest::Client::builder()
                        .timeout(FETCH_TIMEOUT)
                        .redirect(reqwest::redirect::Policy::limited(3))
                        .build()
                        .map_err(|e| format!("the key set's HTTP client: {e}"))?,
                )
            }
        };
        let ring = Self {
            source,
            refresh,
            what,
            keys: ArcSwap::from_pointee(None),
            looked: std::sync::Mutex::new(Instant::now()),
            fetching: tokio::sync::Mutex::new(()),
            http,
            failing: AtomicBool::new(false),
        };
        match &ring.source {
            KeySource::File(path) => ring.keys.store(Arc::new(Some(read_file(path)?))),
            KeySource::Url(_) => ring.fetch().await,
        }
        Ok(ring)
    }

    /// Makes the next [`KeyRing::keep_fresh`] look at the file at once (tests: a file
    /// rewritten within the second).
    #[cfg(test)]
    pub(super) fn look_again_now(&self) {
        *self.looked.lock().expect("key set lock") = Instant::now() - FILE_CHECK;
    }

    /// The key set as last read (none yet: a URL never fetched).
    pub(super) fn current(&self) -> Arc<Option<KeySet>> {
        self.keys.load_full()
    }

    /// A file's key set read again if the file changed (looked at once a second); a
    /// URL's fetched again once its refresh period is over.
    pub(super) async fn keep_fresh(&self) {
        match &self.source {
            KeySource::File(path) => {
                {
                    let mut looked = self.looked.lock().expect("key set lock");
                    if looked.elapsed() < FILE_CHECK {
                        return;
                    }
                    *looked = Instant::now();
                }
                let current = self.keys.load();
                let stamp = stamp_of(path);
                if stamp.is_some() && current.as_ref().as_ref().map(|s| s.stamp) != Some(stamp) {
                    match read_file(path) {
                        Ok(set) => {
                            self.keys.store(Arc::new(Some(set)));
                            self.failing.store(false, Ordering::Relaxed);
                            tracing::info!(file = %path.display(), keys = self.what, "the key set was read again");
                        }
                        Err(why) => self.failed(&why),
                    }
                }
            }
            KeySource::Url(_) => {
                let stale = self
                    .keys
                    .load()
                    .as_ref()
                    .as_ref()
                    .is_none_or(|set| set.read_at.elapsed() >= self.refresh);
                if stale {
                    self.fetch().await;
                }
            }
        }
    }

    pub(super) fn may_fetch_early(&self) -> bool {
        if !matches!(self.source, KeySource::Url(_)) {
            return false;
        }
        let mut looked = self.looked.lock().expect("key set lock");
        if looked.elapsed() < EARLY_FETCH {
            return false;
        }
        *looked = Instant::now();
        true
    }

    /// Fetches the URL's key set; kept only if it holds a usable key. While another
    /// fetch runs, this one returns at once.
    pub(super) async fn fetch(&self) {
        let (KeySource::Url(url), Some(http)) = (&self.source, &self.http) else {
            return;
        };
        let Ok(_one) = self.fetching.try_lock() else {
            return;
        };
        let fetched = async {
            let answer = http
                .get(url.clone())
                .header("accept", "application/json")
                .send()
                .await
                .map_err(|e| format!("cannot fetch {url}: {e}"))?;
            if !answer.status().is_success() {
                return Err(format!("{url} answered {}", answer.status()));
            }
            let bytes = answer
                .bytes()
                .await
                .map_err(|e| format!("cannot read {url}: {e}"))?;
            if bytes.len() > MAX_KEY_SET_BYTES {
                return Err(format!(
                    "{url}: the key set is over {MAX_KEY_SET_BYTES} bytes"
                ));
            }
            parse(&bytes, url.as_str())
        }
        .await;
        match fetched {
            Ok(keys) => {
                self.keys.store(Arc::new(Some(KeySet {
                    keys,
                    read_at: Instant::now(),
                    stamp: None,
                })));
                self.failing.store(false, Ordering::Relaxed);
            }
            // A key set read before stays in use; the fetch is tried again later.
            Err(why) => self.failed(&why),
        }
    }

    fn failed(&self, why: &str) {
        if !self.failing.swap(true, Ordering::Relaxed) {
            tracing::warn!(source = %self.source_name(), keys = self.what, why, "the key set could not be read; the last one read stays in use");
        }
    }

    pub(super) fn source_name(&self) -> String {
        match &self.source {
            KeySource::File(path) => path.display().to_string(),
            KeySource::Url(url) => url.to_string(),
        }
    }
}

impl KeySet {
    /// The keys that may verify a signature by `algorithm` naming key `kid`: of its
    /// family, for that algorithm when a key says, and the one named when one is.
    pub(super) fn fitting<'a>(
        &'a self,
        algorithm: Algorithm,
        kid: Option<&'a str>,
    ) -> impl Iterator<Item = &'a Key> + 'a {
        self.keys.iter().filter(move |key| {
            key.family.fits(algorithm)
                && key.algorithm.is_none_or(|a| a == algorithm)
                && match (kid, &key.id) {
                    (Some(wanted), Some(id)) => wanted == id,
                    (Some(_), None) => false,
                    (None, _) => true,
                }
        })
    }
}

/// Whether the key set file at `path` can be read and holds a usable key (for the
/// configuration's check, before anything starts).
pub fn check_file(path: &std::path::Path) -> Result<(), String> {
    read_file(path).map(|_| ())
}

/// A file's modification time and length: what says it changed.
pub(super) fn stamp_of(path: &std::path::Path) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

/// The key set in a file, read now.
pub(super) fn read_file(path: &std::path::Path) -> Result<KeySet, String> {
    let stamp = stamp_of(path);
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if bytes.len() > MAX_KEY_SET_BYTES {
        return Err(format!(
            "{}: the key set is over {MAX_KEY_SET_BYTES} bytes",
            path.display()
        ));
    }
    Ok(KeySet {
        keys: parse(&bytes, &path.display().to_string())?,
        read_at: Instant::now(),
        stamp,
    })
}

/// The usable signing keys of a JWKS document (`{"keys": [...]}`); keys for
/// encryption, of other types or that do not parse are left out. None usable: an error.
pub(super) fn parse(bytes: &[u8], source: &str) -> Result<Vec<Key>, String> {
    let document: Value =
        serde_json::from_slice(bytes).map_err(|e| format!("{source}: not JSON: {e}"))?;
    let Some(listed) = document.get("keys").and_then(Value::as_array) else {
        return Err(format!("{source}: not a JWK set (no \"keys\" list)"));
    };
    let keys: Vec<Key> = listed
        .iter()
        .filter_map(|value| serde_json::from_value::<Jwk>(value.clone()).ok())
        .filter_map(|jwk| key_of(&jwk))
        .collect();
    if keys.is_empty() {
        return Err(format!(
            "{source}: no usable signing key (RSA, EC P-256 or P-384, or Ed25519)"
        ));
    }
    Ok(keys)
}

/// One JWK as a key to verify with, if its type and parameters are usable.
pub(super) fn key_of(jwk: &Jwk) -> Option<Key> {
    if jwk
        .common
        .public_key_use
        .as_ref()
        .is_some_and(|u| *u != PublicKeyUse::Signature)
    {
        return None;
    }
    let family = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => Family::Rsa,
        AlgorithmParameters::EllipticCurve(ec) => match ec.curve {
            EllipticCurve::P256 => Family::P256,
            EllipticCurve::P384 => Family::P384,
            _ => return None,
        },
        AlgorithmParameters::OctetKeyPair(okp) if okp.curve == EllipticCurve::Ed25519 => {
            Family::Ed25519
        }
        _ => return None,
    };
    let algorithm = match jwk.common.key_algorithm {
        None => None,
        Some(said) => {
            let algorithm = match said {
                KeyAlgorithm::RS256 => Algorithm::RS256,
                KeyAlgorithm::RS384 => Algorithm::RS384,
                KeyAlgorithm::RS512 => Algorithm::RS512,
                KeyAlgorithm::PS256 => Algorithm::PS256,
                KeyAlgorithm::PS384 => Algorithm::PS384,
                KeyAlgorithm::PS512 => Algorithm::PS512,
                KeyAlgorithm::ES256 => Algorithm::ES256,
                KeyAlgorithm::ES384 => Algorithm::ES384,
                KeyAlgorithm::EdDSA => Algorithm::EdDSA,
                _ => return None,
            };
            if !family.fits(algorithm) {
                return None;
            }
            Some(algorithm)
        }
    };
    Some(Key {
        id: jwk.common.key_id.clone(),
        algorithm,
        key: DecodingKey::from_jwk(jwk).ok()?,
        family,
    })
}
