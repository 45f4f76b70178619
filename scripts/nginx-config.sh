# Sourced by scripts/front-bench.sh, scripts/front-callgrind.sh and
# scripts/front-memory.sh: nginx as a plain reverse proxy before one agent, the way
# operators run it (HTTP/1.1 to the agent, its connections kept alive), written once.
nginx_config() {
  # $1: nginx's directory (pid, logs, temp files), $2: its listen host:port, $3: the
  # agent's host:port, $4: how it runs its processes (`worker_processes 2;`, or
  # `master_process off;` for the one process callgrind and the memory count need),
  # $5: worker connections, $6: idle connections kept to the agent; $7 and $8,
  # optional: more lines inside `http` and `location`.
  cat <<NGINX
$4
daemon off;
pid $1/nginx.pid;
error_log $1/error.log;
events { worker_connections $5; }
http {
  access_log off;
  client_body_temp_path $1/body;
  proxy_temp_path $1/proxy;
  ${7:-}
  upstream agent { server $3; keepalive $6; }
  server {
    listen $2;
    location / {
      proxy_pass http://agent;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      ${8:-}
    }
  }
}
NGINX
}
