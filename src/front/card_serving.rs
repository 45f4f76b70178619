//! The card served: the agent's, fetched and kept by its caching headers, merged with
//! this registry's entry and the front's URLs (and signed when a key is configured) at
//! the first request after either changes, served as those bytes until the next,
//! revalidated by its ETag; the extended card merged the same way.

use std::sync::atomic::Ordering;
use std::time::Instant;

use axum::body::Body;
use bytes::Bytes;
use hyper::header::{self, HeaderName, HeaderValue};
use hyper::{Method, StatusCode};
use serde_json::{json, Value};

use crate::front::answer::{json_answer, mark, Outcome};
use crate::front::card::{self, CardCache, Served};
use crate::front::context::Context;
use crate::front::json_text;
use crate::front::operations::Binding;
use crate::front::reading::read_json;
use crate::front::upstream::identity_only;
use crate::http1::head::{Answer, Headers};
use crate::registry::Snapshot;

/// Whether the front has a card to serve (for readiness): fetches the agent's card
/// when there is none fresh.
pub(super) async fn has_card(ctx: &Context) -> bool {
    let mut cache = ctx.card.lock().await;
    if cache.fresh().is_none() {
        refresh_card(ctx, &mut cache, &Headers::new()).await;
    }
    cache.last().is_some()
}

/// The merged card, or 503 naming the upstream when there has never been one.
pub(super) async fn card_answer(ctx: &Context, headers: &Headers) -> Answer {
    let mut cache = ctx.card.lock().await;
    if cache.fresh().is_none() {
        refresh_card(ctx, &mut cache, headers).await;
    }
    let Some(agent) = cache.last() else {
        return json_answer(
            StatusCode::SERVICE_UNAVAILABLE,
            &json!({"error": format!(
                "no agent card yet: the agent at {} has not served one",
                ctx.upstream.base()
            )}),
        );
    };
    let Ok(registry) = ctx.runner.registry().read() else {
        return json_answer(
            StatusCode::SERVICE_UNAVAILABLE,
            &json!({"error": "the command registry is not ready yet"}),
        );
    };
    let generation = cache.generation;
    let served = {
        let mut served = ctx.card_served.lock().expect("card lock");
        match &*served {
            Some(last) if last.made_from(generation, &registry) => last.parts(),
            _ => {
                // Made once per change of either card, then served as these bytes.
                let (etag, body) = merge_with(ctx, &mut agent.clone(), &registry);
                let made = Served::new(generation, registry, &etag, body, served.as_ref());
                let parts = made.parts();
                *served = Some(made);
                parts
            }
        }
    };
    drop(cache);
    merged_card(served, headers)
}

/// Which A2A versions the agent serves: as configured, or as its card says (the
/// last one fetched; fetched now if there is none).
pub(super) async fn agent_speaks(ctx: &Context) -> card::Versions {
    if let Some(versions) = ctx.options.upstream_versions {
        return versions;
    }
    let mut cache = ctx.card.lock().await;
    if cache.last().is_none() {
        refresh_card(ctx, &mut cache, &Headers::new()).await;
    }
    cache.last().map(|_| cache.versions).unwrap_or_default()
}

/// The card with this registry's entry, made at the next request after any change. It
/// carries its ETag and when it last changed, and must be revalidated at each use
/// (`max-age=0`): the commands on it change with the registry. A client's matching
/// `If-None-Match` gets 304.
fn merged_card(
    (etag, body, changed): (HeaderValue, Bytes, HeaderValue),
    asked: &Headers,
) -> Answer {
    let tag = etag.to_str().unwrap_or_default();
    let matched = asked
        .get_all(header::IF_NONE_MATCH)
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|v| v.trim().trim_start_matches("W/"))
        .any(|v| v == "*" || v == tag.trim_start_matches("W/"));
    let mut answer = if matched {
        let mut answer = Answer::new(Body::empty());
        *answer.status_mut() = StatusCode::NOT_MODIFIED;
        answer
    } else {
        let mut answer = Answer::new(Body::from(body));
        answer.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        answer
    };
    mark(&mut answer, Outcome::Answered);
    let headers = answer.headers_mut();
    headers.insert(header::ETAG, etag);
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("max-age=0, must-revalidate"),
    );
    headers.insert(header::LAST_MODIFIED, changed);
    answer
}

/// Merges this registry's entry and the front's URLs into `card`, and returns the
/// merged card's weak ETag (of its content, before any signature: an ES256 signature
/// differs at each signing); `None` when there is no registry to take the entry from
/// yet.
pub(super) fn merge(ctx: &Context, card: &mut Value) -> Option<String> {
    let registry = ctx.runner.registry().read().ok()?;
    Some(merge_with(ctx, card, &registry).0)
}

/// [`merge`] with `registry`'s entry: the ETag, and the card as served (its one
/// serialisation, or the signed card's when a key signs it).
fn merge_with(ctx: &Context, card: &mut Value, registry: &Snapshot) -> (String, Bytes) {
    let extension =
        serde_json::from_str::<Value>(&registry.card().extension_json).expect("our JSON");
    // The front serves gRPC on its own port for an agent whose gRPC it reaches.
    let grpc = (ctx.options.upstream_grpc.is_some()
        || card::grpc_address(card, ctx.upstream.base()).is_some())
    .then(|| {
        let host = ctx.public.host_str().unwrap_or("127.0.0.1");
        let port = ctx.public.port_or_known_default().unwrap_or(80);
        format!("{host}:{port}")
    });
    let dropped = card::merge(
        card,
        &extension,
        ctx.upstream.base(),
        &ctx.public,
        grpc.as_deref(),
    );
    let text = json_text::write(card);
    let digest = ring::digest::digest(&ring::digest::SHA256, &text);
    let hex: String = digest.as_ref()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let body = if let Some(signing) = &ctx.options.signing {
        signing.signer.sign(card);
        Bytes::from(json_text::write(card))
    } else {
        if dropped && !ctx.signature_logged.swap(true, Ordering::Relaxed) {
            tracing::warn!(upstream = %ctx.upstream.base(), "the agent's card is signed; the front serves it merged without the signatures, which no longer match (configure a signing key to sign the merged card)");
        }
        Bytes::from(text)
    };
    (format!("W/\"{hex}\""), body)
}

/// The agent's answer to an extended-card request (`GetExtendedAgentCard`, `GET
/// .../extendedAgentCard`), with the card in it merged as the public one is. It is
/// the caller's (the agent may answer each caller differently), so never cached;
/// an error, or an answer that holds no card, passes as it came.
pub(super) async fn extended_card(ctx: &Context, answer: Answer, binding: Binding) -> Answer {
    let (mut parts, bytes, mut value) = match read_json(ctx, answer, binding).await {
        Ok(read) => read,
        Err(answer) => return answer,
    };
    let card = binding.payload(&mut value);
    let merged = match card {
        Some(card) if card.is_object() => merge(ctx, card).is_some(),
        _ => false,
    };
    if !merged {
        return Answer::from_parts(parts, Body::from(bytes));
    }
    parts.headers.remove(header::CONTENT_LENGTH);
    Answer::from_parts(parts, Body::from(json_text::write(&value)))
}

/// Fetches the upstream's card into `cache` (conditionally, with its ETag); keeps
/// the last good one when the upstream fails or answers something that is not a
/// card.
pub(super) async fn refresh_card(ctx: &Context, cache: &mut CardCache, headers: &Headers) {
    let mut asked = Headers::new();
    asked.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
    identity_only(&mut asked);
    if let Some(version) = headers.get("a2a-version") {
        asked.insert(HeaderName::from_static("a2a-version"), version.clone());
    }
    if let (Some(etag), Some(_)) = (&cache.etag, cache.last()) {
        if let Ok(value) = HeaderValue::from_str(etag) {
            asked.insert(header::IF_NONE_MATCH, value);
        }
    }
    let started = Instant::now();
    let answer = ctx
        .upstream
        .call(
            Method::GET,
            ctx.upstream.uri_for("/.well-known/agent-card.json", ""),
            asked,
            Bytes::new(),
            ctx.options.max_body_bytes,
        )
        .await;
    let refresh = ctx.options.card_refresh;
    match answer {
        Ok((StatusCode::NOT_MODIFIED, headers, _)) if cache.last().is_some() => {
            let fresh = card::freshness(cache_control(&headers), refresh);
            if let Some((_, until)) = cache.card.as_mut() {
                *until = started + fresh;
            }
        }
        Ok((status, headers, bytes)) => {
            let card = serde_json::from_slice::<Value>(&bytes)
                .ok()
                .filter(|c| c.is_object() && status == StatusCode::OK);
            // With a card key set, a card none of whose signatures verifies is refused
            // as a card that is no card: the last verified one stays.
            let card = match (card, &ctx.cards) {
                (Some(card), Some(cards)) => match cards.verify(&card).await {
                    Ok(()) => Some(card),
                    Err(_) => {
                        crate::metrics::metrics().front.cards_unverified.inc();
                        backoff(cache, refresh);
                        return;
                    }
                },
                (card, _) => card,
            };
            match card {
                Some(card) => {
                    let fresh = card::freshness(cache_control(&headers), refresh);
                    cache.etag = headers
                        .get(header::ETAG)
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_owned);
                    cache.versions = card::versions(&card);
                    let bases = card::rest_bases(&card, ctx.upstream.base(), &ctx.public);
                    *ctx.rest_bases.write().expect("not poisoned") = bases.into();
                    cache.card = Some((card, started + fresh));
                    cache.generation += 1;
                }
                None => {
                    tracing::warn!(upstream = %ctx.upstream.base(), status = status.as_u16(), "the agent's card answer is not a card (not 200, compressed, or not a JSON object); the last good card is served");
                    backoff(cache, refresh);
                }
            }
        }
        Err(error) => {
            tracing::warn!(error = %error, "cannot fetch the agent's card; the last good card is served");
            backoff(cache, refresh);
        }
    }
}

/// The `Cache-Control` of an answer, if it has one that is text.
pub(super) fn cache_control(headers: &Headers) -> Option<&str> {
    headers
        .get(header::CACHE_CONTROL)
        .and_then(|v| v.to_str().ok())
}

/// After a failed refresh the last card is kept a while before the next try.
pub(super) fn backoff(cache: &mut CardCache, refresh: std::time::Duration) {
    let wait = refresh.min(std::time::Duration::from_secs(5));
    if let Some((_, until)) = cache.card.as_mut() {
        *until = Instant::now() + wait;
    }
}
