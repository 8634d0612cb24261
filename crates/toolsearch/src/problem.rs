//! What is wrong with an input and where: a key path in a config file (`search.bm25.k1`), a
//! place in a catalog file (`groups[0].tools[2].name`), a source's name. Every validation
//! reports all its problems at once, in this one shape.

use std::fmt;

/// One problem and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Problem {
    /// Where: a key path, a place in a file, a source's name; empty for the input as a whole.
    pub at: String,
    /// What is wrong there.
    pub message: String,
}

impl Problem {
    /// The problem `message` at `at`.
    pub fn new(at: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            at: at.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Problem {
    /// `at: message`, or the message alone when it is about the input as a whole.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.at.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.at, self.message)
        }
    }
}

/// Every problem a validation found, in the order found.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Problems(Vec<Problem>);

impl Problems {
    /// No problems yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the problem `message` at `at`.
    pub fn add(&mut self, at: impl Into<String>, message: impl Into<String>) {
        self.0.push(Problem::new(at, message));
    }

    /// Adds a problem.
    pub fn push(&mut self, problem: Problem) {
        self.0.push(problem);
    }

    /// `Ok(value)` when nothing was found, else these problems.
    pub fn or_ok<T>(self, value: T) -> Result<T, Self> {
        if self.0.is_empty() {
            Ok(value)
        } else {
            Err(self)
        }
    }
}

impl std::ops::Deref for Problems {
    type Target = [Problem];

    fn deref(&self) -> &[Problem] {
        &self.0
    }
}

impl fmt::Display for Problems {
    /// Each problem, joined by `; `.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

impl Extend<Problem> for Problems {
    fn extend<I: IntoIterator<Item = Problem>>(&mut self, iter: I) {
        self.0.extend(iter);
    }
}

impl FromIterator<Problem> for Problems {
    fn from_iter<I: IntoIterator<Item = Problem>>(iter: I) -> Self {
        Self(iter.into_iter().collect())
    }
}

impl IntoIterator for Problems {
    type Item = Problem;
    type IntoIter = std::vec::IntoIter<Problem>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a> IntoIterator for &'a Problems {
    type Item = &'a Problem;
    type IntoIter = std::slice::Iter<'a, Problem>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn problems_read_as_place_and_message_joined() {
        let mut p = Problems::new();
        assert_eq!(p.clone().or_ok(1), Ok(1));
        p.add("search.bm25.k1", "12 is outside 0..=10");
        p.add("", "not a catalog");
        assert_eq!(
            p.to_string(),
            "search.bm25.k1: 12 is outside 0..=10; not a catalog"
        );
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].at, "search.bm25.k1");
        assert!(p.or_ok(1).is_err());
    }
}
