//! What the examples share: the workspace's root, and settings whose semantic search uses the
//! model in `$TOOLSEARCH_MODEL`, else `target/models/all-MiniLM-L6-v2`.

use std::path::PathBuf;

use toolsearch::Settings;

/// The workspace's root folder.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Default settings, with the model to embed with.
pub fn settings() -> Settings {
    let mut settings = Settings::default();
    settings.semantic.model = Some(
        std::env::var_os("TOOLSEARCH_MODEL")
            .map(PathBuf::from)
            .unwrap_or_else(|| root().join("target/models/all-MiniLM-L6-v2")),
    );
    settings
}
