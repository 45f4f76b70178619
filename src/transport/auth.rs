//! Admin authentication for the calls that change the registry.
//!
//! When a token file is configured, Register and Unregister need the metadata
//! `authorization: Bearer <token>`. The file is read on every such call, so rotating a
//! Kubernetes Secret takes effect without a restart. Tokens are compared in constant
//! time and never logged.

use std::path::PathBuf;

use subtle::ConstantTimeEq;
use tonic::metadata::MetadataMap;

use crate::error::Error;

/// Who may change the registry.
#[derive(Clone, Debug, Default)]
pub struct AdminAuth {
    token_file: Option<PathBuf>,
}

impl AdminAuth {
    /// No token: anyone who reaches the API may change the registry.
    pub fn open() -> Self {
        Self::default()
    }

    /// Requires the token held in `path`; fails if it cannot be read or is empty.
    pub fn from_file(path: PathBuf) -> Result<Self, String> {
        let auth = Self {
            token_file: Some(path),
        };
        auth.token()?;
        Ok(auth)
    }

    /// Whether a token is required.
    pub fn is_required(&self) -> bool {
        self.token_file.is_some()
    }

    fn token(&self) -> Result<Option<String>, String> {
        let Some(path) = &self.token_file else {
            return Ok(None);
        };
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("admin token file {}: {e}", path.display()))?;
        let token = text.trim();
        if token.is_empty() {
            return Err(format!("admin token file {} is empty", path.display()));
        }
        Ok(Some(token.to_owned()))
    }

    /// Checks a call's metadata.
    pub fn check(&self, metadata: &MetadataMap) -> Result<(), Error> {
        let expected = match self.token() {
            Ok(None) => return Ok(()),
            Ok(Some(token)) => token,
            Err(e) => {
                tracing::error!(error = %e, "cannot read the admin token; refusing changes");
                // The path and the OS error go to the log only: the caller is not yet
                // known to hold the token.
                return Err(Error::TokenUnavailable);
            }
        };
        let Some(value) = metadata.get("authorization") else {
            return Err(Error::Unauthenticated);
        };
        let presented = value
            .to_str()
            .ok()
            .and_then(|v| {
                v.strip_prefix("Bearer ")
                    .or_else(|| v.strip_prefix("bearer "))
            })
            .ok_or(Error::Unauthenticated)?;
        if bool::from(presented.as_bytes().ct_eq(expected.as_bytes())) {
            Ok(())
        } else {
            Err(Error::PermissionDenied)
        }
    }
}
