//! The embedding cache: one file per model holding a vector per distinct tool text.
//!
//! File layout (little-endian):
//!
//! ```text
//! b"TSEMB001"  u32 dim  u32 id_len  id_len bytes of model id (UTF-8)  u64 count
//! count × ( u64 text hash, dim × f32 )
//! ```
//!
//! A file whose model id or dimension differs from the embedder's, or whose length does not
//! add up, is refused with an error that says to rebuild it; saving writes a temporary file
//! beside it and renames it, so a crash never leaves a torn cache.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap;

const MAGIC: &[u8; 8] = b"TSEMB001";

/// Why a cache file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// Reading or writing failed.
    #[error("embedding cache {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The failure.
        source: io::Error,
    },
    /// The file is not a cache of this model.
    #[error("embedding cache {path}: {why}; rebuild it with `toolsearch index`")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
}

/// Vectors of one model, keyed by [`text_hash`](super::semantic::text_hash).
#[derive(Debug, Clone)]
pub struct EmbeddingCache {
    path: PathBuf,
    model_id: String,
    dim: usize,
    rows: FxHashMap<u64, usize>,
    data: Vec<f32>,
    dirty: bool,
}

impl EmbeddingCache {
    /// The file of `model_id`'s cache under `dir`: a readable stem and a digest of the id.
    pub fn file_in(dir: &Path, model_id: &str) -> PathBuf {
        let stem: String = model_id
            .rsplit(['/', '\\'])
            .next()
            .unwrap_or("model")
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .take(48)
            .collect();
        let digest = super::semantic::text_hash(model_id);
        dir.join(format!("{stem}-{digest:016x}.tsemb"))
    }

    /// An empty cache that will be saved at `path`.
    pub fn new(path: impl Into<PathBuf>, model_id: impl Into<String>, dim: usize) -> Self {
        Self {
            path: path.into(),
            model_id: model_id.into(),
            dim,
            rows: FxHashMap::default(),
            data: Vec::new(),
            dirty: false,
        }
    }

    /// Reads the cache at `path`; `Ok(None)` when there is no such file.
    pub fn open(path: &Path, model_id: &str, dim: usize) -> Result<Option<Self>, CacheError> {
        let bytes = match fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(CacheError::Io {
                    path: path.to_owned(),
                    source,
                });
            }
        };
        let invalid = |why: String| CacheError::Invalid {
            path: path.to_owned(),
            why,
        };
        let mut r = Reader(&bytes);
        if r.take(8) != Some(MAGIC.as_slice()) {
            return Err(invalid("not a toolsearch embedding cache".into()));
        }
        let file_dim = r.u32().ok_or_else(|| invalid("truncated header".into()))? as usize;
        let id_len = r.u32().ok_or_else(|| invalid("truncated header".into()))? as usize;
        let file_id = r
            .take(id_len)
            .and_then(|b| std::str::from_utf8(b).ok())
            .ok_or_else(|| invalid("truncated or non-UTF-8 model id".into()))?;
        if file_id != model_id {
            return Err(invalid(format!(
                "it holds vectors of model {file_id:?}, not {model_id:?}"
            )));
        }
        if file_dim != dim {
            return Err(invalid(format!(
                "it holds {file_dim}-dimensional vectors, the model gives {dim}"
            )));
        }
        let count = r.u64().ok_or_else(|| invalid("truncated header".into()))?;
        let row_bytes = 8 + 4 * dim;
        if (r.0.len() as u64) != count.saturating_mul(row_bytes as u64) {
            return Err(invalid(format!(
                "{} bytes of rows where {count} rows need {}",
                r.0.len(),
                count.saturating_mul(row_bytes as u64)
            )));
        }
        let mut cache = Self::new(path, model_id, dim);
        cache.data.reserve(count as usize * dim);
        for row in r.0.chunks_exact(row_bytes) {
            let (hash, floats) = row.split_at(8);
            let hash = u64::from_le_bytes(hash.try_into().unwrap_or_default());
            let at = cache.data.len();
            cache.data.extend(
                floats
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes(b.try_into().unwrap_or_default())),
            );
            if cache.data[at..].iter().any(|x| !x.is_finite()) {
                return Err(invalid(format!("row {hash:016x} holds a non-finite value")));
            }
            cache.rows.insert(hash, at / dim);
        }
        Ok(Some(cache))
    }

    /// Where it is saved.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The model id.
    pub fn model_id(&self) -> &str {
        &self.model_id
    }

    /// Vector length.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of vectors.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether it holds no vector.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The vector of a text hash.
    pub fn get(&self, hash: u64) -> Option<&[f32]> {
        self.rows
            .get(&hash)
            .map(|&row| &self.data[row * self.dim..(row + 1) * self.dim])
    }

    /// Adds (or replaces) the vector of a text hash.
    ///
    /// # Panics
    /// When `vector` does not have the cache's dimension.
    pub fn insert(&mut self, hash: u64, vector: &[f32]) {
        assert_eq!(vector.len(), self.dim, "vector dimension");
        self.dirty = true;
        match self.rows.get(&hash) {
            Some(&row) => self.data[row * self.dim..(row + 1) * self.dim].copy_from_slice(vector),
            None => {
                self.rows.insert(hash, self.data.len() / self.dim);
                self.data.extend_from_slice(vector);
            }
        }
    }

    /// Whether there are changes not yet saved.
    pub fn is_dirty(&self) -> bool {
        self.dirty
    }

    /// Writes the cache (creating its folder), atomically.
    pub fn save(&mut self) -> Result<(), CacheError> {
        let io = |source| CacheError::Io {
            path: self.path.clone(),
            source,
        };
        if let Some(parent) = self.path.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs::create_dir_all(parent).map_err(io)?;
        }
        let mut buf =
            Vec::with_capacity(32 + self.model_id.len() + self.rows.len() * (8 + 4 * self.dim));
        buf.extend_from_slice(MAGIC);
        buf.extend_from_slice(&(self.dim as u32).to_le_bytes());
        buf.extend_from_slice(&(self.model_id.len() as u32).to_le_bytes());
        buf.extend_from_slice(self.model_id.as_bytes());
        buf.extend_from_slice(&(self.rows.len() as u64).to_le_bytes());
        let mut rows: Vec<(u64, usize)> = self.rows.iter().map(|(h, r)| (*h, *r)).collect();
        rows.sort_unstable();
        for (hash, row) in rows {
            buf.extend_from_slice(&hash.to_le_bytes());
            for x in &self.data[row * self.dim..(row + 1) * self.dim] {
                buf.extend_from_slice(&x.to_le_bytes());
            }
        }
        let tmp = self
            .path
            .with_extension(format!("tmp{}", std::process::id()));
        let written = fs::File::create(&tmp)
            .and_then(|mut f| f.write_all(&buf).and_then(|()| f.sync_all()))
            .and_then(|()| fs::rename(&tmp, &self.path));
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(io(e));
        }
        self.dirty = false;
        Ok(())
    }
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }
    fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> Option<u64> {
        self.take(8)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_le_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("toolsearch-cache-{}-{name}", std::process::id()))
    }

    #[test]
    fn round_trips_and_refuses_other_models_and_damage() {
        let dir = tmp("rt");
        let path = EmbeddingCache::file_in(&dir, "models/all-MiniLM-L6-v2@abc");
        assert!(
            path.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("all-MiniLM-L6-v2_abc-"))
        );
        assert!(EmbeddingCache::open(&path, "m", 3).expect("ok").is_none());
        let mut c = EmbeddingCache::new(&path, "m", 3);
        c.insert(7, &[1.0, 2.0, 3.0]);
        c.insert(9, &[0.5, 0.0, -1.0]);
        c.insert(7, &[4.0, 5.0, 6.0]);
        assert!(c.is_dirty());
        c.save().expect("ok");
        assert!(!c.is_dirty());
        let back = EmbeddingCache::open(&path, "m", 3)
            .expect("ok")
            .expect("ok");
        assert_eq!(back.len(), 2);
        assert_eq!(back.get(7), Some([4.0, 5.0, 6.0].as_slice()));
        assert_eq!(back.get(9), Some([0.5, 0.0, -1.0].as_slice()));
        assert_eq!(back.get(8), None);

        let other = EmbeddingCache::open(&path, "other", 3)
            .expect_err("an error")
            .to_string();
        assert!(
            other.contains("not \"other\"") && other.contains("toolsearch index"),
            "{other}"
        );
        let dim = EmbeddingCache::open(&path, "m", 4)
            .expect_err("an error")
            .to_string();
        assert!(dim.contains("3-dimensional"), "{dim}");

        let mut bytes = fs::read(&path).expect("ok");
        bytes.pop();
        fs::write(&path, &bytes).expect("ok");
        let torn = EmbeddingCache::open(&path, "m", 3)
            .expect_err("an error")
            .to_string();
        assert!(torn.contains("rows need"), "{torn}");
        fs::write(&path, b"garbage").expect("ok");
        let junk = EmbeddingCache::open(&path, "m", 3)
            .expect_err("an error")
            .to_string();
        assert!(junk.contains("not a toolsearch embedding cache"), "{junk}");
        let _ = fs::remove_dir_all(&dir);
    }
}
