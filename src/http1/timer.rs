//! A deadline watched by one timer kept from one wait to the next. A timer made for
//! each wait is, between requests, often the loop's earliest: tokio then wakes its own
//! driver to move the park's timeout (a write to the loop's eventfd and one more
//! `epoll_wait`, twice a request's system calls before this), and the timer is put
//! into and taken out of the wheel each time. A kept timer stays where it was set: a
//! later deadline lets it fire early, once, and move on then.

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::time::{Instant, Sleep};

/// One timer for a run of deadlines that come later and later (a connection's
/// requests one after another, a stream's events).
#[derive(Debug, Default)]
pub struct KeptTimer(Option<Pin<Box<Sleep>>>);

impl KeptTimer {
    /// Ready once `deadline` has passed; until then, `cx` is woken when it does (or
    /// when the timer fires early, for an earlier deadline, and is moved on).
    pub fn poll_passed(&mut self, deadline: Instant, cx: &mut Context<'_>) -> Poll<()> {
        let sleep = self
            .0
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        if sleep.deadline() > deadline {
            // An earlier deadline than any before it: the timer comes forward.
            sleep.as_mut().reset(deadline);
        }
        loop {
            ready!(sleep.as_mut().poll(cx));
            if sleep.deadline() >= deadline {
                return Poll::Ready(());
            }
            // It fired for an earlier deadline, not this one.
            sleep.as_mut().reset(deadline);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::future::poll_fn;
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_later_deadline_is_kept_past_the_timer_s_first_firing() {
        let mut timer = KeptTimer::default();
        let start = Instant::now();
        poll_fn(|cx| timer.poll_passed(start + Duration::from_secs(1), cx)).await;
        assert!(Instant::now() >= start + Duration::from_secs(1));
        // A later deadline on the same timer: not passed when the timer is first polled
        // again, and passed only at its own time.
        let later = start + Duration::from_secs(5);
        let mut cx = Context::from_waker(std::task::Waker::noop());
        assert!(timer.poll_passed(later, &mut cx).is_pending());
        poll_fn(|cx| timer.poll_passed(later, cx)).await;
        assert!(Instant::now() >= later);
        // An earlier one than the timer's brings it forward.
        let now = Instant::now();
        let mut timer = KeptTimer::default();
        assert!(timer
            .poll_passed(now + Duration::from_secs(60), &mut cx)
            .is_pending());
        poll_fn(|cx| timer.poll_passed(now + Duration::from_secs(2), cx)).await;
        assert!(Instant::now() < now + Duration::from_secs(60));
    }
}
