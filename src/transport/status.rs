//! The one place our errors become gRPC statuses.

use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

use crate::error::Error;

/// The gRPC code `err` maps to.
pub fn code(err: &Error) -> Code {
    match err {
        Error::InvalidArgument { .. } => Code::InvalidArgument,
        Error::AlreadyExists(_) => Code::AlreadyExists,
        Error::NotFound(_) => Code::NotFound,
        Error::ManagedByFile(_) => Code::FailedPrecondition,
        Error::Unauthenticated => Code::Unauthenticated,
        Error::PermissionDenied => Code::PermissionDenied,
        Error::RegistryFull(_) | Error::DiskFull(_) | Error::FleetTooLarge(_) => {
            Code::ResourceExhausted
        }
        Error::Storage(_)
        | Error::TokenUnavailable
        | Error::ShuttingDown
        | Error::FleetUnavailable(_)
        | Error::NotReady => Code::Unavailable,
    }
}

impl From<Error> for Status {
    fn from(err: Error) -> Self {
        let code = code(&err);
        let message = err.to_string();
        match &err {
            // A google.rpc.BadRequest detail lets clients find the field without
            // parsing the message.
            Error::InvalidArgument { field, rule } => Status::with_error_details(
                code,
                message,
                ErrorDetails::with_bad_request_violation(field.clone(), rule.clone()),
            ),
            _ => Status::new(code, message),
        }
    }
}
