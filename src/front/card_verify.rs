//! The agent's card checked before the front vouches for it (issue 63, point 8): with a
//! key set named (`--front-card-jwks-file` or `--front-card-jwks-url`), a card fetched
//! from the agent is taken only when one of its `signatures` (A2A's
//! `AgentCardSignature`: a JWS over the card's canonical form, the payload detached)
//! verifies with a key of the set. Any other is refused, failing closed: the card last
//! verified goes on being served (or none, 503), the refusal counted and logged.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use jsonwebtoken::Algorithm;
use serde_json::Value;

use crate::front::jwks::{KeyRing, KeySource, ALLOWED};
use crate::front::sign;

/// Why a card was refused when no key of the set fits any of its signatures.
const NO_KEY: &str = "no key of the card's key set fits its signatures";

/// Checks the agent's cards against a key set it keeps fresh.
pub struct CardVerifier {
    keys: KeyRing,
    /// A refusal is logged once until a card verifies again.
    refusing: AtomicBool,
}

impl std::fmt::Debug for CardVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CardVerifier")
            .field("keys", &self.keys.source_name())
            .finish()
    }
}

impl CardVerifier {
    /// A verifier for the key set at `source` (a URL's kept for `refresh`), read once:
    /// a file that cannot be read is an error (the front does not start).
    pub async fn start(source: KeySource, refresh: Duration) -> Result<Self, String> {
        Ok(Self {
            keys: KeyRing::start(source, refresh, "card").await?,
            refusing: AtomicBool::new(false),
        })
    }

    /// Whether one of `card`'s signatures verifies with a key of the set; `Err` says
    /// why not (no value of the card or key in it), logged the first time since a card
    /// last verified.
    pub async fn verify(&self, card: &Value) -> Result<(), &'static str> {
        self.keys.keep_fresh().await;
        let checked = match self.check(card) {
            // A key the set does not hold: the agent's signer may have rotated its keys.
            Err(NO_KEY) if self.keys.may_fetch_early() => {
                self.keys.fetch().await;
                self.check(card)
            }
            checked => checked,
        };
        match checked {
            Ok(()) => self.refusing.store(false, Ordering::Relaxed),
            Err(why) if !self.refusing.swap(true, Ordering::Relaxed) => {
                tracing::warn!(why, keys = %self.keys.source_name(), "the agent's card does not verify with the card key set: it is not served (the last verified card is, or none)");
            }
            Err(_) => {}
        }
        checked
    }

    fn check(&self, card: &Value) -> Result<(), &'static str> {
        let signatures = card
            .get("signatures")
            .and_then(Value::as_array)
            .filter(|s| !s.is_empty())
            .ok_or("the card is not signed")?;
        let keys = self.keys.current();
        let set = keys
            .as_ref()
            .as_ref()
            .ok_or("no card key set could be read yet")?;
        // What each signature signed: the card's canonical form, as the SDKs verify it.
        let payload = URL_SAFE_NO_PAD.encode(sign::canonical(card));
        let mut why = NO_KEY;
        for signature in signatures {
            let protected = signature.get("protected").and_then(Value::as_str);
            let signed = signature.get("signature").and_then(Value::as_str);
            let (Some(protected), Some(signed)) = (protected, signed) else {
                why = "a signature lacks its protected header or its value";
                continue;
            };
            let Some((algorithm, kid)) = header_of(protected) else {
                why = "a signature's protected header is not an allowed JWS header";
                continue;
            };
            let message = format!("{protected}.{payload}");
            for key in set.fitting(algorithm, kid.as_deref()) {
                match jsonwebtoken::crypto::verify(signed, message.as_bytes(), &key.key, algorithm)
                {
                    Ok(true) => return Ok(()),
                    _ => why = "its signature does not verify",
                }
            }
        }
        Err(why)
    }
}

/// The algorithm (an allowed one) and the key id a protected header names.
fn header_of(protected: &str) -> Option<(Algorithm, Option<String>)> {
    let bytes = URL_SAFE_NO_PAD.decode(protected).ok()?;
    let header: Value = serde_json::from_slice(&bytes).ok()?;
    let algorithm: Algorithm = header.get("alg")?.as_str()?.parse().ok()?;
    if !ALLOWED.contains(&algorithm) {
        return None;
    }
    let kid = header.get("kid").and_then(Value::as_str).map(str::to_owned);
    Some((algorithm, kid))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::KeyPair as _;
    use serde_json::json;

    /// An Ed25519 signer of cards and its key set file, in `dir`.
    fn signer_and_keys(dir: &std::path::Path, kid: &str) -> (sign::Signer, std::path::PathBuf) {
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = ring::signature::Ed25519KeyPair::generate_pkcs8(&rng).unwrap();
        let pem = format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            base64::engine::general_purpose::STANDARD.encode(pkcs8.as_ref())
        );
        let pair = ring::signature::Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
        let x = URL_SAFE_NO_PAD.encode(pair.public_key().as_ref());
        let jwks = json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "x": x, "kid": kid}]});
        let path = dir.join(format!("{kid}.json"));
        std::fs::write(&path, jwks.to_string()).unwrap();
        (sign::Signer::from_pem(&pem, kid, None).unwrap(), path)
    }

    #[tokio::test]
    async fn a_card_is_taken_only_with_a_signature_of_the_set() {
        let dir = tempfile::tempdir().unwrap();
        let (signer, keys) = signer_and_keys(dir.path(), "agent-1");
        let (other, _) = signer_and_keys(dir.path(), "other");
        let verifier = CardVerifier::start(KeySource::File(keys), Duration::from_secs(60))
            .await
            .unwrap();
        let mut card = json!({"name": "echo", "version": "1.0", "skills": []});
        assert_eq!(verifier.verify(&card).await, Err("the card is not signed"));
        signer.sign(&mut card);
        assert_eq!(verifier.verify(&card).await, Ok(()));
        // Changed after it was signed: the signature no longer holds.
        let mut changed = card.clone();
        changed["name"] = json!("evil");
        assert_eq!(
            verifier.verify(&changed).await,
            Err("its signature does not verify")
        );
        // Signed by a key the set does not hold.
        let mut foreign = json!({"name": "echo"});
        other.sign(&mut foreign);
        assert_eq!(verifier.verify(&foreign).await, Err(NO_KEY));
        // A header naming no allowed algorithm.
        let mut none = card.clone();
        none["signatures"][0]["protected"] = json!(URL_SAFE_NO_PAD.encode(r#"{"alg":"none"}"#));
        assert!(verifier.verify(&none).await.is_err());
    }
}
