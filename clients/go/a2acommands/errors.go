package a2acommands

import (
	"errors"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Error is a failed call to the sidecar. errors.Is matches it against the sentinels below
// by gRPC code (errors.Is(err, a2acommands.ErrUnavailable)); errors.As gives the details.
type Error struct {
	// Code is the gRPC status code.
	Code codes.Code
	// Message is the sidecar's message (or the transport's).
	Message string
	// Field is the request field that broke a rule (INVALID_ARGUMENT), else empty.
	Field string
	// Reason is what is wrong: the field's rule, else the whole message.
	Reason string
	cause  error
}

func (e *Error) Error() string { return "a2a-commands: " + e.Code.String() + ": " + e.Message }

// Unwrap is the gRPC status error the call returned.
func (e *Error) Unwrap() error { return e.cause }

// Is matches a sentinel of the same code.
func (e *Error) Is(target error) bool {
	var sentinel *Error
	return errors.As(target, &sentinel) && sentinel.cause == nil && sentinel.Message == "" && sentinel.Code == e.Code
}

// Sentinels for errors.Is, one per code the sidecar answers with.
var (
	// ErrInvalidArgument: a field breaks a rule; Error.Field names it.
	ErrInvalidArgument = &Error{Code: codes.InvalidArgument}
	// ErrNotFound: the command is not registered (Unregister).
	ErrNotFound = &Error{Code: codes.NotFound}
	// ErrAlreadyExists: a different spec is registered under that name.
	ErrAlreadyExists = &Error{Code: codes.AlreadyExists}
	// ErrFailedPrecondition: the command belongs to the commands file.
	ErrFailedPrecondition = &Error{Code: codes.FailedPrecondition}
	// ErrResourceExhausted: the registry or the disk is full, or the request too large.
	ErrResourceExhausted = &Error{Code: codes.ResourceExhausted}
	// ErrUnauthenticated: an admin token is required and none was sent.
	ErrUnauthenticated = &Error{Code: codes.Unauthenticated}
	// ErrPermissionDenied: the admin token sent is wrong.
	ErrPermissionDenied = &Error{Code: codes.PermissionDenied}
	// ErrUnavailable: the sidecar cannot be reached (stopped, restarting, draining).
	ErrUnavailable = &Error{Code: codes.Unavailable}
	// ErrDeadlineExceeded: the call did not finish in time.
	ErrDeadlineExceeded = &Error{Code: codes.DeadlineExceeded}
)

// callError is the typed error of a failed gRPC call (nil stays nil).
func callError(err error) error {
	if err == nil {
		return nil
	}
	st := status.Convert(err)
	typed := &Error{Code: st.Code(), Message: st.Message(), Reason: st.Message(), cause: err}
	for _, detail := range st.Details() {
		if bad, ok := detail.(*errdetails.BadRequest); ok && len(bad.FieldViolations) > 0 {
			typed.Field = bad.FieldViolations[0].Field
			typed.Reason = bad.FieldViolations[0].Description
			break
		}
	}
	return typed
}
