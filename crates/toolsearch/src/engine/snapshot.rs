//! The engine snapshot: a directory with its search indexes and argument validators, built
//! together and swapped as a whole, so a reader never sees a directory with another's indexes.

use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use super::learning::Learning;
use crate::catalog::{Directory, Visibility};
use crate::dispatch::Validators;
use crate::policy::{CallerClass, Policy};
use crate::search::{LearnedIndex, SearchIndex};
use crate::vendor::ShortForms;

/// Most caller classes whose catalogs a snapshot keeps (the cache starts over past it).
const MAX_CLASSES: usize = 1024;

/// A class's learned field (`None`: nothing learned names a tool here), and the version of
/// the learning it was built from.
type LearnedField = (u64, Option<Arc<LearnedIndex>>);

/// One immutable state of the catalog: the directory, its indexes, its validators.
#[derive(Debug)]
pub struct Snapshot {
    directory: Directory,
    index: SearchIndex,
    validators: Validators,
    /// What each caller class sees, made on first use (shared by the callers of a class).
    visibility: Mutex<HashMap<CallerClass, Arc<Visibility>>>,
    /// The vendor short forms of tools whose names do not fit, made on first use.
    short_forms: OnceLock<ShortForms>,
    /// Each class's learned field, with the version of the learning it was built from.
    learned: Mutex<HashMap<String, LearnedField>>,
}

impl Snapshot {
    /// The snapshot of `directory`: its keyword index is built now, BM25 and vectors on
    /// first use.
    pub fn new(directory: Directory) -> Self {
        let index = SearchIndex::build(&directory);
        let validators = Validators::new(&directory);
        Self {
            directory,
            index,
            validators,
            visibility: Mutex::default(),
            short_forms: OnceLock::new(),
            learned: Mutex::default(),
        }
    }

    /// What callers of `class` learned, as a field of this directory: built once per
    /// version of `learning` (`None`: nothing learned that names a tool here).
    pub(crate) fn learned_field(
        &self,
        learning: &Learning,
        class: &str,
    ) -> Option<Arc<LearnedIndex>> {
        let version = learning.version();
        if let Some((v, field)) = self.learned.lock().get(class)
            && *v == version
        {
            return field.clone();
        }
        let field = learning.field(self, class);
        let field = (!field.is_empty()).then(|| Arc::new(field));
        let mut cache = self.learned.lock();
        if cache.len() >= MAX_CLASSES {
            cache.clear();
        }
        cache.insert(class.to_owned(), (version, field.clone()));
        field
    }

    /// What callers of `class` see under `policy`, computed once per snapshot and class.
    pub(crate) fn visibility(&self, policy: &Policy, class: CallerClass) -> Arc<Visibility> {
        let mut cache = self.visibility.lock();
        if let Some(v) = cache.get(&class) {
            return v.clone();
        }
        if cache.len() >= MAX_CLASSES {
            cache.clear();
        }
        let v = Arc::new(policy.visibility(&self.directory, &class));
        cache.insert(class, v.clone());
        v
    }

    /// The directory.
    pub fn directory(&self) -> &Directory {
        &self.directory
    }

    /// Its search indexes.
    pub fn index(&self) -> &SearchIndex {
        &self.index
    }

    pub(crate) fn validators(&self) -> &Validators {
        &self.validators
    }

    /// The vendor short forms of this snapshot's tools (made on first use).
    pub(crate) fn short_forms(&self) -> &ShortForms {
        self.short_forms
            .get_or_init(|| ShortForms::build(&self.directory))
    }
}

/// The live snapshot: readers keep the snapshot they took; the next read sees a new one.
#[derive(Debug)]
pub(crate) struct Live {
    current: RwLock<Arc<Snapshot>>,
}

impl Live {
    pub(crate) fn new(snapshot: Snapshot) -> Self {
        Self {
            current: RwLock::new(Arc::new(snapshot)),
        }
    }

    /// The current snapshot.
    pub(crate) fn get(&self) -> Arc<Snapshot> {
        self.current.read().clone()
    }

    /// Replaces the snapshot; returns the previous one.
    pub(crate) fn replace(&self, snapshot: Snapshot) -> Arc<Snapshot> {
        let new = Arc::new(snapshot);
        std::mem::replace(&mut *self.current.write(), new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{GroupSpec, SourceTools, ToolDef};

    fn dir(tools: &[&str]) -> Directory {
        Directory::build(vec![SourceTools::grouped(
            "s",
            GroupSpec::new("g", "d"),
            tools.iter().map(|t| ToolDef::new(*t, "")).collect(),
        )])
        .expect("valid")
    }

    #[test]
    fn readers_keep_their_snapshot() {
        let live = Live::new(Snapshot::new(dir(&["a"])));
        let held = live.get();
        live.replace(Snapshot::new(dir(&["a", "b"])));
        assert_eq!(held.directory().tools().len(), 1);
        assert_eq!(live.get().directory().tools().len(), 2);
    }
}
