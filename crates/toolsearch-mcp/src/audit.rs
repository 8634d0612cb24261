//! The audit log file: one JSON line per tool call, appended to `[audit] file`
//! (`{"ts", "client", "group", "tool", "outcome", "ms"}`) — never argument values, results,
//! tokens or header values, which the records do not even carry.

use parking_lot::Mutex;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

use serde_json::json;
use toolsearch::{AuditRecord, AuditSink};

/// A sink appending each record to `path` (created when missing), one line each.
pub fn file_sink(path: &Path) -> std::io::Result<AuditSink> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let file = OpenOptions::new().create(true).append(true).open(path)?;
    let file: Mutex<File> = Mutex::new(file);
    Ok(AuditSink::new(move |r: &AuditRecord| {
        let line = json!({
            "ts": humantime::format_rfc3339_millis(r.ts).to_string(),
            "client": r.client,
            "group": r.group,
            "tool": r.tool,
            "outcome": r.outcome.as_str(),
            "ms": (r.ms * 1000.0).round() / 1000.0,
        });
        let mut f = file.lock();
        if let Err(e) = writeln!(f, "{line}") {
            tracing::error!(error = %e, "writing the audit log failed");
        }
    }))
}
