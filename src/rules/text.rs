//! Text as the reference harness (Python) sees it: which characters are whitespace, and
//! where lines break. Rust's own definitions differ in a few characters, and each
//! difference would change a command's arguments or a sub-task's name.

/// `s` quoted for an error message, cut to its first 64 characters (with `…` when
/// cut), so that bad input of any size gives a short message.
pub fn quote_prefix(s: &str) -> String {
    const SHOWN: usize = 64;
    match s.char_indices().nth(SHOWN) {
        Some((cut, _)) => format!("{:?}…", &s[..cut]),
        None => format!("{s:?}"),
    }
}

/// Whether `c` is whitespace to Python's `str.isspace()`: Unicode's White_Space plus the
/// information separators U+001C..U+001F.
pub fn is_py_whitespace(c: char) -> bool {
    c.is_whitespace() || ('\u{1C}'..='\u{1F}').contains(&c)
}

/// `s` without leading or trailing Python whitespace (Python's `str.strip()`).
pub fn trim_py_whitespace(s: &str) -> &str {
    s.trim_matches(is_py_whitespace)
}

/// Whether Python's `str.splitlines()` breaks a line at `c`.
pub fn is_py_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r'
            | '\u{0B}'
            | '\u{0C}'
            | '\u{1C}'
            | '\u{1D}'
            | '\u{1E}'
            | '\u{85}'
            | '\u{2028}'
            | '\u{2029}'
    )
}

/// The first line of `s` as Python's `s.splitlines()[0]` gives it (empty for "").
pub fn first_py_line(s: &str) -> &str {
    s.split(is_py_line_break).next().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `rust` holds for exactly the code points in `python`.
    fn agrees_with(rust: fn(char) -> bool, python: &[u32]) {
        for c in (0..=0x10FFFF).filter_map(char::from_u32) {
            assert_eq!(rust(c), python.contains(&(c as u32)), "U+{:04X}", c as u32);
        }
    }

    #[test]
    fn whitespace_is_pythons_isspace() {
        // Every character for which CPython 3.11's str.isspace() is true.
        let mut python: Vec<u32> = vec![0x9, 0xA, 0xB, 0xC, 0xD, 0x1C, 0x1D, 0x1E, 0x1F, 0x20];
        python.extend([0x85, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000]);
        python.extend(0x2000..=0x200A);
        agrees_with(is_py_whitespace, &python);
    }

    #[test]
    fn line_breaks_are_pythons_splitlines() {
        // CPython 3.11: [c for c in map(chr, range(0x110000)) if len((c + "x").splitlines()) > 1]
        agrees_with(
            is_py_line_break,
            &[
                0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x85, 0x2028, 0x2029,
            ],
        );
        assert_eq!(first_py_line("a\r\nb"), "a");
        assert_eq!(first_py_line("a\u{1E}b"), "a");
        assert_eq!(first_py_line(""), "");
    }
}
