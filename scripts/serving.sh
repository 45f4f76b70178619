# Sourced by the load scripts. Prints the address a starting server serves on, read from
# its JSON "serving" line; fails with the server's log if the process ends first.
#   addr=$(serving_addr LOG PID [TRIES])     # TRIES of 0.2 s (300)
serving_addr() {
  local log=$1 pid=$2 tries=${3:-300} addr=""
  for _ in $(seq 1 "$tries"); do  # readiness is the "serving" line; this only bounds the wait
    addr=$(grep -o '"message":"serving".*' "$log" | grep -o '"addr":"[^"]*"' | head -1 | cut -d'"' -f4 || true)
    [ -n "$addr" ] && { echo "$addr"; return 0; }
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; return 1; }
    sleep 0.2
  done
  echo "the server did not start" >&2
  return 1
}
