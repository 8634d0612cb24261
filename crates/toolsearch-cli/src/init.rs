//! `toolsearch init`: a gateway config from the MCP servers a client already has (Claude
//! Desktop, Claude Code, Cursor, VS Code, or a file in one of their formats): one `[[source]]`
//! per server, secrets as `${env:NAME}` references; with `--connect`, each group's description
//! from what its server says of itself; with `--install`, the client's file rewritten to
//! launch the gateway instead (after a backup beside it).

mod client_file;
mod sources_toml;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;

use client_file::{Client, ClientFile};
use sources_toml::Source;

#[derive(Debug, Args)]
#[command(
    after_help = "Exit status: 0 the config was written (or was already the same); 2 no client file, nothing to import, or a config in the way (one line on stderr)."
)]
pub struct InitArgs {
    /// Where the servers come from: claude-desktop, claude-code, cursor, vscode (each found
    /// where that client keeps its list), or a file in one of their formats.
    #[arg(
        long = "from",
        value_name = "CLIENT|FILE",
        default_value = "claude-desktop"
    )]
    from: String,
    /// Start each server once and describe its group from what it says of itself.
    #[arg(long)]
    connect: bool,
    /// Where to write the gateway config.
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FILE",
        default_value = "toolsearch.toml"
    )]
    output: PathBuf,
    /// Rewrite the client's file to launch `toolsearch serve` with this config instead of the
    /// servers (a backup `<file>.bak` is made first).
    #[arg(long)]
    install: bool,
    /// How long `--connect` waits for the servers.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    wait: u64,
}

pub fn run(a: InitArgs) -> anyhow::Result<ExitCode> {
    crate::logging::init_reporting();
    let file = client_file(&a.from)?;
    let (mut servers, problems) = file.servers();
    for p in &problems {
        eprintln!("toolsearch: {p}");
    }
    // Installed already: the servers are those of the backup.
    if servers.is_empty() && file.installed() {
        let backup = client_file::backup_path(&file.path);
        if backup.exists() {
            servers = ClientFile::read(&backup)?.servers().0;
        }
    }
    if servers.is_empty() {
        bail!("{}: no MCP server to import", file.path.display());
    }
    let (mut sources, needed) = sources_toml::sources(&servers);
    if a.connect {
        describe(&mut sources, std::time::Duration::from_secs(a.wait))?;
    }
    let text = format!(
        "# Written by `toolsearch init --from {}` from {}.\n\n{}",
        a.from,
        file.path.display(),
        sources_toml::toml(&sources)
    );
    // What is written must be a valid config (a key that cannot be made one is caught here).
    toolsearch_mcp::config::parse_config(&a.output.display().to_string(), &text, Path::new("."))
        .context("the config init would write is not valid")?;
    match std::fs::read_to_string(&a.output) {
        Ok(existing) if existing == text => {
            eprintln!("toolsearch: {} is already this config", a.output.display());
        }
        Ok(_) => bail!(
            "{} exists and differs from what init would write; move it away or give -o another file",
            a.output.display()
        ),
        Err(_) => std::fs::write(&a.output, &text)
            .with_context(|| format!("writing {}", a.output.display()))?,
    }
    eprintln!(
        "toolsearch: wrote {} sources to {}",
        sources.len(),
        a.output.display()
    );
    if !a.connect {
        eprintln!(
            "toolsearch: each group has a placeholder description: edit them, or run again with --connect"
        );
    }
    if !needed.is_empty() {
        eprintln!("toolsearch: secrets were not copied; set these in the gateway's environment:");
        for n in &needed {
            eprintln!("  {}  ({})", n.variable, n.was);
        }
    }
    if a.install {
        install(&file, &a.output)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The client file `from` names: a client's (the first of its places that exists) or a path.
fn client_file(from: &str) -> anyhow::Result<ClientFile> {
    let Some(client) = Client::named(from) else {
        return ClientFile::read(Path::new(from));
    };
    let home = std::env::var_os("HOME")
        .or_else(|| std::env::var_os("USERPROFILE"))
        .map(PathBuf::from)
        .context("no home directory (HOME is not set)")?;
    let cwd = std::env::current_dir().context("the working directory")?;
    let places = client.locate(&home, &cwd);
    match places.iter().find(|p| p.exists()) {
        Some(path) => ClientFile::read(path),
        None => bail!(
            "no {from} MCP config found (looked at {})",
            places
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Each source's description from what its server says of itself, connecting each once.
fn describe(sources: &mut [Source], wait: std::time::Duration) -> anyhow::Result<()> {
    let text = sources_toml::toml(sources);
    let config = toolsearch_mcp::config::parse_config("init", &text, Path::new("."))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async {
        let options = toolsearch_mcp::GatewayOptions::default();
        let (gateway, statuses) = crate::wiring::connect_once(config, options, wait).await?;
        let snapshot = gateway.engine().snapshot();
        let dir = snapshot.directory();
        for source in sources.iter_mut() {
            let status = statuses.iter().find(|s| s.name == source.name);
            if let Some(Err(why)) = status.map(|s| &s.status) {
                eprintln!(
                    "toolsearch: {} did not answer ({why}); its description is a placeholder",
                    source.name
                );
                continue;
            }
            let Some(upstream) = gateway.upstream(&source.name) else {
                continue;
            };
            let tools: Vec<&str> = dir
                .group_index(&source.name)
                .map(|g| {
                    let range = &dir.groups()[g as usize].tools;
                    dir.tools()[range.start as usize..range.end as usize]
                        .iter()
                        .map(|t| t.name.as_str())
                        .collect()
                })
                .unwrap_or_default();
            if let Some((title, about, instructions)) = upstream.introduction().await {
                source.description =
                    description(&title, about.as_deref(), instructions.as_deref(), &tools);
            }
        }
        gateway.shutdown().await;
        anyhow::Ok(())
    })
}

/// A group description from what a server says of itself: its title, its description or the
/// first sentence of its instructions, and its tools' names (as many as fit in 300
/// characters).
fn description(
    title: &str,
    about: Option<&str>,
    instructions: Option<&str>,
    tools: &[&str],
) -> String {
    let first_sentence = |s: &str| {
        let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
        match s.find(". ") {
            Some(i) => s[..=i].to_owned(),
            None => s,
        }
    };
    let mut out = title.trim().to_owned();
    if let Some(about) = about
        .or(instructions)
        .map(first_sentence)
        .filter(|s| !s.is_empty())
    {
        out.push_str(": ");
        out.push_str(about.trim_end_matches('.'));
    }
    out.push('.');
    if !tools.is_empty() {
        out.push_str(" Tools: ");
        let mut listed = 0;
        for t in tools {
            if out.len() + t.len() + 2 > 300 {
                break;
            }
            if listed > 0 {
                out.push_str(", ");
            }
            out.push_str(t);
            listed += 1;
        }
        if listed < tools.len() {
            out.push_str(&format!(" and {} more", tools.len() - listed));
        }
        out.push('.');
    }
    out.chars().take(500).collect()
}

/// The client's file rewritten to launch this binary with `config`, unless it already does.
fn install(file: &ClientFile, config: &Path) -> anyhow::Result<()> {
    let binary = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .context("finding this binary's path")?;
    let config = config
        .canonicalize()
        .with_context(|| format!("finding {}", config.display()))?;
    let json = file.installed_json(&binary, &config);
    let current: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file.path)?).unwrap_or_default();
    if current == json {
        eprintln!(
            "toolsearch: {} already launches toolsearch with this config",
            file.path.display()
        );
        return Ok(());
    }
    let backup = client_file::install(&file.path, &json)?;
    eprintln!(
        "toolsearch: {} now launches `{} serve --config {}` (the servers it listed are in {}); restart the client",
        file.path.display(),
        binary.display(),
        config.display(),
        backup.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_description_says_what_the_server_says_and_names_its_tools() {
        assert_eq!(
            description(
                "GitHub",
                None,
                Some("Use these tools to work with repositories. Always confirm first."),
                &["create_issue", "get_file"]
            ),
            "GitHub: Use these tools to work with repositories. Tools: create_issue, get_file."
        );
        let many: Vec<String> = (0..100).map(|i| format!("tool_number_{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        let d = description("x", Some("Does things"), None, &many);
        assert!(d.len() <= 320 && d.ends_with("more."), "{d}");
    }
}
