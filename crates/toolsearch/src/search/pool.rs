//! Per-query scratch kept for the next query: a search over a large catalog needs arrays the
//! size of the catalog, and allocating them afresh for every query cost page faults over the
//! whole of them. One is taken per query (a new one when every pooled one is in use, as under
//! concurrent queries) and handed back, reset by its user, when the query is done.

use parking_lot::Mutex;

/// Scratch values waiting for a query.
#[derive(Debug)]
pub(crate) struct Pool<T>(Mutex<Vec<T>>);

impl<T> Default for Pool<T> {
    fn default() -> Self {
        Self(Mutex::new(Vec::new()))
    }
}

impl<T> Pool<T> {
    /// A pooled value, or `make()` when none is free.
    pub(crate) fn take(&self, make: impl FnOnce() -> T) -> T {
        let pooled = self.0.lock().pop();
        pooled.unwrap_or_else(make)
    }

    /// Hands `value` back for a later query.
    pub(crate) fn give(&self, value: T) {
        self.0.lock().push(value);
    }
}
