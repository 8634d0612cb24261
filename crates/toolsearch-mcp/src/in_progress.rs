//! The JSON-RPC ids in progress in each HTTP session: a request reusing an id that is still in
//! progress in its session gets an error answer (two requests with one id would otherwise share
//! one answer, and one of them none).

use parking_lot::Mutex;
use std::collections::HashSet;
use std::sync::Arc;

use serde_json::Value;

/// The (session, id) pairs in progress.
#[derive(Debug, Default)]
pub(crate) struct InProgress {
    ids: Mutex<HashSet<(String, String)>>,
}

/// One id in progress, until dropped (when its answer has been written, or abandoned).
#[derive(Debug)]
pub(crate) struct Begun {
    ids: Arc<InProgress>,
    key: (String, String),
}

impl InProgress {
    fn ids(&self) -> parking_lot::MutexGuard<'_, HashSet<(String, String)>> {
        self.ids.lock()
    }

    /// Notes that `id` is in progress in `session`; `None` when it already is.
    pub(crate) fn begin(self: &Arc<Self>, session: &str, id: &Value) -> Option<Begun> {
        let key = (session.to_owned(), id.to_string());
        if !self.ids().insert(key.clone()) {
            return None;
        }
        Some(Begun {
            ids: self.clone(),
            key,
        })
    }
}

impl Drop for Begun {
    fn drop(&mut self) {
        self.ids.ids().remove(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_id_is_in_progress_once_per_session_until_its_answer_is_done() {
        let ids = Arc::new(InProgress::default());
        let first = ids.begin("s1", &json!(7)).expect("first");
        assert!(ids.begin("s1", &json!(7)).is_none());
        // Another session, or the string "7", is another id.
        let other = ids.begin("s2", &json!(7)).expect("other session");
        let string = ids.begin("s1", &json!("7")).expect("a string id");
        drop(first);
        assert!(ids.begin("s1", &json!(7)).is_some());
        drop((other, string));
        assert!(ids.ids().is_empty());
    }
}
