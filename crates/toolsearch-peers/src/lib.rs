//! Nothing here: this crate holds `benches/ratel.rs`, which runs the peer Ratel
//! (`ratel-ai-core`) and toolsearch on the same catalogs and queries in one run.
