//! Classify, Execute and Complete, the methods on every message and keystroke, on the
//! server's own unary path (`unary`): each request read as its borrowed view where it
//! lies (`views`), else decoded by prost, and its answer's bytes framed.

use std::convert::Infallible;
use std::future::ready;
use std::sync::Arc;

use bytes::Bytes;
use tonic::body::Body;
use tonic::codegen::{http, BoxFuture};
use tonic::Status;

use crate::pb;
use crate::run::Whole;
use crate::transport::service::{Api, SERVICE_NAME};
use crate::transport::unary::{framed, serve, Called, Limits};
use crate::views::{ClassifyView, CompleteView, ExecuteView};
use crate::wire::{read_bounded, Read};

/// Classify, Execute and Complete, the methods on every message and keystroke.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direct {
    /// `Classify`.
    Classify,
    /// `Execute`.
    Execute,
    /// `Complete`.
    Complete,
}

impl Direct {
    /// The method `path` calls, if it is one of these.
    pub fn of(path: &str) -> Option<Self> {
        let method = path
            .strip_prefix('/')?
            .strip_prefix(SERVICE_NAME)?
            .strip_prefix('/')?;
        match method {
            "Classify" => Some(Self::Classify),
            "Execute" => Some(Self::Execute),
            "Complete" => Some(Self::Complete),
            _ => None,
        }
    }

    /// Answers one call of this method on `api`.
    pub fn call(
        self,
        api: &Arc<Api>,
        request: http::Request<Body>,
        limits: Limits,
    ) -> BoxFuture<http::Response<Body>, Infallible> {
        let api = Arc::clone(api);
        match self {
            Self::Classify => Box::pin(async move {
                Ok(
                    serve::<pb::ClassifyRequest, _, _>(request, limits, |bytes, _| {
                        ready(classify(&api, &bytes, limits.max_elements))
                    })
                    .await,
                )
            }),
            Self::Execute => Box::pin(async move {
                Ok(
                    serve::<pb::ExecuteRequest, _, _>(request, limits, |bytes, called| {
                        execute(&api, bytes, called, limits.max_elements)
                    })
                    .await,
                )
            }),
            Self::Complete => Box::pin(async move {
                Ok(
                    serve::<pb::CompleteRequest, _, _>(request, limits, |bytes, called| {
                        complete(&api, bytes, called, limits.max_elements)
                    })
                    .await,
                )
            }),
        }
    }
}

/// Classify, from its request's bytes: read as their view when they have one
/// (`views`), else decoded by prost.
fn classify(api: &Api, bytes: &[u8], max_elements: usize) -> Result<Bytes, Status> {
    let answer = match read_bounded(bytes, max_elements, ClassifyView::parse)? {
        Read::Viewed(view) => api.classify(&view),
        Read::Decoded(asked) => api.classify(&ClassifyView::of(&asked)),
    };
    framed(answer)
}

/// Execute, from its request's bytes: read as their view when they have one
/// (`views`), else decoded by prost.
async fn execute(
    api: &Api,
    bytes: Bytes,
    Called { trace, deadline }: Called,
    max_elements: usize,
) -> Result<Bytes, Status> {
    let answer = match read_bounded(&bytes, max_elements, ExecuteView::parse)? {
        Read::Viewed(view) => {
            api.execute(&view, Whole::Encoded(&bytes), &trace, deadline)
                .await
        }
        Read::Decoded(asked) => {
            let view = ExecuteView::of(&asked);
            api.execute(&view, Whole::Request(&asked), &trace, deadline)
                .await
        }
    };
    framed(answer)
}

/// Complete, from its request's bytes, as [`execute`].
async fn complete(
    api: &Api,
    bytes: Bytes,
    Called { trace, .. }: Called,
    max_elements: usize,
) -> Result<Bytes, Status> {
    let answer = match read_bounded(&bytes, max_elements, CompleteView::parse)? {
        Read::Viewed(view) => api.complete(&view, &trace).await,
        Read::Decoded(asked) => api.complete(&CompleteView::of(&asked), &trace).await,
    };
    framed(answer)
}
