//! Integration tests of the engine, one binary (shared helpers in `common`).

mod common;
mod golden;
mod ranking;
mod seed;
