//! `toolsearch control`: one control call against a catalog file.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Args;
use toolsearch::Surface;
use toolsearch::vendor::Format;
use toolsearch::{Engine, Settings, load_catalog_file};
use toolsearch_mcp::config::load_config;

use crate::EXIT_TOOL_ERROR;

#[derive(Debug, Args)]
#[command(
    after_help = "Exit status: 0 success; 1 the control returned a tool error (its JSON is still on stdout); 2 bad usage, config or catalog (one line on stderr)."
)]
pub struct ControlArgs {
    /// Static catalog file (JSON).
    #[arg(long, value_name = "FILE")]
    catalog: PathBuf,
    /// Gateway config (TOML); its `surface`, `[search]` and `[names]` apply.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Surface: toolsearch, toolproxy or capabilities.
    #[arg(long, value_name = "S")]
    surface: Option<String>,
    /// Largest page (1..=100).
    #[arg(long, value_name = "N")]
    max_results: Option<usize>,
    /// Largest response in bytes (1024..=32768).
    #[arg(long, value_name = "N")]
    max_search_bytes: Option<usize>,
    /// mcp (the surface's controls), anthropic or openai (`tool_search` and the exported
    /// tools, answered in that vendor's shape).
    #[arg(long, value_name = "F", default_value = "mcp")]
    format: String,
    /// Control name, e.g. discover_tools (with a vendor format: tool_search, or a tool's
    /// exported name).
    name: String,
    /// The control's arguments, a JSON object (OpenAI: {"call_id", "arguments"}).
    args_json: String,
}

pub fn run(a: ControlArgs) -> anyhow::Result<ExitCode> {
    let mut settings = match &a.config {
        Some(path) => load_config(path)?.settings,
        None => Settings::default(),
    };
    if let Some(s) = &a.surface {
        match Surface::parse(s) {
            Some(s) => settings = settings.with_surface(s),
            None => bail!("--surface {s:?} is not one of toolsearch, toolproxy, capabilities"),
        }
    }
    if let Some(n) = a.max_results {
        settings = settings.with_max_results(n);
    }
    if let Some(n) = a.max_search_bytes {
        settings = settings.with_max_search_bytes(n);
    }
    let vendor = match a.format.as_str() {
        "mcp" => None,
        other => Some(other.parse::<Format>().map_err(|_| {
            anyhow::anyhow!("--format {other:?} is not one of mcp, anthropic, openai")
        })?),
    };
    let arguments: serde_json::Value = serde_json::from_str(&a.args_json)
        .with_context(|| format!("ARGS_JSON is not valid JSON ({:?})", a.args_json))?;
    let label = a.catalog.display().to_string();
    let sources = load_catalog_file(&a.catalog)?.into_sources(&label, false);
    let semantic = toolsearch_embed::semantic_search(&settings, settings.method)?;
    let runner = crate::wiring::code_runner(&settings)?;
    let mut builder = Engine::builder().settings(settings).sources(sources);
    if let Some(runner) = runner {
        builder = builder.code_runner(runner);
    }
    if let Some(sem) = semantic {
        builder = builder.semantic(sem);
    }
    let engine = builder.build()?;
    if let Some(format) = vendor {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .context("starting the async runtime")?;
        let reply = runtime.block_on(engine.handle_vendor(format, &a.name, arguments));
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "{}", reply.value).context("writing to stdout")?;
        return Ok(if reply.is_error {
            ExitCode::from(EXIT_TOOL_ERROR)
        } else {
            ExitCode::SUCCESS
        });
    }
    let names: Vec<String> = engine.tools().into_iter().map(|d| d.name).collect();
    if !names.contains(&a.name) {
        if names.is_empty() {
            bail!("the catalog has no tools, so there are no controls");
        }
        bail!(
            "{:?} is not a control; the controls are: {}",
            a.name,
            names.join(", ")
        );
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .context("starting the async runtime")?;
    let result = runtime.block_on(engine.handle(&a.name, arguments));
    // A control answers with one text block of JSON: print it as is. A tool's own result is
    // printed as the MCP CallToolResult the model receives.
    let text = match (&result.structured_content, result.content.as_slice()) {
        (None, [_]) => result.first_text().map(str::to_owned),
        _ => None,
    };
    let text = match text {
        Some(t) => t,
        None => serde_json::to_string(&result).context("encoding the result")?,
    };
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{text}").context("writing to stdout")?;
    Ok(if result.is_error {
        ExitCode::from(EXIT_TOOL_ERROR)
    } else {
        ExitCode::SUCCESS
    })
}
