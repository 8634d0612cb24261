//! Typed local tools: a Rust function whose input type derives `JsonSchema` (the schema the
//! model sees) and `Deserialize` (how validated arguments reach it).
//!
//! ```
//! use schemars::JsonSchema;
//! use serde::Deserialize;
//! use toolsearch::Toolset;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Lookup {
//!     /// Numeric customer ID.
//!     customer_id: u64,
//! }
//!
//! let crm = Toolset::new().tool("customer_name", "Look up a customer's name.", |a: Lookup| async move {
//!     Ok(format!("customer {}", a.customer_id))
//! });
//! assert_eq!(crm.definitions()[0].name, "customer_name");
//! ```

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use rustc_hash::FxHashMap;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::catalog::{CodeActTools, GroupSpec, SourceTools, ToolDef};
use crate::exec::{BoxFuture, CallResult, ExecError, Executor};

type Handler =
    Arc<dyn Fn(Map<String, Value>) -> BoxFuture<Result<CallResult, ExecError>> + Send + Sync>;

/// A set of typed local tools; becomes a source with [`Toolset::into_group`] or
/// [`Toolset::into_direct`].
#[derive(Clone, Default)]
pub struct Toolset {
    defs: Vec<ToolDef>,
    handlers: FxHashMap<String, Handler>,
}

impl fmt::Debug for Toolset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Toolset")
            .field(
                "tools",
                &self.defs.iter().map(|d| &d.name).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// The JSON Schema of `A`, as an object, without the `$schema` marker.
pub fn schema_of<A: JsonSchema>() -> Map<String, Value> {
    let schema = schemars::schema_for!(A);
    match schema.to_value() {
        Value::Object(mut m) => {
            m.remove("$schema");
            m
        }
        _ => crate::catalog::empty_object_schema(),
    }
}

impl Toolset {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool: `f` receives the arguments deserialized into `A` and returns a value that
    /// becomes the structured result (and its JSON text), or an [`ExecError`] (`"text".into()`
    /// gives a plain failure). Adding a name twice replaces the first.
    pub fn tool<A, R, F, Fut>(mut self, name: &str, description: &str, f: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + 'static,
        R: Serialize + 'static,
        F: Fn(A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ExecError>> + Send + 'static,
    {
        let f = Arc::new(f);
        let handler: Handler = Arc::new(move |arguments: Map<String, Value>| {
            let f = f.clone();
            Box::pin(async move {
                let input: A = serde_json::from_value(Value::Object(arguments))
                    .map_err(|e| ExecError::InvalidArguments(e.to_string()))?;
                let out = f(input).await?;
                let value = serde_json::to_value(out)
                    .map_err(|e| ExecError::Failed(format!("result is not JSON: {e}")))?;
                Ok(CallResult::structured(value))
            })
        });
        self.defs.retain(|d| d.name != name);
        self.defs
            .push(ToolDef::new(name, description).with_input_schema(schema_of::<A>()));
        self.handlers.insert(name.to_owned(), handler);
        self
    }

    /// Adds an external tool: the host runs it, not the engine. A call validates the
    /// arguments against `schema` and applies policy, approval and usage as for any tool, then
    /// ends with a deferred request ([`Outcome::Deferred`](crate::Outcome::Deferred)) that the
    /// host completes with [`Engine::complete`](crate::Engine::complete) or
    /// [`Engine::fail`](crate::Engine::fail). Only a grouped source can hold one
    /// ([`Toolset::into_group`]); CodeAct programs cannot call it. Adding a name twice
    /// replaces the first.
    pub fn external(mut self, name: &str, description: &str, schema: Map<String, Value>) -> Self {
        self.defs.retain(|d| d.name != name);
        self.handlers.remove(name);
        self.defs.push(
            ToolDef::new(name, description)
                .with_input_schema(schema)
                .with_external(true),
        );
        self
    }

    /// Lets CodeAct programs call the tools `choice` names (`CodeActTools::Only` for a list,
    /// `All` for every tool added so far); the others stay callable through `call_tool` only.
    pub fn codeact(mut self, choice: CodeActTools) -> Self {
        for d in &mut self.defs {
            d.codeact |= choice.includes(&d.name);
        }
        self
    }

    /// The tools' definitions.
    pub fn definitions(&self) -> &[ToolDef] {
        &self.defs
    }

    /// The set as a source whose tools live in `group`.
    pub fn into_group(self, source: &str, group: GroupSpec) -> SourceTools {
        let defs = self.defs.clone();
        SourceTools::grouped(source, group, defs).with_executor(Arc::new(self))
    }

    /// The set as a source of direct tools.
    pub fn into_direct(self, source: &str) -> SourceTools {
        let defs = self.defs.clone();
        SourceTools::direct(source, defs).with_executor(Arc::new(self))
    }
}

impl Executor for Toolset {
    fn call(
        &self,
        tool: &str,
        arguments: Map<String, Value>,
    ) -> BoxFuture<Result<CallResult, ExecError>> {
        match self.handlers.get(tool) {
            Some(h) => h(arguments),
            None => {
                let msg = format!("this toolset has no tool {tool:?}");
                Box::pin(async move { Err(ExecError::Unavailable(msg)) })
            }
        }
    }
}
