"""A command handler speaking JSON-RPC 2.0 over HTTP, with Python's standard library only.

It runs `/summarize`: replies with a one-line summary of the task it is given. The
request is a POST whose method is `command.invoked.in` and whose params are
`{"context": {...}}`, as the harness that defined the extension posts it (README,
"Handlers"); the answer echoes the context with a `result` in it. A hook server written
for that harness works unchanged.

    python3 examples/jsonrpc-handler/handler.py --port 7001
"""

import argparse
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_REQUEST_BYTES = 1 << 20


def summarize(context):
    task = context["task"]
    plan = f"{task['steps_done']}/{task['steps_total']} steps" if task["steps_total"] else "no plan"
    return f"{task['name'] or task['id']}: {task['state']}, {plan}, {len(task['children'])} sub-task(s)."


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        if length > MAX_REQUEST_BYTES:
            self.send_error(413)
            return
        request = json.loads(self.rfile.read(length))
        if request.get("method") != "command.invoked.in":
            answer = {"jsonrpc": "2.0", "id": request.get("id"),
                      "error": {"code": -32601, "message": "method not found"}}
        else:
            context = request["params"]["context"]
            if context["sender_role"] is None:
                result = {"abort": {"reason": "refused"}}
            else:
                result = {"context": dict(context, result={"reply": summarize(context)})}
            answer = {"jsonrpc": "2.0", "id": request.get("id"), "result": result}
        body = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):  # keep the example's output to the one line below
        pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=7001, help="0 picks a free port")
    args = parser.parse_args()
    server = ThreadingHTTPServer((args.host, args.port), Handler)
    host, port = server.server_address[:2]
    print(f"listening on http://{host}:{port}/", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
