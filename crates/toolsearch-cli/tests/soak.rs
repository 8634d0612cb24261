//! The load, fault and fuzz soak (`scripts/soak.py`) at a small size against this build: two
//! tenants' sessions at once through an upstream that echoes its tenant header (no answer for
//! the other tenant), another caller on a session (refused), the upstream killed and frozen
//! under load (only `unavailable` and `timeout` answers, every session recovers), mutated
//! JSON-RPC requests (no 5xx, JSON-RPC errors) and stdio lines (alive, every ping answered),
//! open files exhausted (quiet, answering again), and no token, key, argument or result in its
//! `trace` logs. The full size is run by hand (BENCHMARKS.md).

mod common;

use common::{python, root};

#[test]
fn a_small_soak_passes_every_check() {
    let out = std::process::Command::new(python("pyenv"))
        .arg(root().join("scripts/soak.py"))
        .args(["--binary", env!("CARGO_BIN_EXE_toolsearch")])
        .args(["--sessions", "60", "--calls", "2", "--fault-seconds", "16"])
        .args([
            "--call-timeout-ms",
            "1000",
            "--mutations",
            "1000",
            "--lines",
            "1000",
        ])
        .output()
        .expect("run scripts/soak.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("every check passed"),
        "{stdout}\n{stderr}"
    );
    // The frozen upstream outlived the call timeout: the callers were told so.
    assert!(stdout.contains("'timeout'"), "{stdout}");
}
