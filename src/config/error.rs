//! The one error of configuration.

/// A configuration that cannot be used; the message says which setting and why.
#[derive(Debug, thiserror::Error)]
#[error("invalid configuration: {0}")]
pub struct ConfigError(pub(super) String);
