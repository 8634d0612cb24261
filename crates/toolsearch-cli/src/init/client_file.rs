//! MCP clients' server lists: where each client keeps its file, the servers in it (Claude
//! Desktop's, Claude Code's and Cursor's `mcpServers`, VS Code's `servers`), and the file
//! rewritten to launch the gateway instead, after a backup beside it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde_json::{Map, Value, json};

/// A client whose server list `init` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    ClaudeDesktop,
    ClaudeCode,
    Cursor,
    VsCode,
}

impl Client {
    /// The client named on the command line.
    pub fn named(name: &str) -> Option<Self> {
        Some(match name {
            "claude-desktop" => Self::ClaudeDesktop,
            "claude-code" => Self::ClaudeCode,
            "cursor" => Self::Cursor,
            "vscode" => Self::VsCode,
            _ => return None,
        })
    }

    /// Where the client keeps its server list, first match wins: the project's file in the
    /// working directory (Claude Code's `.mcp.json`, Cursor's `.cursor/mcp.json`, VS Code's
    /// `.vscode/mcp.json`), else the user's.
    pub fn locate(self, home: &Path, cwd: &Path) -> Vec<PathBuf> {
        let config_dir = if cfg!(target_os = "macos") {
            home.join("Library/Application Support")
        } else if cfg!(windows) {
            std::env::var_os("APPDATA")
                .map(PathBuf::from)
                .unwrap_or_else(|| home.join("AppData/Roaming"))
        } else {
            home.join(".config")
        };
        match self {
            Self::ClaudeDesktop => vec![config_dir.join("Claude/claude_desktop_config.json")],
            Self::ClaudeCode => vec![cwd.join(".mcp.json"), home.join(".claude.json")],
            Self::Cursor => vec![cwd.join(".cursor/mcp.json"), home.join(".cursor/mcp.json")],
            Self::VsCode => vec![
                cwd.join(".vscode/mcp.json"),
                config_dir.join("Code/User/mcp.json"),
            ],
        }
    }
}

/// One server of a client's list, as the client describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    /// Its key in the client's list.
    pub key: String,
    pub kind: ServerKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerKind {
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<String>,
    },
    Http {
        url: String,
        headers: BTreeMap<String, String>,
        /// Listed with the legacy HTTP+SSE transport (`"type": "sse"`).
        sse: bool,
    },
}

/// A client's file: its JSON, and which member holds the servers.
#[derive(Debug)]
pub struct ClientFile {
    pub path: PathBuf,
    json: Value,
    /// `mcpServers` (Claude Desktop, Claude Code, Cursor) or `servers` (VS Code).
    member: &'static str,
}

impl ClientFile {
    /// Reads `path`, which must hold an object with `mcpServers` or `servers` (VS Code).
    pub fn read(path: &Path) -> anyhow::Result<Self> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let json: Value = serde_json::from_str(&text)
            .with_context(|| format!("{}: not valid JSON", path.display()))?;
        let member = match &json {
            Value::Object(o) if o.contains_key("mcpServers") => "mcpServers",
            Value::Object(o) if o.contains_key("servers") => "servers",
            _ => bail!(
                "{}: no \"mcpServers\" (Claude Desktop, Claude Code, Cursor) or \"servers\" (VS Code) in it",
                path.display()
            ),
        };
        Ok(Self {
            path: path.to_owned(),
            json,
            member,
        })
    }

    /// The servers it lists, in its order, except entries that already launch the gateway;
    /// each problem (an entry neither a command nor a URL) as a line.
    pub fn servers(&self) -> (Vec<Server>, Vec<String>) {
        let mut out = Vec::new();
        let mut problems = Vec::new();
        let Some(Value::Object(servers)) = self.json.get(self.member) else {
            return (out, problems);
        };
        for (key, entry) in servers {
            if launches_gateway(entry) {
                continue;
            }
            match server(entry) {
                Some(kind) => {
                    out.push(Server {
                        key: key.clone(),
                        kind,
                    });
                }
                None => problems.push(format!(
                    "{}: server {key:?} has neither a \"command\" nor a \"url\"; left out",
                    self.path.display()
                )),
            }
        }
        (out, problems)
    }

    /// Whether its list already launches the gateway.
    pub fn installed(&self) -> bool {
        self.json
            .get(self.member)
            .and_then(Value::as_object)
            .is_some_and(|s| s.values().any(launches_gateway))
    }

    /// The file with its server list replaced by one server, `toolsearch`, that runs `binary
    /// serve --config <config>`; every other member kept as it was.
    pub fn installed_json(&self, binary: &Path, config: &Path) -> Value {
        let mut json = self.json.clone();
        let mut entry = Map::new();
        if self.member == "servers" {
            entry.insert("type".into(), json!("stdio"));
        }
        entry.insert("command".into(), json!(binary.display().to_string()));
        entry.insert(
            "args".into(),
            json!(["serve", "--config", config.display().to_string()]),
        );
        json[self.member] = json!({ "toolsearch": entry });
        json
    }
}

/// Whether a client's entry runs `toolsearch serve`.
fn launches_gateway(entry: &Value) -> bool {
    let command = entry.get("command").and_then(Value::as_str).unwrap_or("");
    let is_ours = Path::new(command)
        .file_stem()
        .is_some_and(|s| s == "toolsearch");
    let serves = entry
        .get("args")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .is_some_and(|a| a == "serve");
    is_ours && serves
}

/// A client's entry as a server: a `command` (stdio) or a `url` (streamable HTTP, or the legacy
/// HTTP+SSE transport when its `"type"` is `"sse"`, as VS Code and Claude Code write it).
fn server(entry: &Value) -> Option<ServerKind> {
    let strings = |key: &str| -> BTreeMap<String, String> {
        entry
            .get(key)
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), text_of(v)))
                    .collect::<BTreeMap<_, _>>()
            })
            .unwrap_or_default()
    };
    if let Some(command) = entry.get("command").and_then(Value::as_str) {
        let args = entry
            .get("args")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(text_of).collect())
            .unwrap_or_default();
        return Some(ServerKind::Stdio {
            command: command.to_owned(),
            args,
            env: strings("env"),
            cwd: entry.get("cwd").and_then(Value::as_str).map(str::to_owned),
        });
    }
    let url = entry
        .get("url")
        .or_else(|| entry.get("serverUrl"))
        .and_then(Value::as_str)?;
    Some(ServerKind::Http {
        url: url.to_owned(),
        headers: strings("headers"),
        sse: entry.get("type").and_then(Value::as_str) == Some("sse"),
    })
}

/// A JSON value as the text a client would pass on (strings as they are).
fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Writes `json` over the client's file at `path`, after copying the file to `<path>.bak`
/// (kept when one is there already: it holds the list before the first install).
pub fn install(path: &Path, json: &Value) -> anyhow::Result<PathBuf> {
    let backup = backup_path(path);
    if !backup.exists() {
        std::fs::copy(path, &backup)
            .with_context(|| format!("backing up {} to {}", path.display(), backup.display()))?;
    }
    let text = serde_json::to_string_pretty(json).context("writing JSON")? + "\n";
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    Ok(backup)
}

/// Where `path`'s backup goes: beside it, `.bak` appended.
pub fn backup_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_owned();
    name.push(".bak");
    path.with_file_name(name)
}
