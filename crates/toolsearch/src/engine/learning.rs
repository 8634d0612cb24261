//! Learning from use: a discovery query followed, in the same session, by a successful call
//! of a tool its answer listed is a use — the pair (query, tool) is learned for the caller's
//! policy class, and ranks that class's searches from then on (the learned field, see
//! [`LearnedIndex`]). Never arguments, results, identities or header values.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Mutex, RwLock};

use super::Engine;
use super::snapshot::Snapshot;
use crate::controls::Searched;
use crate::exec::Session;
use crate::learn::{LearnError, Learned, LearnedFile, Use};
use crate::search::{LEARNED_WEIGHT, LearnedIndex};

/// How many recent answers a session remembers for its next calls.
const LISTINGS: usize = 16;

/// The session state key of its recent answers.
const LISTINGS_KEY: &str = "toolsearch.listings";

/// What the engine learned from use, and the file it keeps it in.
#[derive(Debug, Default)]
pub struct Learning {
    learned: RwLock<Learned>,
    file: Option<LearnedFile>,
    /// Bumped by every change: the learned fields built before it are stale.
    version: AtomicU64,
}

impl Learning {
    /// Learning kept in memory only (gone with the process).
    pub fn in_memory() -> Self {
        Self::default()
    }

    /// Learning kept in the file at `path` (created with its folder when missing): what it
    /// holds is learned now, and every new use is appended to it. A torn last line or a
    /// malformed one is skipped with a warning.
    pub fn open(path: &Path) -> Result<Self, LearnError> {
        let opened = LearnedFile::open(path)?;
        Ok(Self {
            learned: RwLock::new(opened.learned),
            file: Some(opened.file),
            version: AtomicU64::new(1),
        })
    }

    /// What is learned now.
    pub fn learned(&self) -> Learned {
        self.learned.read().clone()
    }

    /// Learns `u` (kept in the file when there is one). A write that fails is logged and the
    /// use is still learned in memory.
    pub fn learn(&self, u: &Use) {
        let mut learned = self.learned.write();
        if !learned.add(u) {
            return;
        }
        self.version.fetch_add(1, Ordering::AcqRel);
        if let Some(file) = &self.file
            && let Err(e) = file.append(u, &learned)
        {
            tracing::warn!(error = %e, "a learned use was not saved");
        }
    }

    /// Forgets what was learned for `tool` (a canonical name; every class), or everything;
    /// how many uses were forgotten. The file is rewritten without them.
    pub fn forget(&self, tool: Option<&str>) -> Result<usize, LearnError> {
        let mut learned = self.learned.write();
        let n = learned.forget(tool);
        self.version.fetch_add(1, Ordering::AcqRel);
        if let Some(file) = &self.file {
            file.rewrite(&learned)?;
        }
        Ok(n)
    }

    /// The version of what is learned (changes with every use learned or forgotten).
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// The learned field of `snap`'s directory for callers of `class`.
    pub(super) fn field(&self, snap: &Snapshot, class: &str) -> LearnedIndex {
        let learned = self.learned.read();
        let dir = snap.directory();
        let docs = learned.tools(class).filter_map(|canonical| {
            let id = dir.tool_by_canonical(canonical)?;
            Some((id, learned.queries(class, canonical).collect::<Vec<_>>()))
        });
        let mut docs: Vec<_> = docs.collect();
        docs.sort_unstable_by_key(|(id, _)| *id);
        LearnedIndex::build(docs, LEARNED_WEIGHT)
    }
}

/// A session's recent answers: each query and the tools it listed, newest last.
#[derive(Debug, Default)]
struct Listings(Mutex<VecDeque<(String, Vec<String>)>>);

impl Engine {
    /// Notes what a discovery answer listed, for the session's next calls.
    pub(super) fn note_listing(&self, session: &Session, searched: &Searched) {
        if self.learning.is_none() || searched.listed.is_empty() || searched.query.is_empty() {
            return;
        }
        if let Some(listings) = session.state_or_insert_with(LISTINGS_KEY, Listings::default) {
            let mut l = listings.0.lock();
            if l.len() == LISTINGS {
                l.pop_front();
            }
            l.push_back((searched.query.clone(), searched.listed.clone()));
        }
    }

    /// A successful call of `canonical` in `session`: a use of the newest query whose answer
    /// listed it, learned for the session's class.
    pub(super) fn learn_call(&self, session: &Session, canonical: &str) {
        let Some(learning) = &self.learning else {
            return;
        };
        let Some(listings) = session.state_or_insert_with(LISTINGS_KEY, Listings::default) else {
            return;
        };
        let query = listings
            .0
            .lock()
            .iter()
            .rev()
            .find(|(_, tools)| tools.iter().any(|t| t == canonical))
            .map(|(q, _)| q.clone());
        let Some(query) = query else { return };
        let class = self.policy.class_key(&self.policy.class_of(session));
        learning.learn(&Use::new(query, canonical, class));
    }

    /// What `session`'s class learned, as a field of `snap` (`None`: nothing).
    pub(super) fn learned_field(
        &self,
        snap: &Snapshot,
        session: &Session,
    ) -> Option<Arc<LearnedIndex>> {
        let learning = self.learning.as_ref()?;
        let class = self.policy.class_key(&self.policy.class_of(session));
        snap.learned_field(learning, &class)
    }
}
