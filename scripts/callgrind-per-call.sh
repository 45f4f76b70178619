# Sourced by scripts/callgrind.sh and scripts/front-callgrind.sh: instructions per call
# of one row, from a server running under callgrind. Counters zeroed, the row run (the
# sourcing script's `run`), the counters dumped (callgrind numbers its dumps cg.out.1,
# .2, ...). Uses the sourcing script's $dir (where cg.out is), $server (its pid) and
# $calls; CALLGRIND_KEEP=DIR keeps each row's dump as DIR/<row>.out.
per_call() {
  local before
  before=$(find "$dir" -name 'cg.out.*' | wc -l)
  callgrind_control -z "$server" >/dev/null 2>&1
  run "$1"
  callgrind_control -d "$1" "$server" >/dev/null 2>&1
  local file="$dir/cg.out.$((before + 1))"
  for _ in $(seq 1 100); do [ -s "$file" ] && break; sleep 0.1; done
  if [ -n "${CALLGRIND_KEEP:-}" ]; then mkdir -p "$CALLGRIND_KEEP" && cp "$file" "$CALLGRIND_KEEP/$1.out"; fi
  callgrind_annotate "$file" | awk -v n="$calls" '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1 / n}'
}
