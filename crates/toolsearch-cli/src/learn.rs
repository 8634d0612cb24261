//! `toolsearch learn --from FILE | --forget [TOOL]`: the uses the gateway learns from, kept in
//! the config's `[learning] file` (else `$XDG_STATE_HOME/toolsearch/learned.jsonl`). `--from`
//! imports `{"query", "tool"}` lines (every line is checked before anything is written);
//! `--forget` removes what was learned for one tool (its canonical name), or everything.
//! Exit status: 0 done; 2 bad usage, config or file.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, anyhow};
use clap::Args;
use toolsearch::Learning;
use toolsearch::learn::parse_uses;
use toolsearch_mcp::config::load_config;
use toolsearch_mcp::upstream::oauth::state_dir;

#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("what").required(true).args(["from", "forget"]))]
pub struct LearnArgs {
    /// Import uses: JSON lines `{"query", "tool"}` (`tool` a canonical name,
    /// `<group>__<tool>`; a `class` member keeps a use to one policy class).
    #[arg(long, value_name = "FILE.jsonl")]
    from: Option<PathBuf>,
    /// Forget what was learned for TOOL (a canonical name), or everything without one.
    #[arg(long, value_name = "TOOL", num_args = 0..=1, default_missing_value = "")]
    forget: Option<String>,
    /// Gateway config (TOML) whose `[learning] file` to use; default `toolsearch.toml` in the
    /// working directory when it exists.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

pub fn run(a: LearnArgs) -> anyhow::Result<ExitCode> {
    crate::init_logging();
    let file = learned_file(a.config)?;
    let mut out = std::io::stdout().lock();
    if let Some(path) = &a.from {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let uses =
            parse_uses(&text).map_err(|(line, e)| anyhow!("{}:{line}: {e}", path.display()))?;
        let learning = Learning::open(&file)?;
        let before = learning.learned().len();
        for (_, u) in &uses {
            learning.learn(u);
        }
        let kept = learning.learned().len();
        writeln!(
            out,
            "{} uses read; {} kept in {} ({} new)",
            uses.len(),
            kept,
            file.display(),
            kept.saturating_sub(before)
        )?;
    }
    if let Some(tool) = &a.forget {
        let learning = Learning::open(&file)?;
        let tool = (!tool.is_empty()).then_some(tool.as_str());
        let n = learning.forget(tool)?;
        writeln!(out, "{n} uses forgotten in {}", file.display())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The config's `[learning] file`, else the default one.
fn learned_file(config: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    let explicit = config.is_some();
    let path = crate::config_path(config);
    if explicit || path.exists() {
        let config = load_config(&path)?;
        if let Some(Some(file)) = config.learning {
            return Ok(file);
        }
    }
    state_dir()
        .map(|d| d.join("learned.jsonl"))
        .context("no state folder: set XDG_STATE_HOME or HOME, or [learning] file")
}
