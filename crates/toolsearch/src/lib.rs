#![doc = include_str!("../README.md")]
#![warn(missing_docs)]
#![warn(clippy::exhaustive_structs, clippy::exhaustive_enums)]
// Layers, bottom to top; each module imports only the ones above it in this list
// (docs/architecture.md; `tests/layers.rs` checks it).
//   text, page, parallel  — text and paging helpers
//   problem               — what is wrong with an input and where
//   error                 — the model-facing error and its codes
//   outcome               — how a call ended: ok, a tool's error, or an error code
//   exec                  — the execution contract: Executor, CallResult, ExecError, Session
//   codeact               — the CodeAct contract: CodeRunner, CodeJob, Host, CodeOutcome
//   catalog               — tools, groups, names, catalog files, the directory snapshot
//   skills                — the skills catalog (Agent Skills folders)
//   config                — settings and the gateway config file, as plain data
//   policy                — per-caller catalogs: which rules apply, what they let a caller see
//   search                — indexes over a corpus and the one ranking entry point
//   eval                  — retrieval quality over labelled queries
//   dispatch              — argument validation, hooks, the one call path, typed local tools
//   controls              — the model-facing controls and their answers
//   vendor                — the Anthropic and OpenAI tool-search formats: names, export, replies
//   engine                — the engine snapshot, its builder and the call router

pub mod catalog;
pub mod codeact;
pub mod config;
mod controls;
pub mod dispatch;
pub mod engine;
pub mod error;
pub mod eval;
pub mod exec;
mod outcome;
mod page;
mod parallel;
pub mod policy;
mod problem;
pub mod search;
pub mod skills;
pub mod text;
pub mod vendor;

pub use catalog::{Directory, GroupSpec, SourceTools, ToolDef};
pub use config::{SearchMethod, Settings};
pub use controls::{ControlOutput, Searched, ToolDefinition};
pub use dispatch::Toolset;
pub use engine::{Engine, EngineBuilder, EngineError, Snapshot, VendorReply};
pub use error::{ErrorCode, ToolError};
pub use exec::{CallResult, ExecError, Executor, Session};
pub use outcome::Outcome;
pub use problem::{Problem, Problems};
pub use search::{Query, Ranking, SearchIndex, Searcher};
