# Sourced by scripts/front-bench.sh and scripts/front-callgrind.sh: HAProxy as a plain
# reverse proxy before one agent, the way operators run it (HTTP mode, connections to
# the agent kept and shared across clients).
haproxy_config() { # $1: threads, $2: listen host:port, $3: the agent's host:port
  cat <<HAPROXY
global
  nbthread $1
  maxconn 4096
defaults
  mode http
  timeout connect 5s
  timeout client 60s
  timeout server 60s
  http-reuse always
frontend front
  bind $2
  default_backend agent
backend agent
  server agent $3
HAPROXY
}
