//! The service's errors, and the one place they become gRPC status codes.

use tonic::Code;
use tonic_types::{ErrorDetails, StatusExt};

/// Everything a request can fail with.
#[derive(Clone, Debug, thiserror::Error)]
pub enum Error {
    /// A request field breaks a rule; `field` is its path in the request.
    #[error("{field}: {rule}")]
    InvalidArgument {
        /// The field's path, for example `spec.name`.
        field: String,
        /// The rule it breaks, in words.
        rule: String,
    },
    /// A different spec is registered under this name.
    #[error(
        "command /{0} is already registered with a different spec; set override to replace it"
    )]
    AlreadyExists(String),
    /// The command belongs to the commands file; the API may not change it.
    #[error("command /{0} is managed by the commands file; change the file instead")]
    ManagedByFile(String),
    /// No admin token was sent, and one is required.
    #[error("this call needs the admin token: send metadata authorization: Bearer <token>")]
    Unauthenticated,
    /// The admin token sent is wrong.
    #[error("the admin token is not valid")]
    PermissionDenied,
    /// No command of this name is registered.
    #[error("command /{0} is not registered")]
    NotFound(String),
    /// The registry holds its configured maximum of commands.
    #[error("the registry is full: it holds its maximum of {0} commands")]
    RegistryFull(usize),
    /// The data directory's file system has no space left.
    #[error("the data directory is full, the change was not made durable: {0}")]
    DiskFull(String),
    /// The store failed for another reason.
    #[error("the registry store failed: {0}")]
    Storage(String),
    /// The service is stopping and takes no more changes.
    #[error("the service is shutting down")]
    ShuttingDown,
}

impl Error {
    /// An INVALID_ARGUMENT error for `field`.
    pub fn invalid(field: impl Into<String>, rule: impl Into<String>) -> Self {
        Self::InvalidArgument {
            field: field.into(),
            rule: rule.into(),
        }
    }

    /// Classifies a sled error: a full disk is worth telling apart.
    pub fn from_store(err: sled::Error) -> Self {
        match &err {
            sled::Error::Io(io) if is_disk_full(io) => Self::DiskFull(io.to_string()),
            _ => Self::Storage(err.to_string()),
        }
    }

    /// The gRPC code this error maps to.
    pub fn code(&self) -> Code {
        match self {
            Self::InvalidArgument { .. } => Code::InvalidArgument,
            Self::AlreadyExists(_) => Code::AlreadyExists,
            Self::NotFound(_) => Code::NotFound,
            Self::ManagedByFile(_) => Code::FailedPrecondition,
            Self::Unauthenticated => Code::Unauthenticated,
            Self::PermissionDenied => Code::PermissionDenied,
            Self::RegistryFull(_) | Self::DiskFull(_) => Code::ResourceExhausted,
            Self::Storage(_) | Self::ShuttingDown => Code::Unavailable,
        }
    }
}

/// Whether an I/O error means "no space left". sled re-creates the I/O errors it keeps
/// (losing the OS code, keeping the kind), so the kind is checked too.
fn is_disk_full(io: &std::io::Error) -> bool {
    const ENOSPC: i32 = 28;
    const EDQUOT: i32 = 122;
    matches!(io.raw_os_error(), Some(ENOSPC | EDQUOT))
        || matches!(
            io.kind(),
            std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
        )
}

impl From<Error> for tonic::Status {
    fn from(err: Error) -> Self {
        let code = err.code();
        let message = err.to_string();
        match &err {
            // A google.rpc.BadRequest detail lets clients find the field without
            // parsing the message.
            Error::InvalidArgument { field, rule } => tonic::Status::with_error_details(
                code,
                message,
                ErrorDetails::with_bad_request_violation(field.clone(), rule.clone()),
            ),
            _ => tonic::Status::new(code, message),
        }
    }
}
