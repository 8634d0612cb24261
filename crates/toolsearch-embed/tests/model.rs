//! The local model, for real: all-MiniLM-L6-v2 as `.ci/run` provides it (`scripts/fetch-model`).
//! Without the model these tests say so and pass, unless `TOOLSEARCH_REQUIRE_MODEL=1` (set by
//! `.ci/run`), where its absence fails them.

use std::path::PathBuf;

use toolsearch::search::{Embedder, dot, normalize};
use toolsearch_embed::LocalModel;

fn model_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("TOOLSEARCH_MODEL")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/models/all-MiniLM-L6-v2")
        });
    if dir.join("model.safetensors").is_file() {
        return Some(dir);
    }
    assert!(
        std::env::var("TOOLSEARCH_REQUIRE_MODEL").as_deref() != Ok("1"),
        "the model is required but {} has none (run scripts/fetch-model)",
        dir.display()
    );
    eprintln!(
        "skipped: no model at {} (run scripts/fetch-model)",
        dir.display()
    );
    None
}

fn unit(mut v: Vec<f32>) -> Vec<f32> {
    normalize(&mut v);
    v
}

#[test]
fn embeds_meaning_and_batches_agree_with_single_texts() {
    let Some(dir) = model_dir() else { return };
    let m = LocalModel::load(&dir).expect("model");
    assert_eq!(m.dim(), 384);
    assert!(
        m.model_id().starts_with("local:bert-384x6@"),
        "{}",
        m.model_id()
    );
    let texts = [
        "read file: Read the contents of a file from disk.",
        "open a document and show me what it says",
        "Weather forecast for a city, for the next days, with rain and temperature.",
        "hi",
    ];
    let batch = m.embed(&texts).expect("embed");
    assert_eq!(batch.len(), 4);
    // A batch (one text per core) and each text alone (its products over both cores) agree.
    for (t, b) in texts.iter().zip(&batch) {
        let single = m.embed(&[t]).expect("embed").remove(0);
        let cos = dot(&unit(single), &unit(b.clone()));
        assert!(cos > 0.9999, "{t:?}: batch vs single cosine {cos}");
    }
    let v: Vec<Vec<f32>> = batch.into_iter().map(unit).collect();
    let related = dot(&v[0], &v[1]);
    let unrelated = dot(&v[1], &v[2]);
    assert!(
        related > unrelated + 0.15,
        "file reading ~ open a document ({related}) should beat ~ weather ({unrelated})"
    );
    assert!(m.embed(&[]).expect("empty").is_empty());
    // Longer than the model's positions: truncated, not an error.
    let long = "word ".repeat(2000);
    assert_eq!(m.embed(&[&long]).expect("long")[0].len(), 384);
    // The id is the weights', not the folder's: the same model loads to the same id.
    assert_eq!(
        LocalModel::load(&dir).expect("again").model_id(),
        m.model_id()
    );
}

#[test]
fn a_bad_model_directory_is_a_clear_error() {
    let missing = LocalModel::load("/nonexistent/model")
        .expect_err("an error")
        .to_string();
    assert!(
        missing.contains("/nonexistent/model/config.json"),
        "{missing}"
    );
    let dir = std::env::temp_dir().join(format!("toolsearch-badmodel-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(dir.join("config.json"), "{\"hidden_size\": 3}").expect("write");
    let bad = LocalModel::load(&dir).expect_err("an error").to_string();
    assert!(bad.contains("not a BERT config"), "{bad}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `fixtures/reference_vectors.json` holds vectors candle-transformers 0.9.2's `BertModel`
/// (mean pooled, inputs cut at 128 tokens) gave for five texts — short, long, one letter, and
/// one past 128 tokens. Our own forward pass must give the same vectors: not just the same
/// direction but the same values, to float rounding.
#[test]
fn vectors_match_the_candle_reference() {
    let Some(dir) = model_dir() else { return };
    let fixture: serde_json::Value =
        serde_json::from_str(include_str!("fixtures/reference_vectors.json")).expect("fixture");
    let texts: Vec<&str> = fixture["texts"]
        .as_array()
        .expect("texts")
        .iter()
        .map(|t| t.as_str().expect("text"))
        .collect();
    let want: Vec<Vec<f32>> = serde_json::from_value(fixture["vectors"].clone()).expect("vectors");
    let m = LocalModel::load_with(&dir, Some(128)).expect("model");
    // Batched (one text per core) and one by one (a query: products split over cores).
    let batch = m.embed(&texts).expect("embed");
    for (i, t) in texts.iter().enumerate() {
        let single = m.embed(&[t]).expect("embed").remove(0);
        for got in [&batch[i], &single] {
            assert_eq!(got.len(), want[i].len());
            let worst = got
                .iter()
                .zip(&want[i])
                .map(|(g, w)| (g - w).abs())
                .fold(0.0f32, f32::max);
            assert!(worst < 2e-4, "{t:?}: largest difference {worst}");
            let cos = dot(&unit(got.clone()), &unit(want[i].clone()));
            assert!(cos > 0.99999, "{t:?}: cosine {cos}");
        }
    }
}
