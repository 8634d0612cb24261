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
//   learn                 — what use taught: learned queries per policy class and tool, their file
//   search                — indexes over a corpus and the one ranking entry point
//   eval                  — retrieval quality over labelled queries
//   dispatch              — argument validation, hooks, the one call path, typed local tools
//   controls              — the model-facing controls and their answers
//   vendor                — the Anthropic and OpenAI tool-search formats: names, export, replies
//   engine                — the engine snapshot, its builder and the call router

mod catalog;
mod codeact;
mod config;
mod controls;
mod dispatch;
mod engine;
mod error;
pub mod eval;
mod exec;
pub mod learn;
mod outcome;
mod page;
mod parallel;
mod policy;
mod problem;
pub mod search;
mod skills;
mod text;
pub mod vendor;

// The catalog: tools, groups, sources, catalog files, the validated directory.
pub use catalog::name::{group_description_problem, group_name_problem};
pub use catalog::schema_text::SchemaText;
pub use catalog::{
    CatalogFile, CatalogFileError, CodeActTools, DirectEntry, Directory, DirectoryError,
    GroupEntry, GroupSpec, NEEDS_LOGIN, Presentation, Schema, SourceTools, ToolDef, ToolEntry,
    ToolId, View, Visibility, canonical_name, catalog_json, load_catalog_file, login_hint,
    parse_catalog,
};
// Settings and the access rules the engine applies.
pub use config::{
    BM25_FIELDS, Bm25Params, CodeActSettings, ControlNames, EmbeddingSettings, Fusion,
    HybridParams, MAX_RESULTS_RANGE, MAX_SEARCH_BYTES_RANGE, PolicyRule, RateLimit, SearchMethod,
    Settings, Surface, default_cache_dir, glob_problem, outside, within,
};
// The engine, its answers and how a call ended.
pub use controls::{ControlOutput, Searched, ToolDefinition};
pub use engine::{
    DeferredError, Engine, EngineBuilder, EngineError, Learning, Reply, Snapshot, VendorReply,
};
pub use error::{ErrorCode, ToolError};
pub use outcome::Outcome;
pub use problem::{Problem, Problems};
// Executing tools: the executor contract, sessions, approvals, hooks, records, local tools.
pub use dispatch::{
    Approval, AuditRecord, AuditSink, CALLER_PATH, CallEvent, CallInfo, Observer, RateLimiter,
    SearchEvent, Toolset,
};
pub use exec::{
    ApprovalAnswer, ApprovalRequest, Approver, BoxFuture, CallResult, ExecError, Executor, Session,
    with_approver,
};
// CodeAct: what runs a program and how it calls back.
pub use codeact::{
    CodeError, CodeJob, CodeLimits, CodeOutcome, CodeRunner, Host, HostReply, MAX_CODE_CHARS,
    MAX_STDOUT_BYTES, RunFuture,
};
// Per-caller catalogs and Agent Skills.
pub use policy::{CLIENT_PATH, CallerClass, Policy, ToolGlobs};
pub use skills::{Skill, Skills, SkillsError};
pub use text::words;
// The search entry point (its building blocks are in [`search`]).
pub use search::{Query, Ranking, SearchIndex, Searcher};
