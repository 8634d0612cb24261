//! `toolsearch auth login|status|logout`: OAuth logins for the config's `auth = "oauth"`
//! sources. `login` prints the URL to open on a line of its own on stdout (and opens a browser
//! only with `--open`), waits for the redirect on a loopback listener, stores the tokens in the
//! source's token file, and exits 0. Exit status: 0 done; 1 the login failed or timed out; 2 bad
//! usage or config.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use toolsearch_mcp::config::{OAuthConfig, OAuthGrant, SourceKind, load_config};
use toolsearch_mcp::upstream::oauth::TokenFile;
use toolsearch_mcp::upstream::oauth::login::{LOGIN_TIMEOUT, login};

use crate::EXIT_TOOL_ERROR;

#[derive(Debug, Args)]
pub struct AuthArgs {
    #[command(subcommand)]
    command: AuthCommand,
}

#[derive(Debug, Subcommand)]
enum AuthCommand {
    /// Log in to an `auth = "oauth"` source: prints the URL to open in a browser, waits for
    /// the authorization server to send it back, and stores the tokens (mode 0600).
    #[command(
        after_help = "Exit status: 0 logged in; 1 the login failed or timed out; 2 bad usage or config."
    )]
    Login(LoginArgs),
    /// Show each OAuth source's login: who, which scopes, until when.
    Status(ConfigArg),
    /// Forget a source's tokens (its token file is removed).
    Logout(LogoutArgs),
}

#[derive(Debug, Args)]
struct ConfigArg {
    /// Gateway config (TOML); default `toolsearch.toml` in the working directory.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct LoginArgs {
    /// The source's name in the config.
    source: String,
    #[command(flatten)]
    config: ConfigArg,
    /// Open the URL in the default browser too.
    #[arg(long)]
    open: bool,
    /// How long to wait for the browser to come back.
    #[arg(long, value_name = "SECONDS", default_value_t = LOGIN_TIMEOUT.as_secs())]
    timeout: u64,
}

#[derive(Debug, Args)]
struct LogoutArgs {
    /// The source's name in the config.
    source: String,
    #[command(flatten)]
    config: ConfigArg,
}

pub fn run(a: AuthArgs) -> anyhow::Result<ExitCode> {
    crate::logging::init_reporting();
    match a.command {
        AuthCommand::Login(a) => run_login(a),
        AuthCommand::Status(a) => status(a),
        AuthCommand::Logout(a) => logout(a),
    }
}

/// The config's OAuth sources: name, URL, settings.
fn oauth_sources(config: ConfigArg) -> anyhow::Result<Vec<(String, String, OAuthConfig)>> {
    let config = load_config(&crate::config_path(config.config))?;
    Ok(config
        .sources
        .into_iter()
        .filter_map(|s| match s.kind {
            SourceKind::Http {
                url,
                oauth: Some(oauth),
                ..
            } => Some((s.name, url, *oauth)),
            _ => None,
        })
        .collect())
}

fn find(config: ConfigArg, name: &str) -> anyhow::Result<(String, OAuthConfig)> {
    let sources = oauth_sources(config)?;
    let names: Vec<&str> = sources.iter().map(|(n, ..)| n.as_str()).collect();
    let Some((_, url, oauth)) = sources.iter().find(|(n, ..)| n == name) else {
        if names.is_empty() {
            bail!(
                "no source {name:?} logs in with OAuth: the config has no source with auth = \"oauth\""
            );
        }
        bail!(
            "no source {name:?} logs in with OAuth; these do: {}",
            names.join(", ")
        );
    };
    Ok((url.clone(), oauth.clone()))
}

fn run_login(a: LoginArgs) -> anyhow::Result<ExitCode> {
    let (url, oauth) = find(a.config, &a.source)?;
    if oauth.grant != OAuthGrant::AuthorizationCode {
        bail!(
            "{} uses grant = \"{}\": the gateway asks for its tokens itself, and no one logs in",
            a.source,
            grant_name(oauth.grant)
        );
    }
    let file = TokenFile::for_source(&a.source, &url)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let timeout = Duration::from_secs(a.timeout);
    let source = a.source.clone();
    let open = a.open;
    let done = runtime.block_on(login(&a.source, &url, &oauth, file, timeout, |auth_url| {
        eprintln!(
            "toolsearch: to log in to {source}, open this URL in a browser (waiting {} s):",
            timeout.as_secs()
        );
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{auth_url}");
        let _ = out.flush();
        if open {
            open_browser(auth_url);
        }
    }));
    match done {
        Ok(done) => {
            let scopes = if done.scopes.is_empty() {
                String::new()
            } else {
                format!(" with scopes {}", done.scopes.join(" "))
            };
            eprintln!(
                "toolsearch: logged in to {} as client {}{scopes}; tokens stored in {}",
                a.source,
                done.client_id,
                done.file.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("toolsearch: the login to {} failed: {e}", a.source);
            Ok(ExitCode::from(EXIT_TOOL_ERROR))
        }
    }
}

/// A grant as the config writes it.
fn grant_name(grant: OAuthGrant) -> &'static str {
    match grant {
        OAuthGrant::ClientCredentials => "client_credentials",
        OAuthGrant::EnterpriseManaged => "enterprise_managed",
        _ => "authorization_code",
    }
}

/// Hands the URL to the desktop's opener; a failure is said, and the printed URL still works.
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    if let Err(e) = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        eprintln!("toolsearch: could not start {opener} ({e}); open the URL yourself");
    }
}

fn status(a: ConfigArg) -> anyhow::Result<ExitCode> {
    let sources = oauth_sources(a)?;
    if sources.is_empty() {
        eprintln!("toolsearch: no source of the config logs in with OAuth (auth = \"oauth\")");
        return Ok(ExitCode::SUCCESS);
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut out = std::io::stdout().lock();
    for (name, url, oauth) in sources {
        if oauth.grant != OAuthGrant::AuthorizationCode {
            writeln!(
                out,
                "{name}\t{url}\t{}: the gateway asks for its tokens itself",
                grant_name(oauth.grant)
            )?;
            continue;
        }
        let file = TokenFile::for_source(&name, &url)?;
        let line = match file.read() {
            Err(e) => format!("unreadable: {e}"),
            Ok(saved) => match saved.standing() {
                None => format!("not logged in ({})", toolsearch::login_hint(&name)),
                Some(st) => {
                    let expiry = match st.expires_at {
                        Some(at) if at <= now => "access token expired".to_owned(),
                        Some(at) => format!("access token valid {} s more", at - now),
                        None => "access token without expiry".to_owned(),
                    };
                    let refresh = if st.refreshable { ", refreshable" } else { "" };
                    let scopes = if st.scopes.is_empty() {
                        String::new()
                    } else {
                        format!(", scopes {}", st.scopes.join(" "))
                    };
                    format!(
                        "logged in as client {}{scopes}; {expiry}{refresh}",
                        st.client_id
                    )
                }
            },
        };
        writeln!(out, "{name}\t{url}\t{line}")?;
    }
    Ok(ExitCode::SUCCESS)
}

fn logout(a: LogoutArgs) -> anyhow::Result<ExitCode> {
    let (url, _) = find(a.config, &a.source)?;
    let file = TokenFile::for_source(&a.source, &url)?;
    if file.remove()? {
        eprintln!(
            "toolsearch: logged out of {}; {} removed",
            a.source,
            file.path().display()
        );
    } else {
        eprintln!("toolsearch: {} was not logged in", a.source);
    }
    Ok(ExitCode::SUCCESS)
}
