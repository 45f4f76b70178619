//! gRPC status codes by name, in one table: metrics label calls with the canonical name,
//! log lines show `tracing`'s Debug name, and `ctl` and handler failures name codes the
//! way operators know them.

use tonic::Code;

/// Each code's canonical name and its Debug name, indexed by the code's number.
const NAMES: [(&str, &str); 17] = [
    ("OK", "Ok"),
    ("CANCELLED", "Cancelled"),
    ("UNKNOWN", "Unknown"),
    ("INVALID_ARGUMENT", "InvalidArgument"),
    ("DEADLINE_EXCEEDED", "DeadlineExceeded"),
    ("NOT_FOUND", "NotFound"),
    ("ALREADY_EXISTS", "AlreadyExists"),
    ("PERMISSION_DENIED", "PermissionDenied"),
    ("RESOURCE_EXHAUSTED", "ResourceExhausted"),
    ("FAILED_PRECONDITION", "FailedPrecondition"),
    ("ABORTED", "Aborted"),
    ("OUT_OF_RANGE", "OutOfRange"),
    ("UNIMPLEMENTED", "Unimplemented"),
    ("INTERNAL", "Internal"),
    ("UNAVAILABLE", "Unavailable"),
    ("DATA_LOSS", "DataLoss"),
    ("UNAUTHENTICATED", "Unauthenticated"),
];

/// The canonical name of a code (`FAILED_PRECONDITION`).
pub fn name(code: Code) -> &'static str {
    NAMES[code as usize].0
}

/// A code as `tracing` shows it with `?`: its Debug name (`FailedPrecondition`).
pub fn debug_name(code: Code) -> &'static str {
    NAMES[code as usize].1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_tonic_s_debug_names_and_their_upper_snake_case() {
        for number in 0..=16 {
            let code = Code::from_i32(number);
            assert_eq!(code as i32, number);
            assert_eq!(debug_name(code), format!("{code:?}"));
            let mut upper_snake = String::new();
            for (i, c) in format!("{code:?}").char_indices() {
                if c.is_uppercase() && i > 0 {
                    upper_snake.push('_');
                }
                upper_snake.push(c.to_ascii_uppercase());
            }
            assert_eq!(name(code), upper_snake);
        }
    }
}
