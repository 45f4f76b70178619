//! Who is asking (issue 43, point 4; issue 44, point 3): the sender's id and role for
//! the role rules, from the configured sources only. A JWT in `Authorization`, when a
//! key set is configured, verified against it (signature, expiry, issuer, audience);
//! else a header an authenticating proxy sets, when one is named; else the default
//! role. Nothing a client sends is trusted unless a setting says so, and no token, key
//! or claim value is ever logged or put in an answer.

use std::sync::Arc;
use std::time::Duration;

use hyper::header::AUTHORIZATION;
use jsonwebtoken::Validation;
use serde_json::Value;

pub use crate::front::jwks::KeySource;
use crate::front::jwks::{KeyRing, ALLOWED};
use crate::http1::head::Headers;
use crate::pb::ParticipantRole;
use crate::rules::policy::Role;

/// A role as the settings and the role header name it: a role's name (the rules'), or
/// `none`.
pub fn parse_role(word: &str) -> Option<ParticipantRole> {
    let word = word.trim().to_ascii_lowercase();
    if word == "none" {
        return Some(ParticipantRole::None);
    }
    Role::from_name(&word).map(Role::to_proto)
}

/// The word for `role` (the inverse of [`parse_role`]).
pub fn role_word(role: ParticipantRole) -> &'static str {
    Role::of(role).map_or("none", Role::name)
}

/// How callers' JWTs are verified and read.
#[derive(Clone, Debug, PartialEq)]
pub struct JwtOptions {
    /// The key set.
    pub keys: KeySource,
    /// The `iss` every token must carry.
    pub issuer: String,
    /// An `aud` every token must carry.
    pub audience: String,
    /// The claim naming the sender (`sub`); a dotted name reads a nested claim when no
    /// claim has the whole name.
    pub sender_claim: String,
    /// The claim naming the role (a word, or a list whose first role word counts).
    pub role_claim: String,
    /// Refuse a request that carries no token (else it gets the default role).
    pub required: bool,
    /// How long a fetched key set is kept.
    pub refresh: Duration,
}

/// Who a verified token says is asking.
#[derive(Clone, Debug, PartialEq)]
pub struct Verified {
    /// The sender's claim (empty without one).
    pub sender: String,
    /// The role the role claim names, if it names one.
    pub role: Option<ParticipantRole>,
}

/// Why a request is refused before anything is forwarded. The texts name no value.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Refused {
    /// No token, and one is required.
    #[error("a bearer token is required")]
    Missing,
    /// The token did not verify.
    #[error("the bearer token was refused: {0}")]
    Invalid(&'static str),
    /// No key set could be read yet.
    #[error("the keys that verify bearer tokens could not be read ({0})")]
    NoKeys(String),
}

/// Verifies callers' tokens against a key set it keeps fresh.
pub struct Verifier {
    options: JwtOptions,
    keys: KeyRing,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Verifier {
    /// A verifier for `options`, its key set read once: a file that cannot be read or
    /// holds no usable key is an error (the front does not start); a URL that cannot
    /// be fetched yet is logged, and fetched again at the next token.
    pub async fn start(options: JwtOptions) -> Result<Arc<Self>, String> {
        let keys = KeyRing::start(options.keys.clone(), options.refresh, "JWT").await?;
        Ok(Arc::new(Self { options, keys }))
    }

    /// Who `headers`' bearer token says is asking: `None` without a token (when none is
    /// required), an error when it does not verify.
    pub async fn verify(&self, headers: &Headers) -> Result<Option<Verified>, Refused> {
        let Some(token) = bearer(headers) else {
            return if self.options.required {
                Err(Refused::Missing)
            } else {
                Ok(None)
            };
        };
        let header =
            jsonwebtoken::decode_header(token).map_err(|_| Refused::Invalid("it is not a JWT"))?;
        if !ALLOWED.contains(&header.alg) {
            return Err(Refused::Invalid("its algorithm is not an allowed one"));
        }
        self.keys.keep_fresh().await;
        let mut outcome = self.verify_with_keys(token, &header);
        if matches!(outcome, Err(Refused::Invalid(NO_KEY))) && self.keys.may_fetch_early() {
            // A key the set does not hold: the issuer may have rotated its keys.
            self.keys.fetch().await;
            outcome = self.verify_with_keys(token, &header);
        }
        let claims = outcome?;
        Ok(Some(Verified {
            sender: claim(&claims, &self.options.sender_claim)
                .and_then(|v| match v {
                    Value::String(text) => Some(text.clone()),
                    Value::Number(number) => Some(number.to_string()),
                    _ => None,
                })
                .unwrap_or_default(),
            role: claim(&claims, &self.options.role_claim).and_then(role_of),
        }))
    }

    fn verify_with_keys(
        &self,
        token: &str,
        header: &jsonwebtoken::Header,
    ) -> Result<Value, Refused> {
        let keys = self.keys.current();
        let Some(set) = keys.as_ref() else {
            return Err(Refused::NoKeys(self.keys.source_name()));
        };
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&self.options.issuer]);
        validation.set_audience(&[&self.options.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        let candidates = set.fitting(header.alg, header.kid.as_deref());
        let mut refused = Refused::Invalid(NO_KEY);
        for key in candidates {
            match jsonwebtoken::decode::<Value>(token, &key.key, &validation) {
                Ok(data) => return Ok(data.claims),
                Err(error) => {
                    use jsonwebtoken::errors::ErrorKind::*;
                    refused = Refused::Invalid(match error.kind() {
                        ExpiredSignature => "it has expired",
                        ImmatureSignature => "it is not valid yet",
                        InvalidIssuer => "its issuer is not the configured one",
                        InvalidAudience => "its audience is not the configured one",
                        MissingRequiredClaim(_) => "it lacks exp, iss or aud",
                        InvalidSignature => "its signature does not verify",
                        _ => "it could not be verified",
                    });
                    // Past the signature, another key would not change the answer.
                    if !matches!(error.kind(), InvalidSignature | InvalidAlgorithm) {
                        break;
                    }
                }
            }
        }
        Err(refused)
    }
}

/// What a refusal says when no key of the set fits the token.
const NO_KEY: &str = "no key of the configured set fits it";

/// The token of an `Authorization: Bearer` header.
fn bearer(headers: &Headers) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|token| !token.is_empty())
}

/// A claim by name, or, when no claim has the whole name and it has dots, by path.
fn claim<'a>(claims: &'a Value, name: &str) -> Option<&'a Value> {
    claims.get(name).or_else(|| {
        name.contains('.')
            .then(|| name.split('.').try_fold(claims, |at, step| at.get(step)))
            .flatten()
    })
}

/// The role a role claim names: a role word, or the first role word of a list.
fn role_of(value: &Value) -> Option<ParticipantRole> {
    match value {
        Value::String(word) => parse_role(word),
        Value::Array(words) => words.iter().filter_map(Value::as_str).find_map(parse_role),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
    use ring::signature::KeyPair as _;
    use serde_json::json;

    /// An Ed25519 key: its PKCS#8 document and its JWK (kid `kid`).
    fn key(kid: &str) -> (Vec<u8>, Value) {
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = ring::signature::Ed25519KeyPair::generate_pkcs8(&rng).unwrap();
        let pair = ring::signature::Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
        let x = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(pair.public_key().as_ref());
        let jwk = json!({"kty": "OKP", "crv": "Ed25519", "x": x, "kid": kid, "use": "sig", "alg": "EdDSA"});
        (pkcs8.as_ref().to_vec(), jwk)
    }

    fn token(pkcs8: &[u8], kid: Option<&str>, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::EdDSA);
        header.kid = kid.map(str::to_owned);
        encode(&header, claims, &EncodingKey::from_ed_der(pkcs8)).unwrap()
    }

    fn claims(extra: Value) -> Value {
        let mut claims = json!({"iss": "https://issuer.test", "aud": "front", "sub": "ada",
                                "role": "admin", "exp": jsonwebtoken::get_current_timestamp() + 600});
        for (k, v) in extra.as_object().unwrap() {
            claims[k] = v.clone();
        }
        claims
    }

    fn bearer_headers(token: &str) -> Headers {
        let mut headers = Headers::new();
        headers.insert(AUTHORIZATION, format!("Bearer {token}").parse().unwrap());
        headers
    }

    async fn verifier(dir: &std::path::Path, keys: &[&Value], required: bool) -> Arc<Verifier> {
        let path = dir.join("jwks.json");
        std::fs::write(&path, json!({"keys": keys}).to_string()).unwrap();
        Verifier::start(JwtOptions {
            keys: KeySource::File(path),
            issuer: "https://issuer.test".into(),
            audience: "front".into(),
            sender_claim: "sub".into(),
            role_claim: "role".into(),
            required,
            refresh: std::time::Duration::from_secs(300),
        })
        .await
        .unwrap()
    }

    #[tokio::test]
    async fn a_valid_token_names_the_sender_and_role_and_a_bad_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (pkcs8, jwk) = key("k1");
        let (other, _) = key("k1");
        let verifier = verifier(dir.path(), &[&jwk], false).await;
        let verify = |token: String| {
            let verifier = Arc::clone(&verifier);
            async move { verifier.verify(&bearer_headers(&token)).await }
        };
        assert_eq!(
            verify(token(&pkcs8, Some("k1"), &claims(json!({})))).await,
            Ok(Some(Verified {
                sender: "ada".into(),
                role: Some(ParticipantRole::Admin)
            }))
        );
        // No kid: every key that fits is tried.
        assert!(verify(token(&pkcs8, None, &claims(json!({}))))
            .await
            .is_ok());
        let refused = |why: &'static str| Err(Refused::Invalid(why));
        assert_eq!(
            verify(token(&other, Some("k1"), &claims(json!({})))).await,
            refused("its signature does not verify")
        );
        assert_eq!(
            verify(token(&pkcs8, Some("k2"), &claims(json!({})))).await,
            refused(NO_KEY)
        );
        assert_eq!(
            verify(token(
                &pkcs8,
                Some("k1"),
                &claims(json!({"iss": "https://else.test"}))
            ))
            .await,
            refused("its issuer is not the configured one")
        );
        assert_eq!(
            verify(token(
                &pkcs8,
                Some("k1"),
                &claims(json!({"aud": "someone-else"}))
            ))
            .await,
            refused("its audience is not the configured one")
        );
        assert_eq!(
            verify(token(
                &pkcs8,
                Some("k1"),
                &claims(json!({"exp": 1_000_000}))
            ))
            .await,
            refused("it has expired")
        );
        // A shared-secret token is refused whatever its secret.
        let hs = encode(
            &Header::new(Algorithm::HS256),
            &claims(json!({})),
            &EncodingKey::from_secret(b"a-secret-of-thirty-two-bytes-...").unwrap(),
        )
        .unwrap();
        assert_eq!(
            verify(hs).await,
            refused("its algorithm is not an allowed one")
        );
        assert_eq!(
            verify("not-a-token".into()).await,
            refused("it is not a JWT")
        );
        // No token: the default (not required), or refused (required).
        assert_eq!(verifier.verify(&Headers::new()).await, Ok(None));
        let strict = self::verifier(dir.path(), &[&jwk], true).await;
        assert_eq!(strict.verify(&Headers::new()).await, Err(Refused::Missing));
    }

    #[tokio::test]
    async fn roles_come_from_a_word_a_list_or_a_nested_claim() {
        let dir = tempfile::tempdir().unwrap();
        let (pkcs8, jwk) = key("k1");
        let path = dir.path().join("jwks.json");
        std::fs::write(&path, json!({"keys": [jwk]}).to_string()).unwrap();
        let nested = Verifier::start(JwtOptions {
            keys: KeySource::File(path),
            issuer: "https://issuer.test".into(),
            audience: "front".into(),
            sender_claim: "email".into(),
            role_claim: "realm_access.roles".into(),
            required: false,
            refresh: std::time::Duration::from_secs(300),
        })
        .await
        .unwrap();
        let claims = claims(json!({"email": "ada@example.test",
            "realm_access": {"roles": ["offline_access", "reporter", "admin"]}}));
        let verified = nested
            .verify(&bearer_headers(&token(&pkcs8, Some("k1"), &claims)))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(verified.sender, "ada@example.test");
        assert_eq!(verified.role, Some(ParticipantRole::Reporter));
        assert_eq!(role_of(&json!("Watcher")), Some(ParticipantRole::Watcher));
        assert_eq!(role_of(&json!("root")), None);
    }

    #[tokio::test]
    async fn a_key_set_file_is_read_again_when_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let (old, old_jwk) = key("old");
        let (new, new_jwk) = key("new");
        let verifier = verifier(dir.path(), &[&old_jwk], false).await;
        let new_token = token(&new, Some("new"), &claims(json!({})));
        assert!(verifier.verify(&bearer_headers(&new_token)).await.is_err());
        // Rotated: the new key in, the old one out (a different length, so the
        // change shows even within the file system's timestamp granularity).
        std::fs::write(
            dir.path().join("jwks.json"),
            json!({"keys": [new_jwk], "rotated": true}).to_string(),
        )
        .unwrap();
        verifier.keys.look_again_now();
        assert!(verifier.verify(&bearer_headers(&new_token)).await.is_ok());
        let old_token = token(&old, Some("old"), &claims(json!({})));
        assert!(verifier.verify(&bearer_headers(&old_token)).await.is_err());
        // A damaged file keeps the last good set in use.
        std::fs::write(dir.path().join("jwks.json"), "{not json").unwrap();
        verifier.keys.look_again_now();
        assert!(verifier.verify(&bearer_headers(&new_token)).await.is_ok());
    }

    #[test]
    fn a_key_set_without_a_usable_signing_key_is_an_error() {
        use crate::front::jwks::parse;
        assert!(parse(b"{}", "x").is_err());
        assert!(parse(br#"{"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}"#, "x").is_err());
        let (_, mut jwk) = key("enc");
        jwk["use"] = json!("enc");
        assert!(parse(json!({"keys": [jwk]}).to_string().as_bytes(), "x").is_err());
    }

    #[test]
    fn roles_read_back_as_written() {
        for role in [
            ParticipantRole::Assignee,
            ParticipantRole::Reporter,
            ParticipantRole::Watcher,
            ParticipantRole::Admin,
            ParticipantRole::None,
        ] {
            assert_eq!(parse_role(role_word(role)), Some(role));
        }
        assert_eq!(parse_role(" Admin "), Some(ParticipantRole::Admin));
        assert_eq!(parse_role("root"), None);
    }
}
