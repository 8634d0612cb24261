//! Integration tests of the engine, one binary (shared helpers in `common`).

mod access;
mod bm25;
mod calls;
mod capabilities;
mod common;
mod external;
mod golden;
#[path = "../../../../tests/support/golden.rs"]
mod golden_files;
mod learning;
mod policy;
mod ranking;
mod seed;
mod semantic;
mod unavailable;
mod vendor;
