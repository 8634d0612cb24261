//! What a CodeAct run adds to the calls it makes: `run_code` with one `call_tool` against the
//! same `call_tool` made directly (interpreter thread, compile, the host-call bridge, result
//! conversion), a program that chains five calls against five direct calls, and an empty
//! program. The tool is a typed local tool that answers at once, so the difference is the
//! run's own cost. The allocator is the binary's: `SandboxAllocator` over mimalloc.
//!
//! `cargo bench -p toolsearch-codeact --bench run_code`

#[global_allocator]
static GLOBAL: toolsearch_codeact::SandboxAllocator<mimalloc::MiMalloc> =
    toolsearch_codeact::SandboxAllocator(mimalloc::MiMalloc);

use std::sync::{Arc, OnceLock};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use toolsearch::{CodeActSettings, CodeActTools, Engine, GroupSpec, Settings, Toolset};
use toolsearch_codeact::MontyRunner;

#[derive(Deserialize, JsonSchema)]
struct Echo {
    /// A number to send back.
    x: i64,
}

fn engine() -> &'static (Engine, tokio::runtime::Runtime) {
    static E: OnceLock<(Engine, tokio::runtime::Runtime)> = OnceLock::new();
    E.get_or_init(|| {
        let tools = Toolset::new()
            .tool("echo", "Send a number back.", |e: Echo| async move {
                Ok(json!({"x": e.x}))
            })
            .codeact(CodeActTools::All);
        let engine = Engine::builder()
            .settings(Settings::default().with_codeact(CodeActSettings::enabled()))
            .source(tools.into_group("bench", GroupSpec::new("bench", "Benchmark tools")))
            .code_runner(Arc::new(MontyRunner::new()))
            .build()
            .expect("engine");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        (engine, rt)
    })
}

fn handle(name: &str, args: Value) -> bool {
    let (engine, rt) = engine();
    let r = rt.block_on(engine.handle(name, args));
    assert!(!r.is_error, "{r:?}");
    r.is_error
}

const ONE: &str = "r = await call_tool(group='bench', tool='echo', arguments={'x': 1})\nr['structuredContent']['x']";
const FIVE: &str = "x = 1\nfor _ in range(5):\n    r = await call_tool(group='bench', tool='echo', arguments={'x': x})\n    x = r['structuredContent']['x'] + 1\nx";

fn call() -> Value {
    json!({"group": "bench", "tool": "echo", "arguments": {"x": 1}})
}

#[divan::bench]
fn call_tool_direct() -> bool {
    handle("call_tool", call())
}

#[divan::bench]
fn five_call_tools_direct() -> bool {
    (0..5).fold(false, |_, _| handle("call_tool", call()))
}

#[divan::bench]
fn run_code_empty() -> bool {
    handle("run_code", json!({"code": "1"}))
}

#[divan::bench]
fn run_code_one_call() -> bool {
    handle("run_code", json!({"code": ONE}))
}

#[divan::bench]
fn run_code_five_calls() -> bool {
    handle("run_code", json!({"code": FIVE}))
}

fn main() {
    divan::main();
}
