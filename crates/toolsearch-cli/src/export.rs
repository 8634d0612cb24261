//! `toolsearch export`: the catalog as a vendor's tools array, or (`--stats`) what each way
//! of offering it costs the model's context.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use serde_json::Value;
use toolsearch::vendor::{self, Format};
use toolsearch::{Engine, Settings, View, load_catalog_file};
use toolsearch_mcp::config::load_config;

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// anthropic or openai.
    #[arg(long, value_name = "F")]
    format: String,
    /// Gateway config (TOML): its sources (upstreams are connected) and settings.
    #[arg(long, value_name = "FILE", conflicts_with = "catalog")]
    config: Option<PathBuf>,
    /// Static catalog file (JSON).
    #[arg(long, value_name = "FILE")]
    catalog: Option<PathBuf>,
    /// Print the context each way of offering the catalog takes, instead of the array.
    #[arg(long)]
    stats: bool,
    /// OpenAI only: leave the deferred namespaces out. A client-executed `tool_search_output`
    /// carries each loaded function whole, so the request need not list them, and what the
    /// model sees up front stays the same size whatever the catalog's.
    #[arg(long)]
    lean: bool,
}

/// An OpenAI export without its namespaces: the search tool and the direct tools.
fn lean(exported: &[Value]) -> Vec<Value> {
    exported
        .iter()
        .filter(|t| t["type"] != "namespace")
        .cloned()
        .collect()
}

/// What `--stats` reports of one way of offering the catalog.
#[cfg(feature = "token-stats")]
struct Cost {
    what: String,
    bytes: usize,
    tokens: usize,
}

#[cfg(feature = "token-stats")]
impl Cost {
    fn of(what: impl Into<String>, tools: &[Value], bpe: &tiktoken_rs::CoreBPE) -> Self {
        let text = Value::Array(tools.to_vec()).to_string();
        Self {
            what: what.into(),
            bytes: text.len(),
            tokens: bpe.encode_ordinary(&text).len(),
        }
    }
}

pub fn run(a: ExportArgs) -> anyhow::Result<ExitCode> {
    crate::init_logging();
    let format: Format = a.format.parse()?;
    if a.lean && format != Format::Openai {
        anyhow::bail!(
            "--lean is for --format openai: Anthropic resolves a tool_reference against the request's tools, so they must all be listed"
        );
    }
    let (exported, loaded, controls, summary) =
        with_engine(a.config.as_deref(), a.catalog.as_deref(), |engine| {
            let exported = engine.export(format)?;
            let snap = engine.snapshot();
            let dir = snap.directory();
            let loaded = vendor::loaded(format, View::new(dir, None));
            let controls = vendor::plain(format, &engine.control_definitions());
            let summary = format!(
                "{} tools in {} groups, {} direct; surface {}",
                dir.tools().len(),
                dir.groups().len(),
                dir.direct().len(),
                engine.settings().surface.as_str()
            );
            Ok((exported, loaded, controls, summary))
        })?;
    let mut out = std::io::stdout().lock();
    if !a.stats {
        let exported = if a.lean { lean(&exported) } else { exported };
        serde_json::to_writer(&mut out, &exported).context("writing to stdout")?;
        writeln!(out).context("writing to stdout")?;
        return Ok(ExitCode::SUCCESS);
    }
    stats(format, &exported, &loaded, &controls, &summary, &mut out)
}

/// This build counts no tokens.
#[cfg(not(feature = "token-stats"))]
fn stats(
    _: Format,
    _: &[Value],
    _: &[Value],
    _: &[Value],
    _: &str,
    _: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    anyhow::bail!(
        "--stats counts tokens, and this toolsearch was built without token counting (cargo \
         feature token-stats)"
    )
}

/// The context each way of offering the catalog costs, in bytes and cl100k_base tokens.
#[cfg(feature = "token-stats")]
fn stats(
    format: Format,
    exported: &[Value],
    loaded: &[Value],
    controls: &[Value],
    summary: &str,
    out: &mut impl Write,
) -> anyhow::Result<ExitCode> {
    let bpe = tiktoken_rs::cl100k_base().context("loading the cl100k_base encoding")?;
    let mut costs = vec![
        Cost::of("every tool loaded directly", loaded, &bpe),
        Cost::of("the MCP controls", controls, &bpe),
        Cost::of(
            "deferred export, always loaded",
            &vendor::always_loaded(exported),
            &bpe,
        ),
        Cost::of("deferred export, whole array", exported, &bpe),
    ];
    if format == Format::Openai {
        // The lean array is all the model sees up front.
        costs.push(Cost::of(
            "lean export (--lean), whole array",
            &lean(exported),
            &bpe,
        ));
    }
    writeln!(out, "{format}: {summary}")?;
    let rows: Vec<[String; 3]> = costs
        .iter()
        .map(|c| [c.what.clone(), c.bytes.to_string(), c.tokens.to_string()])
        .collect();
    crate::table::write(out, ["", "bytes", "cl100k tokens"], &rows, &[1, 2])?;
    Ok(ExitCode::SUCCESS)
}

/// Runs `f` on an engine over a catalog file, or over a config's sources (connected, then
/// shut down).
fn with_engine<T>(
    config: Option<&Path>,
    catalog: Option<&Path>,
    f: impl FnOnce(&Engine) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    if let Some(path) = catalog {
        let settings = match config {
            Some(c) => load_config(c)?.settings,
            None => Settings::default(),
        };
        let label = path.display().to_string();
        let sources = load_catalog_file(path)?.into_sources(&label, false);
        let engine = Engine::builder()
            .settings(settings)
            .sources(sources)
            .build()?;
        return f(&engine);
    }
    let config = load_config(&crate::config_path(config.map(Path::to_path_buf)))?;
    crate::wiring::with_gateway(config, |gateway| f(gateway.engine()))
}
