//! Integration tests of the engine, one binary (shared helpers in `common`).

mod bm25;
mod calls;
mod capabilities;
mod common;
mod golden;
mod ranking;
mod seed;
mod semantic;
