//! The `toolsearch` binary: parses flags, runs a command, prints errors as one line.

mod control;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Building a large catalog makes millions of small allocations; mimalloc does them markedly
/// faster than the system allocator (see BENCHMARKS.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
}

/// Exit status: the control returned a tool error (its JSON is on stdout).
pub const EXIT_TOOL_ERROR: u8 = 1;
/// Exit status: bad usage, config or catalog.
pub const EXIT_USAGE: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Control(args) => control::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("toolsearch: {}", one_line(&e));
            ExitCode::from(EXIT_USAGE)
        }
    }
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
