"""Our generated protobuf types (package ``a2a.commands.v1``) in one namespace.

``from a2a_commands import pb`` then ``pb.CommandSpec(...)``, ``pb.PARTICIPANT_ROLE_ASSIGNEE``,
``pb.CommandServiceStub``. The A2A objects mirrored here (``pb.Message``,
``pb.TaskStatusUpdateEvent``, ...) convert to a2a-sdk's with :mod:`a2a_commands.convert`.
"""

from ._pb.a2a_pb2 import *  # noqa: F403
from ._pb.commands_pb2 import *  # noqa: F403
from ._pb.commands_pb2_grpc import (  # noqa: F401
    CommandHandlerServicer,
    CommandHandlerStub,
    CommandServiceServicer,
    CommandServiceStub,
    add_CommandHandlerServicer_to_server,
    add_CommandServiceServicer_to_server,
)
