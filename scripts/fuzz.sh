#!/usr/bin/env bash
# Runs the fuzz targets (libFuzzer, via cargo-fuzz) for a while each, from their seeds
# (fuzz/seeds/<target>/), into a scratch corpus under target/fuzz-corpus/ (never into
# the repository). A crash is kept by libFuzzer under fuzz/artifacts/<target>/: add it
# to the target's seeds once mended, and tests/fuzz_seeds.rs replays it in every run.
#
#   bash scripts/fuzz.sh [SECONDS_EACH] [TARGET ...]
#
# Default: 60 seconds each for the HTTP/1.1 targets and decode_classify.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(http1_head http1_chunked http1_answer decode_classify)
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
root="$(pwd)"
for target in "${targets[@]}"; do
    corpus="$root/target/fuzz-corpus/$target"
    mkdir -p "$corpus"
    if [ -d "fuzz/seeds/$target" ]; then
        cp -n "fuzz/seeds/$target"/* "$corpus"/
    fi
    echo "== $target, ${seconds}s"
    # cargo fuzz wants nightly; RUSTC_BOOTSTRAP=1 lets the stable compiler build it.
    (cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz run "$target" "$corpus" -- \
        -max_total_time="$seconds" -print_final_stats=1 2>&1 | tail -n 12)
done
