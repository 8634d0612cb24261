//! The indexes of one corpus snapshot: the keyword index (built at once), and the BM25 index
//! and the vectors (each built on first use and kept, like the snapshot, until it is replaced).

use parking_lot::Mutex;
use std::sync::Arc;

use super::SearchError;
use super::bm25::Bm25Index;
use super::corpus::Corpus;
use super::keyword::KeywordIndex;
use super::semantic::{Embeddings, VectorIndex};
use crate::config::Bm25Params;

/// Every index of one corpus snapshot. Built over a corpus, used only with that corpus.
#[derive(Debug)]
pub struct SearchIndex {
    keyword: KeywordIndex,
    bm25: Mutex<Option<Arc<Bm25Index>>>,
    vectors: Mutex<Option<Arc<VectorIndex>>>,
}

impl SearchIndex {
    /// The indexes of `corpus`; the keyword index is built now.
    pub fn build(corpus: &(impl Corpus + ?Sized)) -> Self {
        Self {
            keyword: KeywordIndex::build(corpus),
            bm25: Mutex::new(None),
            vectors: Mutex::new(None),
        }
    }

    /// The keyword index.
    pub fn keyword(&self) -> &KeywordIndex {
        &self.keyword
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
