//! Tracing: a span per call and per dispatch, argument values never logged at info level.
//!
//! Its own test binary: tracing caches each callsite's interest process-wide, so other tests'
//! threads hitting the same callsites without a subscriber would race with this one's.

use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use toolsearch::{Engine, GroupSpec, Toolset};

#[derive(Deserialize, JsonSchema)]
struct Lookup {
    customer_id: u64,
}

#[tokio::test]
async fn tracing_spans_name_the_call_but_never_log_argument_values_at_info() {
    use std::io::Write;
    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);
    impl Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("lock").extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let buf = Buf::default();
    let writer = buf.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::INFO)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::set_global_default(subscriber)
        .expect("the only subscriber of this binary");
    let crm = Toolset::new().tool(
        "customer_name",
        "Look up a customer's name.",
        |a: Lookup| async move { Ok(json!({"name": format!("Customer {}", a.customer_id)})) },
    );
    let e = Engine::builder()
        .source(crm.into_group("crm-svc", GroupSpec::new("crm", "Customer records")))
        .build()
        .expect("valid");
    let _ = e
        .handle(
            "call_tool",
            json!({"group": "crm", "tool": "customer_name", "arguments": {"customer_id": 987_654_321}}),
        )
        .await;
    let _ = e
        .handle("discover_tools", json!({"query": "customer"}))
        .await;
    let log = String::from_utf8(buf.0.lock().expect("lock").clone()).expect("utf8");
    assert!(
        log.contains("dispatch") && log.contains("customer_name") && log.contains("crm-svc"),
        "{log}"
    );
    assert!(
        log.contains("tool_call") && log.contains("discover_tools"),
        "{log}"
    );
    assert!(
        log.contains("duration_us") && log.contains("outcome=\"ok\""),
        "{log}"
    );
    assert!(
        !log.contains("987654321"),
        "argument values leaked into the log: {log}"
    );
}
