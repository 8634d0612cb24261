//! The golden-file harness every crate's tests share (included with `#[path]`): a golden file
#![allow(dead_code)] // each test crate uses what it needs
//! pins the exact text a wire format produces. `UPDATE_GOLDEN=1` rewrites the files (review
//! the diff); otherwise each is read and compared, and every difference is reported at once.

use std::path::{Path, PathBuf};

/// The golden files of one directory, checked in one test.
#[derive(Debug)]
pub struct Golden {
    dir: PathBuf,
    update: bool,
    failures: Vec<String>,
}

impl Golden {
    /// The golden files in `dir`.
    pub fn new(dir: impl AsRef<Path>) -> Self {
        Self {
            dir: dir.as_ref().to_owned(),
            update: std::env::var_os("UPDATE_GOLDEN").is_some(),
            failures: Vec::new(),
        }
    }

    /// The pinned text of `name`, to compare with what was made now: `None` when the files
    /// are being rewritten (`fresh` is written) or when the file is missing (a failure).
    pub fn pinned(&mut self, name: &str, fresh: &str) -> Option<String> {
        let path = self.dir.join(name);
        if self.update {
            std::fs::create_dir_all(&self.dir).expect("golden dir");
            std::fs::write(&path, fresh).expect("write golden");
            return None;
        }
        match std::fs::read_to_string(&path) {
            Ok(text) => Some(text),
            Err(_) => {
                self.fail(format!(
                    "{}: no golden file (run with UPDATE_GOLDEN=1)",
                    path.display()
                ));
                None
            }
        }
    }

    /// Checks that `got` is exactly the text of `name`.
    pub fn check(&mut self, name: &str, got: &str) {
        if let Some(want) = self.pinned(name, got)
            && want != got
        {
            self.fail(format!("{name}:\n  want {want}\n  got  {got}"));
        }
    }

    /// Records a difference found by the caller's own comparison.
    pub fn fail(&mut self, message: String) {
        self.failures.push(message);
    }

    /// Fails the test with every difference found.
    pub fn finish(self) {
        assert!(self.failures.is_empty(), "{}", self.failures.join("\n"));
    }
}
