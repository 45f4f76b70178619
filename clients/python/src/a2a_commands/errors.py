"""Typed errors for the a2a-commands gRPC API.

Every failed call raises a :class:`CommandsError` subclass chosen by the gRPC status
code. The server reports a bad request as ``INVALID_ARGUMENT`` with the message
``<field>: <reason>`` and a ``google.rpc.BadRequest`` detail; the error carries that
field (for example ``spec.name`` or ``sender.role``) in :attr:`CommandsError.field`.
"""

from __future__ import annotations

from collections.abc import Iterable

import grpc
from google.rpc import error_details_pb2, status_pb2

_DETAILS_KEY = "grpc-status-details-bin"


class CommandsError(Exception):
    """A call to a2a-commands failed.

    Attributes:
        code: The gRPC status code.
        field: The request field that broke a rule (``INVALID_ARGUMENT``), else ``None``.
        reason: What is wrong: the field's rule, or the server's whole message.
    """

    code: grpc.StatusCode = grpc.StatusCode.UNKNOWN

    def __init__(
        self, message: str, *, code: grpc.StatusCode | None = None, field: str | None = None,
        reason: str | None = None,
    ) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.field = field
        self.reason = reason if reason is not None else message

    @staticmethod
    def from_rpc_error(error: grpc.aio.AioRpcError) -> CommandsError:
        """Builds the typed error for a failed gRPC call."""
        code = error.code()
        field, reason = _violation(error.trailing_metadata())
        cls = _BY_CODE.get(code, CommandsError)
        return cls(error.details() or code.name, code=code, field=field, reason=reason)


class InvalidArgumentError(CommandsError):
    """A field breaks a rule; :attr:`field` names it."""

    code = grpc.StatusCode.INVALID_ARGUMENT


class NotFoundError(CommandsError):
    """The command is not registered (Unregister)."""

    code = grpc.StatusCode.NOT_FOUND


class AlreadyExistsError(CommandsError):
    """A different spec is registered under that name (Register without override)."""

    code = grpc.StatusCode.ALREADY_EXISTS


class FailedPreconditionError(CommandsError):
    """The command belongs to the commands file; the API may not change it."""

    code = grpc.StatusCode.FAILED_PRECONDITION


class ResourceExhaustedError(CommandsError):
    """The registry or the disk is full, or the request is too large."""

    code = grpc.StatusCode.RESOURCE_EXHAUSTED


class UnauthenticatedError(CommandsError):
    """An admin token is required and none was sent."""

    code = grpc.StatusCode.UNAUTHENTICATED


class PermissionDeniedError(CommandsError):
    """The admin token sent is wrong."""

    code = grpc.StatusCode.PERMISSION_DENIED


class UnavailableError(CommandsError):
    """The service cannot be reached (stopped, restarting, draining)."""

    code = grpc.StatusCode.UNAVAILABLE


class DeadlineExceededError(CommandsError):
    """The call did not finish within its timeout."""

    code = grpc.StatusCode.DEADLINE_EXCEEDED


_BY_CODE: dict[grpc.StatusCode, type[CommandsError]] = {
    cls.code: cls
    for cls in (
        InvalidArgumentError, NotFoundError, AlreadyExistsError, FailedPreconditionError,
        ResourceExhaustedError, UnauthenticatedError, PermissionDeniedError, UnavailableError,
        DeadlineExceededError,
    )
}


def _violation(metadata: Iterable[tuple[str, str | bytes]] | None) -> tuple[str | None, str | None]:
    """The first field violation of a ``google.rpc.BadRequest`` in the trailers, if any."""
    for key, value in metadata or ():
        if key != _DETAILS_KEY or not isinstance(value, bytes):
            continue
        status = status_pb2.Status.FromString(value)
        for detail in status.details:
            bad_request = error_details_pb2.BadRequest()
            if detail.Unpack(bad_request) and bad_request.field_violations:
                violation = bad_request.field_violations[0]
                return violation.field, violation.description
    return None, None
