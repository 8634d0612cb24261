//! The embedding cache: one file per model holding a vector per distinct tool text, normalised
//! and quantized to signed bytes ([`int8`]).
//!
//! File layout (little-endian):
//!
//! ```text
//! b"TSEMB002"  u32 dim  u32 id_len  id_len bytes of model id (UTF-8)  u64 count
//! count × ( u64 text hash, f32 scale, dim × i8 )
//! ```
//!
//! A `TSEMB001` file (rows of `dim × f32`, written before vectors were quantized) is read and
//! quantized; the next save writes it in the new layout.
//!
//! A file whose model id or dimension differs from the embedder's, or whose length does not
//! add up, is refused with an error that says to rebuild it; saving writes a temporary file
//! beside it and renames it, so a crash never leaves a torn cache.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap;

use super::int8;
use super::semantic::normalize;

const MAGIC: &[u8; 8] = b"TSEMB002";
const MAGIC_F32: &[u8; 8] = b"TSEMB001";

/// Why a cache file could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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

/// Vectors of one model, keyed by the FNV-1a hash of its text.
#[derive(Debug, Clone)]
pub struct EmbeddingCache {
    path: PathBuf,
    model_id: String,
    dim: usize,
    rows: FxHashMap<u64, usize>,
    data: Vec<i8>,
    scales: Vec<f32>,
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
            scales: Vec::new(),
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
        let floats = match r.take(8) {
            Some(m) if m == MAGIC.as_slice() => false,
            Some(m) if m == MAGIC_F32.as_slice() => true,
            _ => return Err(invalid("not a toolsearch embedding cache".into())),
        };
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
        let row_bytes = if floats { 8 + 4 * dim } else { 12 + dim };
        if (r.0.len() as u64) != count.saturating_mul(row_bytes as u64) {
            return Err(invalid(format!(
                "{} bytes of rows where {count} rows need {}",
                r.0.len(),
                count.saturating_mul(row_bytes as u64)
            )));
        }
        let mut cache = Self::new(path, model_id, dim);
        cache.data.reserve(count as usize * dim);
        cache.scales.reserve(count as usize);
        let mut row_floats = Vec::with_capacity(dim);
        for row in r.0.chunks_exact(row_bytes) {
            let (hash, rest) = row.split_at(8);
            let hash = u64::from_le_bytes(hash.try_into().unwrap_or_default());
            let le = |b: &[u8]| f32::from_le_bytes(b.try_into().unwrap_or_default());
            if floats {
                row_floats.clear();
                row_floats.extend(rest.chunks_exact(4).map(le));
                if row_floats.iter().any(|x| !x.is_finite()) {
                    return Err(invalid(format!("row {hash:016x} holds a non-finite value")));
                }
                cache.insert(hash, &row_floats);
                continue;
            }
            let (scale, bytes) = rest.split_at(4);
            let scale = le(scale);
            if !(scale.is_finite() && scale >= 0.0) {
                return Err(invalid(format!("row {hash:016x} has the scale {scale}")));
            }
            cache.rows.insert(hash, cache.scales.len());
            cache.scales.push(scale);
            cache.data.extend(bytes.iter().map(|&b| b as i8));
        }
        // A file of the old layout is written anew at the next save.
        cache.dirty = floats;
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

    /// The quantized unit vector of a text hash, with its scale.
    pub fn get(&self, hash: u64) -> Option<(&[i8], f32)> {
        self.rows.get(&hash).map(|&row| {
            (
                &self.data[row * self.dim..(row + 1) * self.dim],
                self.scales[row],
            )
        })
    }

    /// Adds (or replaces) the vector of a text hash; it is kept normalised and quantized.
    ///
    /// # Panics
    /// When `vector` does not have the cache's dimension.
    pub fn insert(&mut self, hash: u64, vector: &[f32]) {
        assert_eq!(vector.len(), self.dim, "vector dimension");
        self.dirty = true;
        let mut unit = vector.to_vec();
        normalize(&mut unit);
        let mut q = Vec::with_capacity(self.dim);
        let scale = int8::quantize(&unit, &mut q);
        match self.rows.get(&hash) {
            Some(&row) => {
                self.data[row * self.dim..(row + 1) * self.dim].copy_from_slice(&q);
                self.scales[row] = scale;
            }
            None => {
                self.rows.insert(hash, self.scales.len());
                self.data.extend_from_slice(&q);
                self.scales.push(scale);
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
            Vec::with_capacity(32 + self.model_id.len() + self.rows.len() * (12 + self.dim));
        buf.extend_from_slice(MAGIC);
        buf.extend_from_slice(&(self.dim as u32).to_le_bytes());
        buf.extend_from_slice(&(self.model_id.len() as u32).to_le_bytes());
        buf.extend_from_slice(self.model_id.as_bytes());
        buf.extend_from_slice(&(self.rows.len() as u64).to_le_bytes());
        let mut rows: Vec<(u64, usize)> = self.rows.iter().map(|(h, r)| (*h, *r)).collect();
        rows.sort_unstable();
        for (hash, row) in rows {
            buf.extend_from_slice(&hash.to_le_bytes());
            buf.extend_from_slice(&self.scales[row].to_le_bytes());
            buf.extend(
                self.data[row * self.dim..(row + 1) * self.dim]
                    .iter()
                    .map(|&b| b as u8),
            );
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
        let unit = |v: [f32; 3]| {
            let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.map(|x| x / n)
        };
        for (hash, v) in [(7, [4.0, 5.0, 6.0]), (9, [0.5, 0.0, -1.0])] {
            let (q, scale) = back.get(hash).expect("stored");
            assert_eq!(Some((q, scale)), c.get(hash), "saved as it was held");
            let back = int8::dequantize(q, scale);
            assert!(
                back.iter()
                    .zip(unit(v))
                    .all(|(x, y)| (x - y).abs() <= scale / 2.0 + 1e-6),
                "{back:?} vs {v:?}"
            );
        }
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

    #[test]
    fn a_cache_of_float_rows_is_read_quantized_and_saved_anew() {
        let dir = tmp("f32");
        fs::create_dir_all(&dir).expect("ok");
        let path = dir.join("old.tsemb");
        let mut old = Vec::new();
        old.extend_from_slice(MAGIC_F32);
        old.extend_from_slice(&2u32.to_le_bytes());
        old.extend_from_slice(&1u32.to_le_bytes());
        old.extend_from_slice(b"m");
        old.extend_from_slice(&1u64.to_le_bytes());
        old.extend_from_slice(&5u64.to_le_bytes());
        for x in [3.0f32, 4.0] {
            old.extend_from_slice(&x.to_le_bytes());
        }
        fs::write(&path, &old).expect("ok");
        let mut c = EmbeddingCache::open(&path, "m", 2)
            .expect("ok")
            .expect("ok");
        let (q, scale) = c.get(5).expect("row");
        let v = int8::dequantize(q, scale);
        assert!(
            (v[0] - 0.6).abs() < 0.01 && (v[1] - 0.8).abs() < 0.01,
            "{v:?}"
        );
        assert!(c.is_dirty(), "an old layout is written anew");
        c.save().expect("ok");
        assert_eq!(&fs::read(&path).expect("ok")[..8], MAGIC);
        let again = EmbeddingCache::open(&path, "m", 2)
            .expect("ok")
            .expect("ok");
        assert_eq!(again.get(5), c.get(5));
        old.truncate(old.len() - 4);
        old.extend_from_slice(&f32::NAN.to_le_bytes());
        fs::write(&path, &old).expect("ok");
        let nan = EmbeddingCache::open(&path, "m", 2)
            .expect_err("refused")
            .to_string();
        assert!(nan.contains("non-finite"), "{nan}");
        let _ = fs::remove_dir_all(&dir);
    }
}
