//! JWK sets for verifying callers' tokens: read from a file or a fetched document,
//! each key kept with the one family of algorithms it may verify.

use std::time::{Instant, SystemTime};

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

/// A key set as read, and what it came from.
pub(super) struct KeySet {
    pub(super) keys: Vec<Key>,
    /// When it was read (a URL's), and the file's modification time and length.
    pub(super) read_at: Instant,
    pub(super) stamp: Option<(SystemTime, u64)>,
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
