//! The ranges a command line names: seeds (`0..100`, `5..=9`) and milliseconds (`5-20`).
//!
//! Both parse with [`FromStr`] (so they serve as `clap` value parsers) and refuse what they
//! cannot represent with a sentence saying what to write instead. Seed arithmetic never wraps:
//! a range may end at `u64::MAX`.

use std::fmt;
use std::num::IntErrorKind;
use std::ops::RangeInclusive;
use std::str::FromStr;

/// Seeds `A..B` (`B` excluded) or `A..=B`: never empty, never wrapping.
///
/// Stored as its first and last seed, so `0..=18446744073709551615` is representable; it
/// remembers which notation it was written in, and [`fmt::Display`] writes that one back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SeedRange {
    first: u64,
    last: u64,
    inclusive: bool,
}

/// Why a seed range was refused (clap prints the text given before the message).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SeedRangeError {
    #[error("write a range such as 0..100 or 5..=9")]
    Malformed,
    #[error("seeds are not negative: write a range such as 0..100 or 5..=9")]
    Negative,
    #[error("{number} overflows: the largest seed is 18446744073709551615 (A..=18446744073709551615 includes it)")]
    Overflow { number: String },
    #[error("the range is empty or inverted: the end must be above the start (A..B excludes B, A..=B includes it)")]
    Empty,
}

impl SeedRange {
    /// The seeds `first..=last`; `None` when `last < first`.
    pub fn new(seeds: RangeInclusive<u64>) -> Option<Self> {
        let (first, last) = seeds.into_inner();
        (first <= last).then_some(SeedRange {
            first,
            last,
            inclusive: true,
        })
    }

    /// The first seed.
    pub fn first(&self) -> u64 {
        self.first
    }

    /// The last seed (included).
    pub fn last(&self) -> u64 {
        self.last
    }

    /// How many seeds: at least 1, at most 2^64 (hence `u128`).
    pub fn len(&self) -> u128 {
        u128::from(self.last - self.first) + 1
    }

    /// Always false: a `SeedRange` holds at least one seed.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Every seed, in order.
    pub fn seeds(&self) -> RangeInclusive<u64> {
        self.first..=self.last
    }

    /// The seeds in consecutive pieces of at most `size` (at least 1) seeds, in order.
    pub fn chunks(&self, size: u64) -> impl Iterator<Item = RangeInclusive<u64>> {
        let size = size.max(1);
        let last = self.last;
        let mut next = Some(self.first);
        std::iter::from_fn(move || {
            let start = next?;
            let end = start.saturating_add(size - 1).min(last);
            next = if end == last { None } else { Some(end + 1) };
            Some(start..=end)
        })
    }
}

impl fmt::Display for SeedRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.inclusive {
            write!(f, "{}..={}", self.first, self.last)
        } else {
            // Written as A..B, so B = last + 1 fitted in a u64.
            write!(f, "{}..{}", self.first, self.last + 1)
        }
    }
}

/// One end of a seed range.
fn seed(text: &str) -> Result<u64, SeedRangeError> {
    let number = text.trim();
    if number.starts_with('-') && number.len() > 1 {
        return Err(SeedRangeError::Negative);
    }
    number.parse::<u64>().map_err(|error| match error.kind() {
        IntErrorKind::PosOverflow => SeedRangeError::Overflow { number: number.into() },
        _ => SeedRangeError::Malformed,
    })
}

impl FromStr for SeedRange {
    type Err = SeedRangeError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let whole = text.trim();
        let Some((start, end)) = whole.split_once("..") else {
            return Err(if whole.starts_with('-') {
                SeedRangeError::Negative
            } else {
                SeedRangeError::Malformed
            });
        };
        let first = seed(start)?;
        let (last, inclusive) = match end.strip_prefix('=') {
            Some(end) => (seed(end)?, true),
            None => {
                let end = seed(end)?;
                // A..B holds B - 1 as its last seed; A..0 holds none.
                let last = end.checked_sub(1).ok_or(SeedRangeError::Empty)?;
                (last, false)
            }
        };
        if last < first {
            return Err(SeedRangeError::Empty);
        }
        Ok(SeedRange { first, last, inclusive })
    }
}

/// A range of milliseconds `A..B`, both included, at most an hour: `5..20`, `0..0` (`5..=20`
/// and a single number `7` are read too). The notation of every range of values on the
/// command line (`sim --hold-ms 5..20`); `5-20` is refused with what to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MsRange {
    from: u64,
    to: u64,
}

/// Why a millisecond range was refused (clap prints the text given before the message).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MsRangeError {
    #[error("write a range of milliseconds such as 5..20")]
    Malformed,
    #[error("write the range as {from}..{to}: ranges take two dots, as on every command")]
    Dashed { from: String, to: String },
    #[error("milliseconds are not negative: write a range such as 5..20")]
    Negative,
    #[error("the end is below the start")]
    Reversed,
    #[error("at most an hour (3600000 ms)")]
    TooLong,
}

impl MsRange {
    /// The longest range end: an hour.
    pub const MAX_MS: u64 = 3_600_000;

    /// `from..=to` milliseconds; `None` when reversed or beyond an hour.
    pub fn new(from: u64, to: u64) -> Option<Self> {
        (from <= to && to <= Self::MAX_MS).then_some(MsRange { from, to })
    }

    /// The shortest time, milliseconds.
    pub fn from_ms(&self) -> u64 {
        self.from
    }

    /// The longest time, milliseconds (included).
    pub fn to_ms(&self) -> u64 {
        self.to
    }

    /// `(from, to)`.
    pub fn as_pair(&self) -> (u64, u64) {
        (self.from, self.to)
    }
}

impl fmt::Display for MsRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.from, self.to)
    }
}

impl FromStr for MsRange {
    type Err = MsRangeError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let whole = text.trim();
        if whole.starts_with('-') {
            return Err(MsRangeError::Negative);
        }
        let ms = |number: &str| {
            let number = number.trim();
            if number.starts_with('-') {
                return Err(MsRangeError::Negative);
            }
            number.parse::<u64>().map_err(|error| match error.kind() {
                IntErrorKind::PosOverflow => MsRangeError::TooLong,
                _ => MsRangeError::Malformed,
            })
        };
        let (a, b) = match whole.split_once("..") {
            Some((a, b)) => (a, b.strip_prefix('=').unwrap_or(b)),
            None => match whole.split_once('-') {
                // The notation this command took before: say what to write instead.
                Some((a, b)) if ms(a).is_ok() && ms(b).is_ok() => {
                    return Err(MsRangeError::Dashed {
                        from: a.trim().to_owned(),
                        to: b.trim().to_owned(),
                    })
                }
                Some(_) => return Err(MsRangeError::Malformed),
                None => (whole, whole),
            },
        };
        let (from, to) = (ms(a)?, ms(b)?);
        if to < from {
            return Err(MsRangeError::Reversed);
        }
        if to > Self::MAX_MS {
            return Err(MsRangeError::TooLong);
        }
        Ok(MsRange { from, to })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seeds(text: &str) -> Result<SeedRange, SeedRangeError> {
        text.parse()
    }

    #[test]
    fn seed_ranges_parse_both_notations() {
        let r = seeds("0..100").unwrap();
        assert_eq!((r.first(), r.last(), r.len()), (0, 99, 100));
        assert_eq!(r.to_string(), "0..100");
        let r = seeds(" 5..=9 ").unwrap();
        assert_eq!((r.first(), r.last(), r.len()), (5, 9, 5));
        assert_eq!(r.to_string(), "5..=9");
        assert_eq!(seeds("0..1").unwrap().seeds().collect::<Vec<_>>(), vec![0]);
        assert_eq!(seeds("0..=0").unwrap().seeds().collect::<Vec<_>>(), vec![0]);
        assert_eq!(seeds("7 .. 9").unwrap().to_string(), "7..9");
    }

    #[test]
    fn seed_ranges_reach_the_last_seed_without_wrapping() {
        let r = seeds("18446744073709551613..18446744073709551615").unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(
            r.seeds().collect::<Vec<_>>(),
            vec![18446744073709551613, 18446744073709551614]
        );
        assert_eq!(r.to_string(), "18446744073709551613..18446744073709551615");
        let r = seeds("18446744073709551614..=18446744073709551615").unwrap();
        assert_eq!(r.seeds().count(), 2);
        let all = seeds("0..=18446744073709551615").unwrap();
        assert_eq!(all.len(), 1u128 << 64);
        let chunks: Vec<_> = r.chunks(1).collect();
        assert_eq!(chunks, vec![u64::MAX - 1..=u64::MAX - 1, u64::MAX..=u64::MAX]);
        let chunks: Vec<_> = r.chunks(u64::MAX).collect();
        assert_eq!(chunks, vec![u64::MAX - 1..=u64::MAX]);
    }

    #[test]
    fn seed_chunks_cover_the_range_in_order() {
        let r = seeds("3..=12").unwrap();
        let chunks: Vec<_> = r.chunks(4).collect();
        assert_eq!(chunks, vec![3..=6, 7..=10, 11..=12]);
        assert_eq!(r.chunks(0).count(), 10);
    }

    #[test]
    fn seed_ranges_refuse_with_what_to_write() {
        let overflow = seeds("0..18446744073709551616").unwrap_err();
        assert!(matches!(overflow, SeedRangeError::Overflow { .. }), "{overflow}");
        assert!(overflow.to_string().contains("overflows"), "{overflow}");
        assert!(matches!(
            seeds("0..=18446744073709551616"),
            Err(SeedRangeError::Overflow { .. })
        ));
        assert!(matches!(
            seeds("99999999999999999999..=1"),
            Err(SeedRangeError::Overflow { .. })
        ));
        for negative in ["-5..3", "0..-1", "-1..=-1", "-3"] {
            let error = seeds(negative).unwrap_err();
            assert!(matches!(error, SeedRangeError::Negative), "{negative}: {error}");
            assert!(error.to_string().contains("write a range such as 0..100"), "{error}");
        }
        for malformed in [
            "", "..", "5", "a..b", "1..2..3", "1...5", "0..=", "..9", "0x1..5", "1.5..3",
        ] {
            let error = seeds(malformed).unwrap_err();
            assert!(matches!(error, SeedRangeError::Malformed), "{malformed:?}: {error}");
            assert!(
                error.to_string().contains("write a range such as 0..100 or 5..=9"),
                "{error}"
            );
        }
        for empty in [
            "0..0",
            "5..5",
            "9..5",
            "9..=5",
            "18446744073709551615..18446744073709551615",
        ] {
            let error = seeds(empty).unwrap_err();
            assert!(matches!(error, SeedRangeError::Empty), "{empty}: {error}");
            assert!(error.to_string().contains("empty or inverted"), "{error}");
        }
    }

    #[test]
    fn seed_ranges_from_bounds() {
        let (five, four) = (5, 4);
        assert_eq!(SeedRange::new(five..=four), None);
        assert_eq!(SeedRange::new(4..=4).unwrap().to_string(), "4..=4");
        assert_eq!(SeedRange::new(0..=u64::MAX).unwrap().len(), 1u128 << 64);
    }

    #[test]
    fn ms_ranges_parse() {
        let r: MsRange = "5..20".parse().unwrap();
        assert_eq!((r.from_ms(), r.to_ms(), r.as_pair()), (5, 20, (5, 20)));
        assert_eq!(r.to_string(), "5..20");
        assert_eq!("0..0".parse::<MsRange>().unwrap().as_pair(), (0, 0));
        assert_eq!(" 7 .. 7 ".parse::<MsRange>().unwrap().as_pair(), (7, 7));
        assert_eq!("7".parse::<MsRange>().unwrap().as_pair(), (7, 7));
        assert_eq!("5..=20".parse::<MsRange>().unwrap().as_pair(), (5, 20));
        assert_eq!("0..3600000".parse::<MsRange>().unwrap().as_pair(), (0, 3_600_000));
        assert_eq!(MsRange::new(3, 2), None);
        assert_eq!(MsRange::new(0, 3_600_001), None);
    }

    #[test]
    fn ms_ranges_refuse_with_what_to_write() {
        let error = |text: &str| text.parse::<MsRange>().unwrap_err();
        for malformed in ["", "-", "a..b", "5..", "..20", "-20x", "5..20..30", "1.5..2", "5-20-30"] {
            let e = error(malformed);
            assert!(
                matches!(e, MsRangeError::Malformed | MsRangeError::Negative),
                "{malformed:?}: {e}"
            );
            assert!(e.to_string().contains("such as 5..20"), "{e}");
        }
        assert_eq!(
            error("5-20").to_string(),
            "write the range as 5..20: ranges take two dots, as on every command"
        );
        assert!(matches!(error("-5..20"), MsRangeError::Negative));
        assert!(matches!(error("5..-20"), MsRangeError::Negative));
        assert!(matches!(error("20..5"), MsRangeError::Reversed));
        assert_eq!(error("20..5").to_string(), "the end is below the start");
        assert!(matches!(error("0..3600001"), MsRangeError::TooLong));
        assert!(matches!(error("0..99999999999999999999999"), MsRangeError::TooLong));
        assert!(error("0..3600001").to_string().contains("at most an hour"));
    }
}
