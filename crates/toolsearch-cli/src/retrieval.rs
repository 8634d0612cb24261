//! `toolsearch search` and `toolsearch eval`: ranked retrieval for people and scripts.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, anyhow, bail};
use clap::Args;
use toolsearch::SearchMethod;
use toolsearch::eval::{EvalError, Report, Split, evaluate, load_queries, recall_plot_svg};
use toolsearch::learn::{Learned, Use, parse_uses};
use toolsearch::search::{Embeddings, LearnedIndex};
use toolsearch::{Directory, Query, SearchIndex, Searcher, Settings, Snapshot, load_catalog_file};
use toolsearch_mcp::config::load_config;

#[derive(Debug, Args)]
pub struct SearchArgs {
    /// Gateway config (TOML): its sources (upstreams are connected) and `[search]` settings.
    #[arg(long, value_name = "FILE", conflicts_with = "catalog")]
    config: Option<PathBuf>,
    /// Static catalog file (JSON).
    #[arg(long, value_name = "FILE")]
    catalog: Option<PathBuf>,
    /// keyword, bm25, semantic or hybrid (default: the config's, else bm25).
    #[arg(long, value_name = "M")]
    method: Option<String>,
    /// How many tools to show.
    #[arg(short = 'k', value_name = "N", default_value_t = 10)]
    k: usize,
    #[command(flatten)]
    model: ModelArgs,
    /// What to look for.
    query: String,
}

#[derive(Debug, Args)]
pub struct EvalArgs {
    /// Static catalog file (JSON).
    #[arg(long, value_name = "FILE")]
    catalog: PathBuf,
    /// Queries: JSON lines `{"id", "query", "relevant": ["group/tool", ...]}`.
    #[arg(long, value_name = "FILE")]
    queries: PathBuf,
    /// Method, or several separated by commas (e.g. `keyword,bm25`); default bm25.
    #[arg(long, value_name = "M", default_value = "bm25")]
    method: String,
    /// Settings (e.g. `[search.bm25]` parameters) from a gateway config; its sources are ignored.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Which queries: all, train or test (halves by a hash of the id).
    #[arg(long, value_name = "S", default_value = "all")]
    split: String,
    /// Only the queries with two or more relevant tools (does each find all of them?).
    #[arg(long)]
    multi: bool,
    /// Print one JSON object per method instead of a table.
    #[arg(long)]
    json: bool,
    /// Also draw recall@k (k = 1..20) of each method into this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
    /// Also write each query's ranking to this file, a JSON line per method and query:
    /// `{"method", "id", "query", "relevant": [{"tool", "rank"}], "top": [ten tools]}`.
    #[arg(long, value_name = "FILE.jsonl")]
    rankings: Option<PathBuf>,
    /// Rank with what these uses taught: JSON lines `{"query", "tool"}` (`tool` a canonical
    /// name or `group/tool`), as `toolsearch learn --from` takes them.
    #[arg(long, value_name = "FILE.jsonl")]
    learn: Option<PathBuf>,
    /// Rank as a caller of this policy class (`--learn`'s lines keep the class they name, none
    /// by default): what another class taught ranks nothing here.
    #[arg(long, value_name = "CLASS", default_value = "", requires = "learn")]
    learn_class: String,
    #[command(flatten)]
    model: ModelArgs,
}

#[derive(Debug, Args)]
pub struct IndexArgs {
    /// Gateway config (TOML): its sources (upstreams are connected) and `[search.semantic]`.
    #[arg(long, value_name = "FILE", conflicts_with = "catalog")]
    config: Option<PathBuf>,
    /// Static catalog file (JSON).
    #[arg(long, value_name = "FILE")]
    catalog: Option<PathBuf>,
    #[command(flatten)]
    model: ModelArgs,
}

/// Where the vectors of `semantic` and `hybrid` come from, overriding `[search.semantic]`.
#[derive(Debug, Args)]
pub struct ModelArgs {
    /// Local sentence-transformers model directory (default: the config's, else
    /// $TOOLSEARCH_MODEL).
    #[arg(long, value_name = "DIR")]
    model: Option<PathBuf>,
    /// Embedding cache folder (default: the config's, else $TOOLSEARCH_CACHE_DIR, else
    /// ~/.cache/toolsearch).
    #[arg(long, value_name = "DIR")]
    cache_dir: Option<PathBuf>,
    /// Longest model input in tokens (default: the config's, else 128 or the model's max_seq_length if smaller).
    #[arg(long, value_name = "N")]
    max_tokens: Option<usize>,
}

impl ModelArgs {
    fn apply(&self, settings: &mut Settings) -> anyhow::Result<()> {
        if let Some(m) = &self.model {
            settings.semantic.model = Some(m.clone());
            settings.semantic.url = None;
        }
        if let Some(d) = &self.cache_dir {
            settings.semantic.cache_dir = Some(d.clone());
        }
        if let Some(n) = self.max_tokens {
            settings.semantic.max_tokens = Some(n);
        }
        let problems = settings.problems();
        if !problems.is_empty() {
            bail!("{problems}");
        }
        Ok(())
    }
}

fn parse_methods(list: &str) -> anyhow::Result<Vec<SearchMethod>> {
    list.split(',')
        .map(|m| {
            SearchMethod::parse(m.trim()).with_context(|| {
                format!("unknown search method {m:?}; use keyword, bm25, semantic or hybrid")
            })
        })
        .collect()
}

fn catalog_directory(path: &Path) -> anyhow::Result<Directory> {
    let label = path.display().to_string();
    let sources = load_catalog_file(path)?.into_sources(&label, false);
    Ok(Directory::build(sources)?)
}

/// Settings and the snapshot to search: a catalog file, or a config's sources (connected).
fn load(
    config: Option<&Path>,
    catalog: Option<&Path>,
) -> anyhow::Result<(Settings, Arc<Snapshot>)> {
    if let Some(path) = catalog {
        let settings = match config {
            Some(c) => load_config(c)?.settings,
            None => Settings::default(),
        };
        return Ok((settings, Arc::new(Snapshot::new(catalog_directory(path)?))));
    }
    let mut config = load_config(&crate::config_path(config.map(Path::to_path_buf)))?;
    // The gateway only gathers the tools here: the caller searches (and `index` builds the
    // embedding cache that a dense method would need at start).
    let method = std::mem::take(&mut config.settings.method);
    crate::wiring::with_gateway(config, |gateway| {
        let settings = gateway.engine().settings().clone().with_method(method);
        Ok((settings, gateway.engine().snapshot()))
    })
}

pub fn search(a: SearchArgs) -> anyhow::Result<ExitCode> {
    crate::init_logging();
    if a.k == 0 {
        bail!("-k must be at least 1");
    }
    let explicit = a.method.as_deref().map(parse_methods).transpose()?;
    let (mut settings, snapshot) = load(a.config.as_deref(), a.catalog.as_deref())?;
    let dir = snapshot.directory();
    a.model.apply(&mut settings)?;
    let method = match explicit.as_deref() {
        Some([m]) => *m,
        Some(_) => bail!("--method takes one method here"),
        None if a.config.is_some() => settings.method,
        None => SearchMethod::Bm25,
    };
    let semantic = toolsearch_embed::semantic_search(&settings, method)?;
    let search = Searcher::new(dir, snapshot.index(), &settings, semantic.as_deref());
    let hits = search.rank(&Query::new(&a.query, method, a.k))?.hits;
    let mut out = std::io::stdout().lock();
    if hits.is_empty() {
        writeln!(out, "no tool matches {:?} ({method})", a.query)?;
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<[String; 4]> = hits
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let t = dir.tool(h.tool);
            [
                (i + 1).to_string(),
                format!("{:.3}", h.score),
                format!("{}/{}", dir.group_of(h.tool).name, t.name),
                search.explain(method, &a.query, h.tool),
            ]
        })
        .collect();
    crate::table::write(&mut out, ["#", "score", "tool", "why"], &rows, &[0, 1])?;
    Ok(ExitCode::SUCCESS)
}

pub fn eval(a: EvalArgs) -> anyhow::Result<ExitCode> {
    crate::init_logging();
    let methods = parse_methods(&a.method)?;
    let split = Split::parse(&a.split)
        .with_context(|| format!("--split {:?} is not one of all, train, test", a.split))?;
    let mut settings = match &a.config {
        Some(c) => load_config(c)?.settings,
        None => Settings::default(),
    };
    a.model.apply(&mut settings)?;
    let mut queries = load_queries(&a.queries, split)?;
    if a.multi {
        queries.retain(|q| q.relevant.len() > 1);
    }
    let mut rankings = match &a.rankings {
        Some(path) => Some(std::io::BufWriter::new(
            std::fs::File::create(path)
                .with_context(|| format!("cannot create {}", path.display()))?,
        )),
        None => None,
    };
    let mut reports = Vec::new();
    for method in methods {
        // Each method's build is timed from the loaded catalog to a searchable snapshot.
        // Loading the model is not part of the build; reading the cached vectors is.
        let semantic = toolsearch_embed::semantic_search(&settings, method)?;
        crate::allocator::purge_at_once();
        let started = Instant::now();
        let dir = catalog_directory(&a.catalog)?;
        let index = SearchIndex::build(&dir);
        index.prepare(&dir, method, &settings.bm25);
        if let Some(sem) = &semantic {
            let (_, embedded) = sem.index(&dir, &mut |_, _| {})?;
            if embedded > 0 {
                bail!(
                    "the embedding cache {} lacked {embedded} of the catalog's tools; they are \
                     embedded and saved now, run eval again to measure from a built cache",
                    sem.cache_path().display()
                );
            }
            index.vectors(&dir, sem)?;
        }
        let build_ms = started.elapsed().as_secs_f64() * 1e3;
        // The queries are timed as a gateway serves them (see `allocator::purge_as_usual`).
        crate::allocator::purge_as_usual();
        let learned = match &a.learn {
            Some(path) => Some(learned_index(path, &dir, &a.learn_class)?),
            None => None,
        };
        let search = Searcher::new(&dir, &index, &settings, semantic.as_deref())
            .with_learned(learned.as_ref());
        let report = evaluate(
            &search,
            method,
            &queries,
            build_ms,
            |ranking| match rankings.as_mut() {
                Some(w) => writeln!(w, "{}", ranking.to_json()),
                None => Ok(()),
            },
        );
        reports.push(report.map_err(|e| match (&e, &a.rankings) {
            (EvalError::Rankings(_), Some(path)) => {
                anyhow::Error::new(e).context(format!("writing {}", path.display()))
            }
            _ => e.into(),
        })?);
    }
    if let (Some(w), Some(path)) = (rankings.as_mut(), &a.rankings) {
        w.flush()
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    let mut out = std::io::stdout().lock();
    for r in &reports {
        if r.unknown_relevant > 0 {
            eprintln!(
                "toolsearch: {} relevant ids in {} are not in the catalog (they count as not found)",
                r.unknown_relevant,
                a.queries.display()
            );
            break;
        }
    }
    if a.json {
        for r in &reports {
            writeln!(out, "{}", r.to_json())?;
        }
    } else {
        print_table(&mut out, &reports)?;
    }
    if let Some(path) = &a.plot {
        let title = format!(
            "recall@k — {} ({} queries)",
            a.catalog.display(),
            queries.len()
        );
        std::fs::write(path, recall_plot_svg(&reports, &title))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn print_table(out: &mut impl Write, reports: &[Report]) -> std::io::Result<()> {
    let rows: Vec<[String; 11]> = reports
        .iter()
        .map(|r| {
            [
                r.method.clone(),
                r.tools.to_string(),
                r.queries.to_string(),
                format!("{:.4}", r.recall_at(1)),
                format!("{:.4}", r.recall_at(5)),
                format!("{:.4}", r.recall_at(10)),
                format!("{:.4}", r.ndcg10),
                format!("{:.4}", r.mrr),
                format!("{:.1}", r.p50_us),
                format!("{:.1}", r.p99_us),
                format!("{:.1}", r.build_ms),
            ]
        })
        .collect();
    let header = [
        "method",
        "tools",
        "queries",
        "recall@1",
        "recall@5",
        "recall@10",
        "ndcg@10",
        "mrr",
        "p50_us",
        "p99_us",
        "build_ms",
    ];
    crate::table::write(out, header, &rows, &(1..11).collect::<Vec<_>>())
}

pub fn index(a: IndexArgs) -> anyhow::Result<ExitCode> {
    crate::init_logging();
    let (mut settings, snapshot) = load(a.config.as_deref(), a.catalog.as_deref())?;
    let dir = snapshot.directory();
    a.model.apply(&mut settings)?;
    let loading = Instant::now();
    let embedder = toolsearch_embed::load(&settings.semantic)?;
    let load_ms = loading.elapsed().as_secs_f64() * 1e3;
    let semantic = Embeddings::open(embedder, &settings.semantic, false)?;
    let bar = crate::progress::tools_bar("embedding");
    let started = Instant::now();
    let (vectors, embedded) = semantic.index(dir, &mut |done, todo| {
        bar.set_length(todo as u64);
        bar.set_position(done as u64);
    })?;
    bar.finish_and_clear();
    let secs = started.elapsed().as_secs_f64();
    let per_tool = if embedded > 0 {
        format!(", {:.1} ms per tool", secs * 1e3 / embedded as f64)
    } else {
        String::new()
    };
    println!(
        "{} tools, {} embedded now and {} from the cache in {secs:.1} s{per_tool} (model {} loaded in {load_ms:.0} ms, {} dimensions)\ncache: {}",
        vectors.len(),
        embedded,
        vectors.len() - embedded.min(vectors.len()),
        semantic.embedder().model_id(),
        vectors.dim(),
        semantic.cache_path().display()
    );
    Ok(ExitCode::SUCCESS)
}

/// The learned field of `dir` from a file of uses (`{"query", "tool"}` lines, the tool by its
/// canonical name or as `group/tool`, each of the class its line names), for callers of
/// `class`: every line must name a tool of the catalog.
fn learned_index(path: &Path, dir: &Directory, class: &str) -> anyhow::Result<LearnedIndex> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let uses = parse_uses(&text).map_err(|(line, e)| anyhow!("{}:{line}: {e}", path.display()))?;
    let mut learned = Learned::new();
    for (line, u) in uses {
        let id = match u.tool.split_once('/') {
            Some((group, tool)) => dir.tool_id(group, tool),
            None => dir.tool_by_canonical(&u.tool),
        };
        let Some(id) = id else {
            bail!(
                "{}:{line}: no tool {:?} in the catalog",
                path.display(),
                u.tool
            );
        };
        learned.add(&Use::new(u.query, dir.tool(id).canonical.clone(), u.class));
    }
    Ok(LearnedIndex::of(&learned, class, dir))
}
