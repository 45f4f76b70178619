//! The HTTP/1.1 fuzz targets' seeds (`fuzz/seeds/<target>/`), replayed through the
//! targets' own checks (`fuzz/checks/http1.rs`) in every test run, so that a case the
//! fuzzer once found, kept as a seed, stays answered. `scripts/fuzz.sh` runs the
//! targets themselves.

#[path = "../fuzz/checks/http1.rs"]
mod checks;

use std::path::Path;

fn replay(target: &str, check: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/seeds")
        .join(target);
    let mut seeds = 0;
    for entry in std::fs::read_dir(&dir).expect("the target's seeds") {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        let replayed = std::panic::catch_unwind(|| check(&data));
        assert!(replayed.is_ok(), "{} fails its check", path.display());
        seeds += 1;
    }
    assert!(seeds > 0, "no seeds in {}", dir.display());
}

#[test]
fn request_heads() {
    replay("http1_head", checks::head);
}

#[test]
fn chunked_bodies() {
    replay("http1_chunked", checks::chunked);
}

#[test]
fn answer_heads() {
    replay("http1_answer", checks::answer);
}
