//! Dispatching calls: argument validation, hooks, the one call path every direct or proxied
//! call takes, and typed local tools. What runs a tool is the [`exec`](crate::exec) contract.

mod audit;
pub(crate) mod call;
pub mod hooks;
pub mod local;
mod observe;
mod rate;
mod validate;

pub use audit::{AuditRecord, AuditSink};
pub use call::CallPath;
pub use hooks::{Approval, CallInfo};
pub use local::Toolset;
pub use observe::{CallEvent, Observer, SearchEvent};
pub use rate::{CALLER_PATH, RateLimiter};
pub(crate) use validate::Validators;
