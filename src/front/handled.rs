//! What the front does with a request it looked into: answers it, or hands it on
//! (as it came, rewritten, or with its answer to be rewritten).

use bytes::Bytes;

use crate::front::a2a;
use crate::front::join::Joiner;
use crate::http1::head::Answer;

/// A request the front answers itself, or hands on.
pub(super) enum Handled {
    /// The answer.
    Answer(Answer),
    /// Forward the request with this body (the same bytes, or a prompt command's
    /// expansion).
    Forward(Bytes),
    /// Forward this body (a request for the extended card); the card in the answer is
    /// merged.
    ForwardCard(Bytes),
    /// Forward this body (`ListTasks`); the tasks in the answer are the front's, and
    /// the first page lists the tasks only the front holds too.
    ForwardList(Bytes, a2a::ListAsked),
    /// Forward this body, about the front's task `front`: the agent's id for it
    /// (`upstream`, or the one its answer gives) is written back as `front` in the
    /// answer, and the agent's context as the front's, so the client goes on seeing
    /// one task in one context.
    ForwardJoined { body: Bytes, joiner: Joiner },
}
