//! Which caller opened each HTTP session (`initialize`), so that no other caller can use it: a
//! POST, a GET (the session's stream, or its resumption with `Last-Event-ID`) or a DELETE that
//! names another caller's session is answered exactly as one naming an unknown session.
//!
//! Callers are the HTTP front's authenticated identities (`[[client]]`, JWTs, the one token of
//! `TOOLSEARCH_HTTP_TOKEN`); without authentication every request is the same, anonymous,
//! caller.

use parking_lot::Mutex;
use std::collections::HashMap;

/// The opener of each session, by session id.
#[derive(Debug, Default)]
pub(crate) struct SessionOwners {
    owners: Mutex<HashMap<String, Option<String>>>,
}

impl SessionOwners {
    fn owners(&self) -> parking_lot::MutexGuard<'_, HashMap<String, Option<String>>> {
        self.owners.lock()
    }

    /// Notes that `caller` opened session `id`.
    pub(crate) fn opened(&self, id: &str, caller: Option<&str>) {
        self.owners()
            .insert(id.to_owned(), caller.map(str::to_owned));
    }

    /// Whether `caller` may use session `id`: it opened it, or the session was not opened here
    /// (rmcp answers for a session it does not know).
    pub(crate) fn allows(&self, id: &str, caller: Option<&str>) -> bool {
        match self.owners().get(id) {
            Some(owner) => owner.as_deref() == caller,
            None => true,
        }
    }

    /// Forgets session `id` (it was closed).
    pub(crate) fn closed(&self, id: &str) {
        self.owners().remove(id);
    }

    /// How many sessions it remembers.
    pub(crate) fn len(&self) -> usize {
        self.owners().len()
    }

    /// The sessions it remembers.
    pub(crate) fn ids(&self) -> Vec<String> {
        self.owners().keys().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_serves_its_opener_only() {
        let owners = SessionOwners::default();
        owners.opened("s1", Some("alice"));
        owners.opened("s2", None);
        assert!(owners.allows("s1", Some("alice")));
        assert!(!owners.allows("s1", Some("bob")));
        assert!(!owners.allows("s1", None));
        assert!(owners.allows("s2", None));
        assert!(!owners.allows("s2", Some("alice")));
        // Unknown here: left to rmcp, which knows no such session either.
        assert!(owners.allows("s3", Some("bob")));
        owners.closed("s1");
        assert_eq!(owners.ids(), ["s2"]);
        assert_eq!(owners.len(), 1);
    }
}
