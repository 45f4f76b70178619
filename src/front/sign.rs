//! The merged card's signature: A2A's `AgentCardSignature`, a JWS (RFC 7515) whose
//! payload is the card itself, left out of the signature object (detached): `protected`
//! is the protected header and `signature` the signature, both base64url.
//!
//! What is signed is the card's canonical form, as A2A's SDKs compute it to verify (the
//! card parsed into A2A's types, written out again, cleaned): the card without
//! `signatures`, with every null, empty string, empty array and empty object left out,
//! and an extension's `required: false` too (a plain `bool` field, which A2A's types do
//! not write when false), written as RFC 8785 (JCS) writes JSON: object keys sorted by
//! their UTF-16 code units, no whitespace.

use std::fmt::Write as _;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, Ed25519KeyPair, KeyPair as _, RsaKeyPair};
use serde_json::{json, Value};

/// A private key the front signs with, and the JWS header naming it.
pub struct Signer {
    key: Key,
    /// The protected header, base64url.
    protected: String,
    /// The JWS algorithm (`ES256`, `EdDSA`, `RS256`).
    alg: &'static str,
    kid: String,
    rng: SystemRandom,
}

enum Key {
    Ecdsa(EcdsaKeyPair),
    Ed25519(Ed25519KeyPair),
    Rsa(RsaKeyPair),
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer")
            .field("alg", &self.alg)
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

impl Signer {
    /// A signer from a PKCS#8 PEM private key (`-----BEGIN PRIVATE KEY-----`): an EC
    /// P-256 key signs with ES256, an Ed25519 key with EdDSA, an RSA key with RS256.
    /// `kid` names the key in the header (and `jku`, when given, where its public key
    /// set is), so that a verifier finds the public key.
    pub fn from_pem(pem: &str, kid: &str, jku: Option<&str>) -> Result<Self, String> {
        let der = pkcs8_der(pem)?;
        let rng = SystemRandom::new();
        let (key, alg) = if let Ok(key) =
            EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &der, &rng)
        {
            (Key::Ecdsa(key), "ES256")
        } else if let Ok(key) = Ed25519KeyPair::from_pkcs8_maybe_unchecked(&der) {
            (Key::Ed25519(key), "EdDSA")
        } else if let Ok(key) = RsaKeyPair::from_pkcs8(&der) {
            (Key::Rsa(key), "RS256")
        } else {
            return Err("the key is not an EC P-256, Ed25519 or RSA private key in PKCS#8".into());
        };
        let mut header = json!({"alg": alg, "kid": kid, "typ": "JOSE"});
        if let Some(jku) = jku {
            header["jku"] = json!(jku);
        }
        Ok(Self {
            key,
            protected: URL_SAFE_NO_PAD.encode(canonical(&header)),
            alg,
            kid: kid.to_owned(),
            rng,
        })
    }

    /// The public key, as the bytes its algorithm uses (for tests and `ctl check`).
    pub fn public_key(&self) -> &[u8] {
        match &self.key {
            Key::Ecdsa(key) => key.public_key().as_ref(),
            Key::Ed25519(key) => key.public_key().as_ref(),
            Key::Rsa(key) => key.public().as_ref(),
        }
    }

    /// Replaces `card`'s signatures with this key's signature of it.
    pub fn sign(&self, card: &mut Value) {
        if !card.is_object() {
            return;
        }
        // The card is served in its canonical form, so that JCS over exactly the JSON
        // served (less `signatures`) is what was signed, as well as what A2A's SDKs
        // rebuild from their types.
        *card = canonical_value(card);
        let payload = URL_SAFE_NO_PAD.encode(canonical(card));
        let input = format!("{}.{payload}", self.protected);
        let signed = match &self.key {
            Key::Ecdsa(key) => key
                .sign(&self.rng, input.as_bytes())
                .map(|s| s.as_ref().to_vec()),
            Key::Ed25519(key) => Ok(key.sign(input.as_bytes()).as_ref().to_vec()),
            Key::Rsa(key) => {
                let mut out = vec![0; key.public().modulus_len()];
                key.sign(
                    &signature::RSA_PKCS1_SHA256,
                    &self.rng,
                    input.as_bytes(),
                    &mut out,
                )
                .map(|()| out)
            }
        };
        match signed {
            Ok(bytes) => {
                card["signatures"] = json!([{
                    "protected": self.protected,
                    "signature": URL_SAFE_NO_PAD.encode(bytes),
                }]);
            }
            Err(_) => {
                tracing::error!(kid = %self.kid, "the card could not be signed; it is served unsigned")
            }
        }
    }
}

/// The DER of the one PKCS#8 private key in `pem`.
fn pkcs8_der(pem: &str) -> Result<Vec<u8>, String> {
    const BEGIN: &str = "-----BEGIN PRIVATE KEY-----";
    const END: &str = "-----END PRIVATE KEY-----";
    let Some(start) = pem.find(BEGIN) else {
        return Err(format!(
            "no {BEGIN} block (an EC or RSA key in another form converts with `openssl pkcs8 -topk8 -nocrypt`)"
        ));
    };
    let body = &pem[start + BEGIN.len()..];
    let end = body
        .find(END)
        .ok_or_else(|| format!("the key has no {END} line"))?;
    let text: String = body[..end].split_whitespace().collect();
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| format!("the key is not base64: {e}"))
}

/// `value` in canonical form: without signatures at the top, without what A2A's types
/// leave out (nulls, empty strings, arrays and objects, an extension's `required:
/// false`), written as JCS.
pub fn canonical(value: &Value) -> String {
    let mut out = String::new();
    write_jcs(&canonical_value(value), &mut out);
    out
}

/// `value` as [`canonical`] writes it, still a value: what a signed card is served as.
fn canonical_value(value: &Value) -> Value {
    let mut cleaned = cleaned(value).unwrap_or(Value::Object(serde_json::Map::new()));
    if let Some(object) = cleaned.as_object_mut() {
        object.remove("signatures");
    }
    if let Some(extensions) = cleaned
        .pointer_mut("/capabilities/extensions")
        .and_then(Value::as_array_mut)
    {
        for extension in extensions.iter_mut().filter_map(Value::as_object_mut) {
            if extension.get("required") == Some(&Value::Bool(false)) {
                extension.remove("required");
            }
        }
    }
    cleaned
}

fn cleaned(value: &Value) -> Option<Value> {
    match value {
        Value::Null => None,
        Value::String(s) if s.is_empty() => None,
        Value::Array(items) => {
            let kept: Vec<Value> = items.iter().filter_map(cleaned).collect();
            (!kept.is_empty()).then_some(Value::Array(kept))
        }
        Value::Object(object) => {
            let kept: serde_json::Map<String, Value> = object
                .iter()
                .filter_map(|(k, v)| cleaned(v).map(|v| (k.clone(), v)))
                .collect();
            (!kept.is_empty()).then_some(Value::Object(kept))
        }
        other => Some(other.clone()),
    }
}

/// RFC 8785: keys sorted by UTF-16 code units, strings escaped as JSON.stringify does
/// (serde_json's escaping is the same), no whitespace.
fn write_jcs(value: &Value, out: &mut String) {
    match value {
        Value::Object(object) => {
            let mut keys: Vec<&String> = object.keys().collect();
            keys.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_jcs(&object[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_jcs(item, out);
            }
            out.push(']');
        }
        other => {
            let _ = write!(out, "{other}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_canonical_form_sorts_keys_and_leaves_out_what_a2a_types_drop() {
        let card = json!({
            "name": "echo", "description": "", "skills": [],
            "capabilities": {"streaming": true, "extensions": [
                {"uri": "u", "required": false, "params": {"b": 1, "a": "é", "hidden": false}}]},
            "signatures": [{"protected": "x", "signature": "y"}],
            "icon": null, "ß": 1, "z": 2
        });
        assert_eq!(
            canonical(&card),
            r#"{"capabilities":{"extensions":[{"params":{"a":"é","b":1,"hidden":false},"uri":"u"}],"streaming":true},"name":"echo","z":2,"ß":1}"#
        );
    }

    #[test]
    fn a_signed_card_verifies_with_the_public_key() {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .unwrap();
        let pem = format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            base64::engine::general_purpose::STANDARD.encode(pkcs8.as_ref())
        );
        let signer = Signer::from_pem(&pem, "front-1", None).unwrap();
        let mut card =
            json!({"name": "echo", "signatures": [{"protected": "old", "signature": "old"}]});
        signer.sign(&mut card);
        let signatures = card["signatures"].as_array().unwrap().clone();
        assert_eq!(signatures.len(), 1);
        let protected = signatures[0]["protected"].as_str().unwrap();
        let header: Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(protected).unwrap()).unwrap();
        assert_eq!(
            header,
            json!({"alg": "ES256", "kid": "front-1", "typ": "JOSE"})
        );
        let input = format!("{protected}.{}", URL_SAFE_NO_PAD.encode(canonical(&card)));
        let sig = URL_SAFE_NO_PAD
            .decode(signatures[0]["signature"].as_str().unwrap())
            .unwrap();
        signature::UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, signer.public_key())
            .verify(input.as_bytes(), &sig)
            .expect("the signature verifies");
        // Changed, it no longer does.
        card["name"] = json!("other");
        let input = format!("{protected}.{}", URL_SAFE_NO_PAD.encode(canonical(&card)));
        assert!(signature::UnparsedPublicKey::new(
            &signature::ECDSA_P256_SHA256_FIXED,
            signer.public_key()
        )
        .verify(input.as_bytes(), &sig)
        .is_err());
    }

    #[test]
    fn a_signed_card_is_served_as_exactly_what_was_signed() {
        let rng = SystemRandom::new();
        let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng).unwrap();
        let pem = format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            base64::engine::general_purpose::STANDARD.encode(pkcs8.as_ref())
        );
        let signer = Signer::from_pem(&pem, "front-1", None).unwrap();
        let mut card = json!({"name": "echo", "description": "", "skills": [], "x": null,
            "capabilities": {"extensions": [{"uri": "u", "required": false, "params": {}}]}});
        signer.sign(&mut card);
        let mut served = card.clone();
        served.as_object_mut().unwrap().remove("signatures");
        // JCS over the served JSON is the signed payload: nothing in it is cleaned away.
        assert_eq!(canonical_value(&served), served);
        assert_eq!(
            served,
            json!({"name": "echo", "capabilities": {"extensions": [{"uri": "u"}]}})
        );
    }

    #[test]
    fn a_key_in_another_form_is_named() {
        let error =
            Signer::from_pem("-----BEGIN EC PRIVATE KEY-----\nAA==\n", "k", None).unwrap_err();
        assert!(error.contains("openssl pkcs8 -topk8"), "{error}");
    }
}
