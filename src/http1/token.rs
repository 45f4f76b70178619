//! Header names compared without case, eight bytes at a time. Every request and answer
//! has its names compared with a dozen known ones (`content-length`, `host`, the
//! hop-by-hop names, ...): a byte at a time that was about 4 % of the hop's instructions.

/// Whether `a` and `b` are the same header name: `a.eq_ignore_ascii_case(b)` (ASCII
/// letters compared without case, every other byte as it is), a word at a time. The
/// lengths and the first bytes are compared where it is called: most names asked about
/// are told apart by them alone (a first byte with bit 5 set is its letter's lowercase;
/// two that agree so may still differ, which the words then say).
#[inline(always)]
pub fn same_name(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len()
        && a.first().map(|x| x | 0x20) == b.first().map(|y| y | 0x20)
        && same_words(a, b)
}

/// [`same_name`] of two names of the same length.
fn same_words(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    match n {
        0..=3 => a.eq_ignore_ascii_case(b),
        // Two words that overlap when the length is not a multiple of theirs.
        4..=7 => same::<4>(&a[..4], &b[..4]) && same::<4>(&a[n - 4..], &b[n - 4..]),
        _ => {
            let mut at = 0;
            while at + 8 <= n {
                if !same::<8>(&a[at..at + 8], &b[at..at + 8]) {
                    return false;
                }
                at += 8;
            }
            at == n || same::<8>(&a[n - 8..], &b[n - 8..])
        }
    }
}

/// Whether `N` (4 or 8) bytes of `a` and of `b` are the same in lowercase.
fn same<const N: usize>(a: &[u8], b: &[u8]) -> bool {
    let word = |bytes: &[u8]| {
        let mut word = [0u8; 8];
        word[..N].copy_from_slice(bytes);
        u64::from_le_bytes(word)
    };
    lowercase(word(a)) == lowercase(word(b))
}

/// Each byte of `word` in lowercase: `A`..=`Z` get bit 5 set, every other byte is kept.
/// A byte's low seven bits plus a constant carry into its high bit exactly when they
/// reach a bound, and no sum leaves its byte: one sum says "at least `A`", one "past
/// `Z`", and a byte whose own high bit is set is not ASCII.
fn lowercase(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = ONES * 0x80;
    let low = word & !HIGH;
    let at_least_a = low + ONES * u64::from(0x80 - b'A');
    let past_z = low + ONES * u64::from(0x80 - b'Z' - 1);
    let upper = at_least_a & !past_z & !word & HIGH;
    word | (upper >> 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pair_of_bytes_at_every_place_compares_as_eq_ignore_ascii_case() {
        let base = b"transfer-encoding";
        for len in 1..=base.len() {
            for at in 0..len {
                for x in 0..=255u8 {
                    for y in 0..=255u8 {
                        let (mut a, mut b) = (*base, *base);
                        a[at] = x;
                        b[at] = y;
                        let (a, b) = (&a[..len], &b[..len]);
                        assert_eq!(same_name(a, b), a.eq_ignore_ascii_case(b), "{a:?} {b:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn known_names_in_any_case() {
        for (name, lower) in [
            (&b"Content-Length"[..], &b"content-length"[..]),
            (b"HOST", b"host"),
            (b"TE", b"te"),
            (b"Keep-Alive", b"keep-alive"),
            (b"x-a2a-extensions", b"x-a2a-extensions"),
            (b"", b""),
            (b"ConTent-TYPE", b"CONTENT-type"),
        ] {
            assert!(same_name(name, lower), "{name:?}");
        }
        assert!(!same_name(b"content-lengtH2", b"content-length"));
        assert!(!same_name(b"content_length", b"content-length"));
        // Bytes a bit apart from a letter are not that letter.
        assert!(!same_name(b"host\x0d", b"host-"));
        assert!(!same_name(b"\xc8ost", b"host"));
        assert!(!same_name(b"[ost", b"{ost"));
    }
}
