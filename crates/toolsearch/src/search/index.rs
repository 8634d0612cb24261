//! The indexes of one corpus snapshot: the exact names (built at once, small), and the keyword
//! index, the BM25 index and the vectors (each built on first use or by [`SearchIndex::prepare`],
//! and kept, like the snapshot, until it is replaced). A snapshot searched by BM25 alone never
//! builds the keyword index: at 100k tools it took more time and memory than BM25's.

use parking_lot::Mutex;
use std::sync::{Arc, OnceLock};

use super::SearchError;
use super::bm25::Bm25Index;
use super::corpus::Corpus;
use super::exact::ExactNames;
use super::keyword::KeywordIndex;
use super::semantic::{Embeddings, VectorIndex};
use crate::config::{Bm25Params, SearchMethod};

/// Every index of one corpus snapshot. Built over a corpus, used only with that corpus.
#[derive(Debug)]
pub struct SearchIndex {
    exact: Arc<ExactNames>,
    keyword: OnceLock<KeywordIndex>,
    bm25: Mutex<Option<Arc<Bm25Index>>>,
    vectors: Mutex<Option<Arc<VectorIndex>>>,
}

impl SearchIndex {
    /// The indexes of `corpus`: its exact names now, the rest on first use.
    pub fn build(corpus: &(impl Corpus + ?Sized)) -> Self {
        Self {
            exact: Arc::new(ExactNames::build(corpus)),
            keyword: OnceLock::new(),
            bm25: Mutex::new(None),
            vectors: Mutex::new(None),
        }
    }

    /// Builds now what `method` searches with (the keyword index, or BM25's with `params`), so
    /// that the first query does not wait for it. Vectors need a model: see
    /// [`vectors`](Self::vectors).
    pub fn prepare(
        &self,
        corpus: &(impl Corpus + ?Sized),
        method: SearchMethod,
        params: &Bm25Params,
    ) {
        match method {
            SearchMethod::Keyword => {
                self.keyword(corpus);
            }
            SearchMethod::Bm25 | SearchMethod::Hybrid => {
                self.bm25(corpus, params);
            }
            SearchMethod::Semantic => {}
        }
    }

    /// The documents whose name or canonical name the query is (see [`ExactNames`]).
    pub fn exact(&self) -> &ExactNames {
        &self.exact
    }

    /// The keyword index, built on first use.
    pub fn keyword(&self, corpus: &(impl Corpus + ?Sized)) -> &KeywordIndex {
        self.keyword
            .get_or_init(|| KeywordIndex::build_with(corpus, self.exact.clone()))
    }

    /// The BM25 index with `params`, built on first use and kept (a call with other
    /// parameters builds and keeps a new one).
    pub fn bm25(&self, corpus: &(impl Corpus + ?Sized), params: &Bm25Params) -> Arc<Bm25Index> {
        let mut slot = self.bm25.lock();
        match &*slot {
            Some(index) if index.params() == params => index.clone(),
            _ => {
                let index = Arc::new(Bm25Index::build(corpus, *params));
                *slot = Some(index.clone());
                index
            }
        }
    }

    /// The documents' vectors from `semantic`'s model, built on first use (embedding only the
    /// documents its cache lacks) and kept.
    pub fn vectors(
        &self,
        corpus: &(impl Corpus + ?Sized),
        semantic: &Embeddings,
    ) -> Result<Arc<VectorIndex>, SearchError> {
        let mut slot = self.vectors.lock();
        match &*slot {
            Some(v) if v.model_id() == semantic.embedder().model_id() => Ok(v.clone()),
            _ => {
                let (v, _) = semantic.index(corpus, &mut |_, _| {})?;
                let v = Arc::new(v);
                *slot = Some(v.clone());
                Ok(v)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{Directory, GroupSpec, SourceTools, ToolDef};

    fn dir() -> Directory {
        Directory::build(vec![SourceTools::grouped(
            "s",
            GroupSpec::new("pay", "Payments"),
            vec![
                ToolDef::new("refund", "Refund a payment"),
                ToolDef::new("charge", "Charge a card"),
            ],
        )])
        .expect("valid")
    }

    #[test]
    fn bm25_never_builds_the_keyword_index_and_keyword_builds_it_once() {
        let d = dir();
        let index = SearchIndex::build(&d);
        let params = Bm25Params::default();
        index.prepare(&d, SearchMethod::Bm25, &params);
        let (hits, _) = index.bm25(&d, &params).search("refund", 0..2, 5);
        assert_eq!(hits.len(), 1);
        assert_eq!(index.exact().matches(&d, "REFUND", 0..2).len(), 1);
        assert!(
            index.keyword.get().is_none(),
            "bm25 built the keyword index"
        );

        index.prepare(&d, SearchMethod::Keyword, &params);
        let first: *const KeywordIndex = index.keyword.get().expect("built");
        assert!(std::ptr::eq(first, index.keyword(&d)));
        assert_eq!(index.keyword(&d).search(&d, "refund", 0..2, 5).total, 1);
    }
}
