//! Counted nouns in generated text: "1 run", "2 runs", never "1 runs".

use std::fmt;

/// `n` and the noun, singular for exactly one: `format!("{}", Counted::new(1, "run"))` is
/// "1 run". Nouns whose plural is not the singular plus "s" use [`Counted::irregular`].
#[derive(Clone, Copy, Debug)]
pub struct Counted<'a> {
    n: u64,
    singular: &'a str,
    plural: Option<&'a str>,
}

impl<'a> Counted<'a> {
    pub fn new(n: impl TryInto<u64>, singular: &'a str) -> Self {
        Counted {
            n: n.try_into().unwrap_or(u64::MAX),
            singular,
            plural: None,
        }
    }

    pub fn irregular(n: impl TryInto<u64>, singular: &'a str, plural: &'a str) -> Self {
        Counted {
            plural: Some(plural),
            ..Counted::new(n, singular)
        }
    }
}

impl fmt::Display for Counted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.n, self.plural) {
            (1, _) => write!(f, "1 {}", self.singular),
            (n, Some(plural)) => write!(f, "{n} {plural}"),
            (n, None) => write!(f, "{n} {}s", self.singular),
        }
    }
}

/// Shorthand for [`Counted::new`].
pub fn count<'a>(n: impl TryInto<u64>, singular: &'a str) -> Counted<'a> {
    Counted::new(n, singular)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_is_singular_everything_else_plural() {
        assert_eq!(count(1usize, "run").to_string(), "1 run");
        assert_eq!(count(0u64, "run").to_string(), "0 runs");
        assert_eq!(count(2u32, "overlap").to_string(), "2 overlaps");
        assert_eq!(Counted::irregular(1u8, "process", "processes").to_string(), "1 process");
        assert_eq!(
            Counted::irregular(3u8, "process", "processes").to_string(),
            "3 processes"
        );
    }
}
