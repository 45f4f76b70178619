"""A command handler in Python with grpcio: implements a2a.commands.v1.CommandHandler.

It runs `/deploy <environment>`: refuses unknown environments and watchers, otherwise
replies and asks for a linked sub-task that does the deploy.

    python3 examples/grpc-handler/handler.py --port 7000

It generates its Python stubs from ../../proto at start (needs grpcio-tools).
"""

import argparse
import atexit
import os
import pathlib
import shutil
import sys
import tempfile
from concurrent import futures

import grpc

PROTO = pathlib.Path(__file__).resolve().parents[2] / "proto"
ENVIRONMENTS = ("staging", "production")


def load_stubs():
    """Generates and imports our protos' Python modules (`a2a.commands.v1`)."""
    import grpc_tools
    from grpc_tools import protoc

    out = tempfile.mkdtemp(prefix="a2a-commands-stubs-")
    atexit.register(shutil.rmtree, out, ignore_errors=True)
    include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    files = ["a2a/commands/v1/a2a.proto", "a2a/commands/v1/commands.proto"]
    args = ["protoc", f"-I{PROTO}", f"-I{include}", f"--python_out={out}", f"--grpc_python_out={out}"]
    if protoc.main(args + files) != 0:
        sys.exit("protoc failed")
    try:  # a2a-sdk owns the `a2a` package: extend it rather than shadow it
        import a2a

        a2a.__path__.append(os.path.join(out, "a2a"))
    except ImportError:
        sys.path.insert(0, out)
    from a2a.commands.v1 import commands_pb2, commands_pb2_grpc

    return commands_pb2, commands_pb2_grpc


def make_handler(pb, pb_grpc):
    class Deploy(pb_grpc.CommandHandlerServicer):
        def Handle(self, invocation, context):
            environment = invocation.arguments.strip()
            if invocation.sender.role == pb.PARTICIPANT_ROLE_WATCHER:
                return pb.HandlerResult(abort=pb.HandlerAbort(reason="watchers may not deploy"))
            if environment not in ENVIRONMENTS:
                reason = f"unknown environment; use one of {', '.join(ENVIRONMENTS)}"
                return pb.HandlerResult(abort=pb.HandlerAbort(reason=reason))
            return pb.HandlerResult(
                reply=pb.HandlerReply(
                    reply=f"Deploying task {invocation.task_id} to {environment}.",
                    spawn=pb.HandlerSpawn(goal=f"Deploy to {environment}"),
                )
            )

    return Deploy()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=7000, help="0 picks a free port")
    args = parser.parse_args()

    pb, pb_grpc = load_stubs()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    pb_grpc.add_CommandHandlerServicer_to_server(make_handler(pb, pb_grpc), server)
    port = server.add_insecure_port(f"{args.host}:{args.port}")
    server.start()
    print(f"listening on http://{args.host}:{port}", flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main()
