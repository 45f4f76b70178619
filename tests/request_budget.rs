//! The request memory budget (`--max-request-memory-mib`): a call that does not fit
//! while others hold it is refused at once, and the others finish when their bodies
//! arrive.

mod common;

use a2a_commands::pb;
use bytes::Bytes;
use common::http2::*;
use common::*;
use http::Method;
use tokio::task::JoinHandle;
use tonic::Code;

/// What a request of `length` bytes takes from the budget, as SECURITY.md ("Worst-case
/// memory") gives it, with the default element limit.
fn cost(length: usize) -> usize {
    let elements = a2a_commands::wire::DEFAULT_MAX_ELEMENTS;
    2 * (length + PREFIX) + (length / 2).min(elements) * 128
}

/// A Classify call whose headers and first bytes have been sent, the rest held back.
struct Holder {
    answer: JoinHandle<Answer>,
    body: h2::SendStream<Bytes>,
}

/// Bytes of a holder's request sent at first: the prefix, which announces the whole
/// length (and so the share it takes), and a little of the message.
const SENT_FIRST: usize = PREFIX + 2;

async fn hold(connection: &mut Http2, request: &Bytes) -> Holder {
    let started = connection
        .start(
            Method::POST,
            CLASSIFY,
            Some(GRPC),
            Some(request.slice(..SENT_FIRST)),
            false,
        )
        .await;
    Holder {
        answer: tokio::spawn(answer(started.response)),
        body: started.body,
    }
}

fn small() -> pb::ClassifyRequest {
    pb::ClassifyRequest {
        message: Some(text_message("m", "/status")),
    }
}

#[tokio::test]
async fn a_call_over_the_budget_is_refused_at_once_and_the_holders_finish() {
    let held = framed(&pb::ClassifyRequest {
        message: Some(text_message("m-big", &"x".repeat(3_000))),
    });
    let share = cost(held.len() - PREFIX);
    // Room for exactly two such requests (more than one largest, so it is not raised).
    let server = TestServer::start_with(|s| {
        s.max_message_bytes = 4096;
        s.limits.max_request_memory = 2 * share;
        s.limits.request_read_timeout = None;
    })
    .await;
    assert!(2 * share >= cost(4096), "the budget would be raised");
    let mut holding = Http2::connect(server.addr()).await;
    let mut holders = [
        hold(&mut holding, &held).await,
        hold(&mut holding, &held).await,
    ];

    // The holders' first frames may not have reached the budget yet: a call that gets
    // through meanwhile proves nothing, so call again. Such a call, in before a holder,
    // can crowd that holder out; it is then started again. Only a hang guard bounds it.
    let mut client = server.client().await;
    let refused = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        loop {
            if let Err(status) = client.classify(small()).await {
                break status;
            }
            for holder in &mut holders {
                if holder.answer.is_finished() {
                    let answer = (&mut holder.answer).await.unwrap();
                    assert_eq!(answer.grpc_status(), Some(Code::ResourceExhausted as i32));
                    *holder = hold(&mut holding, &held).await;
                }
            }
        }
    })
    .await
    .expect("the holders never took the budget");
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused:?}");
    assert!(
        refused.message().contains("--max-request-memory-mib"),
        "{}",
        refused.message()
    );
    // At once: the holders are still waiting for the rest of their bodies.
    assert!(holders.iter().all(|h| !h.answer.is_finished()));

    for holder in &mut holders {
        holder
            .body
            .send_data(held.slice(SENT_FIRST..), true)
            .unwrap();
    }
    for holder in holders {
        let answer = holder.answer.await.unwrap();
        assert_eq!(answer.grpc_status(), Some(0), "{answer:?}");
        let classified: pb::ClassifyResponse = answer.message();
        assert!(matches!(
            classified.result,
            Some(pb::classify_response::Result::Ordinary(_))
        ));
    }
    // Their shares are back.
    client.classify(small()).await.unwrap();
}
