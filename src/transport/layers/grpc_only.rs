//! Requests that are not gRPC get the HTTP answer the gRPC over HTTP/2 spec gives: 405
//! (with `allow: POST`) for a method other than POST, 415 (with `accept:
//! application/grpc`) for another content type. Built on tower-http's request
//! validation, so this layer is only the rule.

use tonic::codegen::http;
use tower_http::validate_request::{ValidateRequest, ValidateRequestHeaderLayer};

/// The rule: POST, with a `content-type` starting `application/grpc`.
#[derive(Clone, Copy, Debug, Default)]
pub struct GrpcOnly;

/// The layer that answers non-gRPC requests itself.
pub fn layer() -> ValidateRequestHeaderLayer<GrpcOnly> {
    ValidateRequestHeaderLayer::custom(GrpcOnly)
}

impl<B> ValidateRequest<B> for GrpcOnly {
    type ResponseBody = tonic::body::Body;

    fn validate(
        &mut self,
        request: &mut http::Request<B>,
    ) -> Result<(), http::Response<tonic::body::Body>> {
        if request.method() != http::Method::POST {
            return Err(plain(
                http::StatusCode::METHOD_NOT_ALLOWED,
                ("allow", "POST"),
            ));
        }
        let grpc = request
            .headers()
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/grpc"));
        if !grpc {
            return Err(plain(
                http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
                ("accept", "application/grpc"),
            ));
        }
        Ok(())
    }
}

/// An answer that is not gRPC: `status` with an empty body and one header.
fn plain(
    status: http::StatusCode,
    header: (&'static str, &'static str),
) -> http::Response<tonic::body::Body> {
    let mut answer = http::Response::new(tonic::body::Body::empty());
    *answer.status_mut() = status;
    answer
        .headers_mut()
        .insert(header.0, http::HeaderValue::from_static(header.1));
    answer
}
