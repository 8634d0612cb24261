//! What use taught: for each policy class and tool (by canonical name), the newest distinct
//! queries whose answer listed the tool before a session called it successfully. Kept in
//! memory ([`Learned`]) and, when a file is given, in an append-only JSON Lines file
//! ([`LearnedFile`]): one `{"query", "tool", "class"?}` line per use, never arguments,
//! results, identities or header values.
//!
//! The file survives a crash: a use is one line written at once, a torn last line is cut off
//! with a warning when the file is next opened, and a malformed line elsewhere is skipped
//! with a warning that names it. It stays bounded: when it holds many more lines than the
//! uses it keeps (repeats, and queries pushed out by newer ones), it is rewritten with the
//! kept uses only (a temporary file renamed over it).

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use parking_lot::Mutex;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// At most this many distinct queries are kept per tool and class (the newest).
pub const MAX_QUERIES_PER_TOOL: usize = 64;

/// The file is rewritten when it holds more than twice the kept uses plus this many lines.
const SLACK_LINES: usize = 1024;

/// One use: a query, and the tool (its canonical name) a session then called successfully,
/// for callers of one policy class (`""`: no policy).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Use {
    /// The query's text as the model wrote it.
    pub query: String,
    /// The tool's canonical name (`<escaped group>__<tool>`).
    pub tool: String,
    /// The caller's policy class, as [`Policy::class_key`](crate::Policy::class_key) names it;
    /// empty without a policy.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub class: String,
}

impl Use {
    /// A use for callers of `class`.
    pub fn new(
        query: impl Into<String>,
        tool: impl Into<String>,
        class: impl Into<String>,
    ) -> Self {
        Self {
            query: query.into(),
            tool: tool.into(),
            class: class.into(),
        }
    }
}

/// The learned queries, per class and tool, newest last.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Learned {
    classes: FxHashMap<String, FxHashMap<String, VecDeque<String>>>,
    pairs: usize,
}

impl Learned {
    /// Nothing learned.
    pub fn new() -> Self {
        Self::default()
    }

    /// Learns `u`: its query becomes the tool's newest (moved there when already known; the
    /// oldest is dropped past [`MAX_QUERIES_PER_TOOL`]). Whitespace is collapsed; a blank
    /// query or tool teaches nothing. `true` when something changed.
    pub fn add(&mut self, u: &Use) -> bool {
        let query = collapse(&u.query);
        if query.is_empty() || u.tool.trim().is_empty() {
            return false;
        }
        let queries = self
            .classes
            .entry(u.class.clone())
            .or_default()
            .entry(u.tool.clone())
            .or_default();
        if queries.back() == Some(&query) {
            return false;
        }
        if let Some(at) = queries.iter().position(|q| *q == query) {
            queries.remove(at);
            self.pairs -= 1;
        }
        queries.push_back(query);
        self.pairs += 1;
        if queries.len() > MAX_QUERIES_PER_TOOL {
            queries.pop_front();
            self.pairs -= 1;
        }
        true
    }

    /// The learned queries of `tool` for callers of `class`, oldest first.
    pub fn queries<'a>(&'a self, class: &str, tool: &str) -> impl Iterator<Item = &'a str> + 'a {
        self.classes
            .get(class)
            .and_then(|tools| tools.get(tool))
            .into_iter()
            .flatten()
            .map(String::as_str)
    }

    /// The tools with learned queries for callers of `class`.
    pub fn tools<'a>(&'a self, class: &str) -> impl Iterator<Item = &'a str> + 'a {
        self.classes
            .get(class)
            .into_iter()
            .flat_map(|tools| tools.keys())
            .map(String::as_str)
    }

    /// Forgets what was learned for `tool` (every class), or everything with `None`; how many
    /// uses were forgotten.
    pub fn forget(&mut self, tool: Option<&str>) -> usize {
        let before = self.pairs;
        match tool {
            None => self.classes.clear(),
            Some(tool) => {
                for tools in self.classes.values_mut() {
                    tools.remove(tool);
                }
                self.classes.retain(|_, tools| !tools.is_empty());
            }
        }
        self.pairs = self
            .classes
            .values()
            .flat_map(|tools| tools.values())
            .map(VecDeque::len)
            .sum();
        before - self.pairs
    }

    /// How many uses are kept (distinct query, tool and class).
    pub fn len(&self) -> usize {
        self.pairs
    }

    /// Nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.pairs == 0
    }

    /// Every kept use, each tool's oldest first (classes and tools in name order).
    pub fn uses(&self) -> Vec<Use> {
        let mut classes: Vec<_> = self.classes.iter().collect();
        classes.sort_by(|a, b| a.0.cmp(b.0));
        let mut out = Vec::with_capacity(self.pairs);
        for (class, tools) in classes {
            let mut tools: Vec<_> = tools.iter().collect();
            tools.sort_by(|a, b| a.0.cmp(b.0));
            for (tool, queries) in tools {
                out.extend(queries.iter().map(|q| Use::new(q, tool, class)));
            }
        }
        out
    }
}

/// The uses of a JSON Lines text (`{"query", "tool", "class"?}` lines; blank lines skipped),
/// each with its line number; the first line that is not a use (or has an empty query or
/// tool) is the error, with its number.
pub fn parse_uses(text: &str) -> Result<Vec<(usize, Use)>, (usize, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let u: Use = serde_json::from_str(line)
            .map_err(|e| (i + 1, format!("not a use {{\"query\", \"tool\"}}: {e}")))?;
        if u.query.trim().is_empty() || u.tool.trim().is_empty() {
            return Err((i + 1, "the query and the tool must not be empty".into()));
        }
        out.push((i + 1, u));
    }
    Ok(out)
}

/// Whitespace runs as one space, trimmed.
fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Why the learned file could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LearnError {
    /// Reading or writing it failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
}

/// The append-only file of uses, open for appending.
#[derive(Debug)]
pub struct LearnedFile {
    path: PathBuf,
    state: Mutex<FileState>,
}

#[derive(Debug)]
struct FileState {
    file: File,
    /// Lines in the file.
    lines: usize,
}

/// What opening the file found: what it teaches, and what was skipped (each a sentence that
/// names the line).
#[derive(Debug)]
#[non_exhaustive]
pub struct Opened {
    /// The file, open for appending.
    pub file: LearnedFile,
    /// What its uses teach.
    pub learned: Learned,
    /// Lines skipped: a torn last line (cut off), malformed lines.
    pub skipped: Vec<String>,
}

impl LearnedFile {
    /// Opens (or creates, with its folder) the file at `path` and reads every use in it.
    pub fn open(path: &Path) -> Result<Opened, LearnError> {
        let io_error = |source| LearnError::Io {
            path: path.to_owned(),
            source,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io_error)?;
        }
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)
            .map_err(io_error)?;
        let mut learned = Learned::new();
        let mut skipped = Vec::new();
        let mut lines = 0usize;
        // Where the last complete line ends: a torn tail is cut off there.
        let mut complete = 0u64;
        let mut offset = 0u64;
        let mut reader = BufReader::new(&mut file);
        let mut line = Vec::new();
        let mut number = 0usize;
        loop {
            line.clear();
            let n = reader.read_until(b'\n', &mut line).map_err(io_error)?;
            if n == 0 {
                break;
            }
            number += 1;
            offset += n as u64;
            if line.last() != Some(&b'\n') {
                skipped.push(format!(
                    "line {number}: a torn last line (the process stopped while writing it); cut off"
                ));
                break;
            }
            complete = offset;
            lines += 1;
            let text = &line[..line.len() - 1];
            if text.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<Use>(text) {
                Ok(u) => {
                    learned.add(&u);
                }
                Err(e) => skipped.push(format!("line {number}: not a use ({e}); skipped")),
            }
        }
        drop(reader);
        if offset != complete {
            file.set_len(complete).map_err(io_error)?;
            file.seek(SeekFrom::End(0)).map_err(io_error)?;
        }
        for s in &skipped {
            tracing::warn!(file = %path.display(), "{s}");
        }
        Ok(Opened {
            file: Self {
                path: path.to_owned(),
                state: Mutex::new(FileState { file, lines }),
            },
            learned,
            skipped,
        })
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `u` as one line, written at once. `kept` is what the uses now teach: when the
    /// file holds many more lines than that keeps, it is rewritten with the kept uses only.
    pub fn append(&self, u: &Use, kept: &Learned) -> Result<(), LearnError> {
        let mut line = serde_json::to_vec(u).unwrap_or_default();
        line.push(b'\n');
        let mut state = self.state.lock();
        state
            .file
            .write_all(&line)
            .map_err(|source| LearnError::Io {
                path: self.path.clone(),
                source,
            })?;
        state.lines += 1;
        if state.lines > 2 * kept.len() + SLACK_LINES {
            self.rewrite_locked(&mut state, kept)?;
        }
        Ok(())
    }

    /// Rewrites the file with exactly the uses `kept` holds (after a `forget`, or to compact
    /// it): a temporary file beside it, renamed over it.
    pub fn rewrite(&self, kept: &Learned) -> Result<(), LearnError> {
        let mut state = self.state.lock();
        self.rewrite_locked(&mut state, kept)
    }

    fn rewrite_locked(&self, state: &mut FileState, kept: &Learned) -> Result<(), LearnError> {
        let io_error = |source| LearnError::Io {
            path: self.path.clone(),
            source,
        };
        let uses = kept.uses();
        let mut text = Vec::new();
        for u in &uses {
            text.extend(serde_json::to_vec(u).unwrap_or_default());
            text.push(b'\n');
        }
        let mut name = self.path.file_name().unwrap_or_default().to_owned();
        name.push(".tmp");
        let temporary = self.path.with_file_name(name);
        {
            let mut out = File::create(&temporary).map_err(io_error)?;
            out.write_all(&text).map_err(io_error)?;
            out.sync_all().map_err(io_error)?;
        }
        std::fs::rename(&temporary, &self.path).map_err(io_error)?;
        state.file = OpenOptions::new()
            .append(true)
            .open(&self.path)
            .map_err(io_error)?;
        state.lines = uses.len();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "toolsearch-learn-{name}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        dir.join("state").join("learned.jsonl")
    }

    #[test]
    fn the_newest_distinct_queries_are_kept_per_tool_and_class() {
        let mut l = Learned::new();
        assert!(l.add(&Use::new("refund  a payment ", "billing__refund", "")));
        assert!(!l.add(&Use::new("refund a payment", "billing__refund", "")));
        assert!(l.add(&Use::new("money back", "billing__refund", "")));
        // Known again: moved to the newest, not repeated.
        assert!(l.add(&Use::new("refund a payment", "billing__refund", "")));
        assert_eq!(
            l.queries("", "billing__refund").collect::<Vec<_>>(),
            ["money back", "refund a payment"]
        );
        // Another class learns apart.
        assert!(l.add(&Use::new("give it back", "billing__refund", "c1")));
        assert_eq!(l.queries("c1", "billing__refund").count(), 1);
        assert_eq!(l.queries("c2", "billing__refund").count(), 0);
        assert_eq!(l.len(), 3);
        // Blank teaches nothing.
        assert!(!l.add(&Use::new("  ", "billing__refund", "")));
        assert!(!l.add(&Use::new("x", " ", "")));
        for i in 0..100 {
            l.add(&Use::new(format!("q{i}"), "crm__find", ""));
        }
        let kept: Vec<_> = l.queries("", "crm__find").collect();
        assert_eq!(kept.len(), MAX_QUERIES_PER_TOOL);
        assert_eq!(kept.first(), Some(&"q36"));
        assert_eq!(kept.last(), Some(&"q99"));
        assert_eq!(l.len(), 3 + MAX_QUERIES_PER_TOOL);
        assert_eq!(l.forget(Some("billing__refund")), 3);
        assert_eq!(l.tools("").collect::<Vec<_>>(), ["crm__find"]);
        assert_eq!(l.forget(None), MAX_QUERIES_PER_TOOL);
        assert!(l.is_empty());
    }

    #[test]
    fn uses_survive_a_reopen_and_a_torn_last_line_is_cut_off() {
        let path = temp("torn");
        let opened = LearnedFile::open(&path).expect("open");
        assert!(opened.learned.is_empty() && opened.skipped.is_empty());
        let mut learned = opened.learned;
        for u in [
            Use::new("refund a payment", "billing__refund", ""),
            Use::new("money back", "billing__refund", "c1"),
        ] {
            learned.add(&u);
            opened.file.append(&u, &learned).expect("append");
        }
        drop(opened.file);
        // A crash in the middle of a line, and a line that is not a use.
        let mut f = OpenOptions::new().append(true).open(&path).expect("file");
        f.write_all(b"{\"query\": 7}\n{\"query\":\"half a li")
            .expect("write");
        drop(f);
        let again = LearnedFile::open(&path).expect("reopen");
        assert_eq!(again.learned, learned, "nothing lost");
        assert_eq!(again.skipped.len(), 2, "{:?}", again.skipped);
        assert!(again.skipped[0].starts_with("line 3: not a use"));
        assert!(again.skipped[1].starts_with("line 4: a torn last line"));
        // The torn tail is gone: the next use is a line of its own.
        let u = Use::new("find a customer", "crm__find", "");
        let mut kept = again.learned.clone();
        kept.add(&u);
        again.file.append(&u, &kept).expect("append");
        drop(again.file);
        let third = LearnedFile::open(&path).expect("reopen");
        assert_eq!(third.learned, kept);
        assert_eq!(third.skipped.len(), 1, "only the malformed line remains");
        let _ = std::fs::remove_dir_all(path.parent().and_then(Path::parent).expect("dir"));
    }

    #[test]
    fn the_file_is_rewritten_with_the_kept_uses_when_it_grows() {
        let path = temp("bounded");
        let opened = LearnedFile::open(&path).expect("open");
        let mut learned = opened.learned;
        // The same two queries over and over: two kept uses, many lines.
        for i in 0..(SLACK_LINES + 10) {
            let u = Use::new(format!("q{}", i % 2), "crm__find", "");
            learned.add(&u);
            opened.file.append(&u, &learned).expect("append");
        }
        let lines = std::fs::read_to_string(&path)
            .expect("read")
            .lines()
            .count();
        assert!(lines < SLACK_LINES, "rewritten: {lines} lines");
        assert_eq!(learned.len(), 2);
        // After a forget, the file holds exactly what is kept.
        learned.forget(Some("crm__find"));
        opened.file.rewrite(&learned).expect("rewrite");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "");
        drop(opened.file);
        assert!(LearnedFile::open(&path).expect("reopen").learned.is_empty());
        let _ = std::fs::remove_dir_all(path.parent().and_then(Path::parent).expect("dir"));
    }
}
