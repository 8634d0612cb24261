//! Helpers shared by the CLI's gateway test binaries.
#![allow(dead_code)] // each test binary uses its own part

use std::path::PathBuf;

/// The repository's root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The embedding model's folder (`$TOOLSEARCH_MODEL`, else the one `scripts/fetch-model`
/// writes), when the model is there; its absence fails under `TOOLSEARCH_REQUIRE_MODEL=1` (as
/// `.ci/run` sets) and is otherwise a skip, said on stderr.
pub fn model_dir() -> Option<String> {
    let dir = std::env::var_os("TOOLSEARCH_MODEL")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/models/all-MiniLM-L6-v2"));
    if dir.join("model.safetensors").is_file() {
        return Some(dir.display().to_string());
    }
    assert!(
        std::env::var("TOOLSEARCH_REQUIRE_MODEL").as_deref() != Ok("1"),
        "the model is required but {} has none",
        dir.display()
    );
    eprintln!(
        "skipped: no model at {} (run scripts/fetch-model)",
        dir.display()
    );
    None
}

/// A two-worker Tokio runtime for a test's clients and in-process upstreams.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// A fresh folder for one test.
pub fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("toolsearch-gw-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// The entry point of an official MCP reference server (`everything`, `filesystem`,
/// `memory`), installed by `.ci/run` (`npm ci` in tests/mcp-servers).
#[allow(dead_code)] // not every test binary that shares this module uses it
pub fn reference_server_js(name: &str) -> String {
    let p = root().join(format!(
        "tests/mcp-servers/node_modules/@modelcontextprotocol/server-{name}/dist/index.js"
    ));
    assert!(
        p.exists(),
        "{} is missing: run `npm ci` in tests/mcp-servers (.ci/run does)",
        p.display()
    );
    p.display().to_string()
}

/// The `[[source]]` of server-everything over stdio, in group `everything`.
#[allow(dead_code)] // not every test binary that shares this module uses it
pub fn everything_source() -> String {
    format!(
        "[[source]]\nname = \"everything\"\ncommand = \"node\"\nargs = [{:?}]\ngroup = \"everything\"\ndescription = \"The MCP reference test server\"\n\n",
        reference_server_js("everything")
    )
}

/// `tests/mcp-servers/misbehaving-server.mjs` as a `[[source]]` in `mode` ("" behaves).
pub fn misbehaving_source(name: &str, mode: &str) -> String {
    let js = root().join("tests/mcp-servers/misbehaving-server.mjs");
    format!(
        "[[source]]\nname = {name:?}\ncommand = \"node\"\nargs = [{:?}]\nenv = {{ MISBEHAVE = {mode:?} }}\ngroup = {name:?}\ndescription = \"A test server that misbehaves on request\"\n\n",
        js.display().to_string()
    )
}

/// The Python of a venv `.ci/run` makes: `pyenv` (the newest SDK, tests/python/requirements.txt)
/// or `pyenv-1x` (the last 1.x release, requirements-1x.txt).
pub fn python(venv: &str) -> PathBuf {
    let python = root().join(format!("target/{venv}/bin/python"));
    assert!(
        python.exists(),
        "{} is missing: .ci/run creates it (python3 -m venv target/{venv} && target/{venv}/bin/pip install -r tests/python/requirements*.txt)",
        python.display()
    );
    python
}

/// Runs `tests/python/SCRIPT ARGS...` in `venv` and returns its stdout; fails when it fails.
pub fn run_python(venv: &str, script: &str, args: &[String]) -> String {
    run_python_with(venv, script, args, &[])
}

/// [`run_python`] with extra environment variables.
pub fn run_python_with(venv: &str, script: &str, args: &[String], env: &[(&str, &str)]) -> String {
    let o = std::process::Command::new(python(venv))
        .arg(root().join("tests/python").join(script))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("run the python client");
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success(),
        "python {script} {args:?} failed:\n{out}\n{err}"
    );
    out
}

/// Whether process `pid` runs (a zombie does not).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s.contains(") Z ") && !s.contains(") X "))
        .unwrap_or(false)
}

/// The processes whose parent is `pid`.
pub fn children_of(pid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat"))
                .ok()
                .and_then(|s| {
                    // pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
                    let rest = s.rsplit_once(')')?.1;
                    rest.split_whitespace().nth(1)?.parse::<u32>().ok()
                })
                == Some(pid)
        })
        .collect()
}

/// Sends `signal` (`TERM`, `INT`, `HUP`) to `pid` with kill(1).
pub fn signal(pid: u32, signal: &str) {
    let ok = std::process::Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .expect("run kill");
    assert!(ok.success(), "kill -{signal} {pid}");
}

/// Waits up to `limit` for `check`; fails naming `what`.
pub fn wait_until(what: &str, limit: std::time::Duration, mut check: impl FnMut() -> bool) {
    let started = std::time::Instant::now();
    while !check() {
        assert!(started.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// What `serve --metrics` prints before the operator's listener's URL.
pub const OPS_ANNOUNCED: &str = "serving /metrics, /healthz and /readyz on ";

/// Reads stderr `lines` up to one announcing `marker`, and returns the URL after it (no
/// trailing `/`); on the way, hands every other line to `seen`.
pub fn announced(
    lines: &mut impl Iterator<Item = std::io::Result<String>>,
    marker: &str,
    mut seen: impl FnMut(&str),
) -> String {
    loop {
        let line = lines
            .next()
            .unwrap_or_else(|| panic!("the gateway ended before announcing {marker:?}"))
            .expect("stderr line");
        match line.split(marker).nth(1) {
            Some(rest) => {
                let url = rest.split_whitespace().next().expect("url");
                break url.trim_end_matches('/').to_owned();
            }
            None => seen(&line),
        }
    }
}

/// A `toolsearch serve --http 127.0.0.1:0` child and the URL it announced (and the operator's
/// listener's, with `--metrics`).
pub struct HttpGateway {
    pub child: std::process::Child,
    pub url: String,
    pub ops_url: Option<String>,
    /// Every stderr line after the announcement, as it comes.
    pub log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl HttpGateway {
    pub fn start(config: &std::path::Path) -> Self {
        Self::start_with(config, &[])
    }

    /// `serve --http` with extra environment variables (client tokens).
    pub fn start_with(config: &std::path::Path, env: &[(&str, &str)]) -> Self {
        Self::start_args(config, &[], env)
    }

    /// `serve --http` with extra arguments and environment variables.
    pub fn start_args(config: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> Self {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_toolsearch"));
        command
            .args(["serve", "--http", "127.0.0.1:0", "--config"])
            .arg(config)
            .args(args);
        Self::spawn(command, env)
    }

    /// `serve --http` allowed at most `open_files` file descriptors (`ulimit -n`).
    pub fn start_with_open_files(
        config: &std::path::Path,
        env: &[(&str, &str)],
        open_files: u32,
    ) -> Self {
        let mut command = std::process::Command::new("sh");
        command
            .arg("-c")
            .arg(format!("ulimit -n {open_files} && exec \"$0\" \"$@\""))
            .arg(env!("CARGO_BIN_EXE_toolsearch"))
            .args(["serve", "--http", "127.0.0.1:0", "--config"])
            .arg(config);
        Self::spawn(command, env)
    }

    fn spawn(mut command: std::process::Command, env: &[(&str, &str)]) -> Self {
        use std::io::BufRead;
        let mut child = command
            .envs(env.iter().copied())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn serve --http");
        let stderr = child.stderr.take().expect("stderr");
        let mut lines = std::io::BufReader::new(stderr).lines();
        let mut ops_url = None;
        let url = announced(&mut lines, "serving MCP on ", |line| {
            if let Some(rest) = line.split(OPS_ANNOUNCED).nth(1) {
                ops_url = Some(rest.trim().trim_end_matches('/').to_owned());
            }
        }) + "/";
        // Keep draining stderr so the gateway never blocks on a full pipe.
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                sink.lock().unwrap_or_else(|p| p.into_inner()).push(line);
            }
        });
        Self {
            child,
            url,
            ops_url,
            log,
        }
    }
}

impl HttpGateway {
    /// The stderr lines so far that contain `needle`.
    pub fn logged(&self, needle: &str) -> Vec<String> {
        let log = self.log.lock().unwrap_or_else(|p| p.into_inner());
        log.iter().filter(|l| l.contains(needle)).cloned().collect()
    }
}

impl Drop for HttpGateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A child process that prints "listening on ADDRESS" first, and that address; killed when
/// dropped.
pub struct Listening(pub std::process::Child, pub String);

impl Listening {
    /// Starts `command` (its stdout piped) and reads the address it announces.
    pub fn start(mut command: std::process::Command, what: &str) -> Self {
        use std::io::BufRead;
        let mut child = command
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("start {what}: {e}"));
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .unwrap_or_else(|e| panic!("{what} says where it listens: {e}"));
        let address = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("{what}: unexpected first line {line:?}"))
            .to_owned();
        Self(child, address)
    }

    /// The conformance suite's server (tests/mcp-servers/conformance-server.mjs) over
    /// streamable HTTP, run by `node`; the address is its URL.
    pub fn conformance_fixture(node: &std::path::Path) -> Self {
        let mut command = std::process::Command::new(node);
        command
            .arg(root().join("tests/mcp-servers/conformance-server.mjs"))
            .stderr(std::process::Stdio::null());
        Self::start(command, "the conformance fixture")
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
