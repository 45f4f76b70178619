//! The service's errors, shared by every layer. They become gRPC statuses in one place
//! only: `crate::transport::status`.

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
    #[error(
        "the registry is full: it holds its maximum of {0} commands (unregister some, or \
         raise --max-commands)"
    )]
    RegistryFull(usize),
    /// The data directory's file system has no space left.
    #[error("the data directory is full, the change was not made durable: {0}")]
    DiskFull(String),
    /// The store failed for another reason.
    #[error("the registry store failed: {0}")]
    Storage(String),
    /// The admin token file cannot be read or is empty, so no change is allowed.
    #[error(
        "changes are refused until the server can read its admin token file \
         (--admin-token-file; the server's log says why it cannot)"
    )]
    TokenUnavailable,
    /// The fleet store (etcd) cannot take or confirm a change; the message says whether
    /// the change was made, was not, or cannot be known yet.
    #[error("the fleet store (etcd) is unavailable: {0}")]
    FleetUnavailable(String),
    /// A change is larger than one etcd transaction may be; nothing was written.
    #[error("the change does not fit in one fleet store (etcd) transaction: {0}")]
    FleetTooLarge(String),
    /// Fleet mode, before the registry was first read from etcd and with no copy of it
    /// to serve: nothing is answered rather than a registry this sidecar never applied.
    #[error(
        "this sidecar has not yet read the registry from the fleet store (etcd) and has \
         no copy of it; it serves once etcd answers"
    )]
    NotReady,
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
}
