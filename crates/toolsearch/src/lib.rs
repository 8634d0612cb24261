#![doc = include_str!("../README.md")]

pub mod catalog;
pub mod config;
pub mod controls;
pub mod dispatch;
pub mod engine;
pub mod eval;
pub mod page;
mod parallel;
pub mod search;
pub mod skills;
pub mod text;

pub use catalog::{GroupSpec, SourceTools, ToolDef};
pub use config::Settings;
pub use controls::ControlOutput;
pub use dispatch::{CallResult, ExecError, Toolset};
pub use engine::{Engine, EngineBuilder, EngineError};
