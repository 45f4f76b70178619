//! The HTTP/1.1 answer parser on arbitrary bytes (see `checks/http1.rs`).

#![no_main]

#[path = "../checks/http1.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::answer(data));
