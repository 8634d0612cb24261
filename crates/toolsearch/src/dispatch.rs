//! Dispatching calls: argument validation, hooks, the one call path every direct or proxied
//! call takes, and typed local tools. What runs a tool is the [`exec`](crate::exec) contract.

pub(crate) mod call;
pub mod hooks;
pub mod local;
mod validate;

pub use call::CallPath;
pub use hooks::{Approval, CallInfo};
pub use local::Toolset;
pub(crate) use validate::Validators;
