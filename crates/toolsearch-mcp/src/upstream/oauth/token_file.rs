//! A source's OAuth tokens on disk: one JSON file per source in the user's state directory
//! (`$XDG_STATE_HOME/toolsearch/auth/`, else `~/.local/state/toolsearch/auth/`), mode 0600 in
//! a 0700 folder, replaced whole on every save. The file names the URL its tokens were issued
//! for; a source whose URL is not that one finds no tokens, so a token never goes to another
//! audience. rmcp's OAuth client reads and writes it as its credential store.

use std::io::Write;
use std::path::{Path, PathBuf};

use rmcp::transport::auth::{AuthError, CredentialStore, StoredCredentials};
use serde::{Deserialize, Serialize};

/// The state directory's `toolsearch` folder, from the environment.
pub fn state_dir() -> Option<PathBuf> {
    let from = |var: &str| {
        std::env::var_os(var)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    from("XDG_STATE_HOME")
        .or_else(|| from("HOME").map(|h| h.join(".local").join("state")))
        .map(|d| d.join("toolsearch"))
}

/// What the file holds.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Saved {
    /// The source's URL the tokens were issued for.
    pub url: String,
    /// The client the login used, when it was registered or configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<SavedClient>,
    /// The tokens (rmcp's record: client ID, token response, scopes, when received).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<StoredCredentials>,
    /// The `WWW-Authenticate` challenge of a call the server refused for want of scope: the
    /// next login asks for the scope it names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_up: Option<String>,
}

impl Saved {
    /// The login these tokens stand for, if any.
    pub fn standing(&self) -> Option<Standing> {
        use oauth2::TokenResponse as _;
        let c = self.credentials.as_ref()?;
        let t = c.token_response.as_ref()?;
        Some(Standing {
            client_id: c.client_id.clone(),
            scopes: c.granted_scopes.clone(),
            expires_at: t
                .expires_in()
                .zip(c.token_received_at)
                .map(|(life, at)| at + life.as_secs()),
            refreshable: t.refresh_token().is_some(),
        })
    }
}

/// A stored login, as `toolsearch auth status` shows it (no token in it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Standing {
    /// The client it logged in as.
    pub client_id: String,
    /// The scopes granted.
    pub scopes: Vec<String>,
    /// When the access token expires (seconds since the Unix epoch), if it said.
    pub expires_at: Option<u64>,
    /// Whether a refresh token came with it.
    pub refreshable: bool,
}

/// The OAuth client a login used: its ID, the secret the authorization server issued it when
/// it registered itself (a configured secret stays in the environment, never here), and the
/// redirect URI it registered.
#[derive(Clone, Serialize, Deserialize)]
pub struct SavedClient {
    /// Its client ID.
    pub client_id: String,
    /// The secret the authorization server issued it at registration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// The redirect URI it logged in with.
    pub redirect_uri: String,
}

impl std::fmt::Debug for SavedClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SavedClient")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "[REDACTED]"),
            )
            .field("redirect_uri", &self.redirect_uri)
            .finish()
    }
}

/// One source's token file.
#[derive(Debug, Clone)]
pub struct TokenFile {
    path: PathBuf,
    url: String,
}

impl TokenFile {
    /// The file of source `name`, whose tokens are for `url`, in `dir`.
    pub fn in_dir(dir: &Path, name: &str, url: &str) -> Self {
        Self {
            path: dir.join("auth").join(format!("{}.json", file_stem(name))),
            url: url.to_owned(),
        }
    }

    /// The file of source `name` in the user's state directory.
    pub fn for_source(name: &str, url: &str) -> Result<Self, AuthError> {
        let dir = state_dir().ok_or_else(|| {
            AuthError::CredentialStoreError(
                "no state directory: set XDG_STATE_HOME or HOME".to_owned(),
            )
        })?;
        Ok(Self::in_dir(&dir, name, url))
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What it holds for this URL: nothing when there is no file, or when its tokens were
    /// issued for another URL.
    pub fn read(&self) -> Result<Saved, AuthError> {
        let text = match std::fs::read(&self.path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(self.empty()),
            Err(e) => return Err(store_error(&self.path, &e)),
        };
        let saved: Saved = serde_json::from_slice(&text).map_err(|e| {
            AuthError::CredentialStoreError(format!(
                "{} is not a token file ({e}); run toolsearch auth logout and log in again",
                self.path.display()
            ))
        })?;
        if saved.url != self.url {
            return Ok(self.empty());
        }
        Ok(saved)
    }

    fn empty(&self) -> Saved {
        Saved {
            url: self.url.clone(),
            ..Saved::default()
        }
    }

    /// Replaces the file with `saved`: written to a 0600 file beside it, then renamed over it,
    /// so a reader sees the old file or the new one, never half of one.
    pub fn write(&self, saved: &Saved) -> Result<(), AuthError> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        create_private_dir(dir).map_err(|e| store_error(dir, &e))?;
        let text = serde_json::to_vec_pretty(saved)
            .map_err(|e| AuthError::CredentialStoreError(e.to_string()))?;
        let temp = self
            .path
            .with_extension(format!("json.{}.tmp", std::process::id()));
        let written = (|| {
            let mut f = private_file(&temp)?;
            f.write_all(&text)?;
            f.sync_all()?;
            std::fs::rename(&temp, &self.path)
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temp);
            return Err(store_error(&self.path, &e));
        }
        Ok(())
    }

    /// Removes the file; true when there was one.
    pub fn remove(&self) -> Result<bool, AuthError> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(store_error(&self.path, &e)),
        }
    }
}

#[async_trait::async_trait]
impl CredentialStore for TokenFile {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        Ok(self.read()?.credentials)
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let mut saved = self.read()?;
        saved.credentials = Some(credentials);
        self.write(&saved)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        let mut saved = self.read()?;
        if saved.credentials.take().is_some() {
            self.write(&saved)?;
        }
        Ok(())
    }
}

fn store_error(path: &Path, e: &std::io::Error) -> AuthError {
    AuthError::CredentialStoreError(format!("{}: {e}", path.display()))
}

/// A source name as a file name: ASCII letters, digits, `-` and `_` as they are, every other
/// byte as `%XX`, so that two names never share a file and none leaves the folder.
fn file_stem(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(unix)]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    // A folder made earlier with a looser mode is tightened.
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

#[cfg(not(unix))]
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
}

#[cfg(unix)]
fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

#[cfg(not(unix))]
fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh folder of its own under the system's temporary directory.
    fn temp_dir(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("toolsearch-token-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("ok");
        dir
    }

    fn credentials(client: &str) -> StoredCredentials {
        StoredCredentials::new(client.to_owned(), None, vec!["read".into()], Some(1))
    }

    #[tokio::test]
    async fn tokens_are_kept_in_a_private_file_for_their_url_only() {
        let dir = temp_dir("private");
        let file = TokenFile::in_dir(&dir, "linear", "https://mcp.example/mcp");
        assert!(file.load().await.expect("ok").is_none());
        file.save(credentials("c1")).await.expect("ok");
        assert_eq!(file.load().await.expect("ok").expect("ok").client_id, "c1");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).expect("ok").permissions().mode() & 0o777;
            assert_eq!(mode(file.path()), 0o600);
            assert_eq!(mode(file.path().parent().expect("ok")), 0o700);
        }
        // The same source name pointed at another server gets none of them.
        let other = TokenFile::in_dir(&dir, "linear", "https://evil.example/mcp");
        assert!(other.load().await.expect("ok").is_none());
        // Nothing but the file is left behind.
        let names: Vec<_> = std::fs::read_dir(file.path().parent().expect("ok"))
            .expect("ok")
            .map(|e| e.expect("ok").file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("linear.json")]);
        file.clear().await.expect("ok");
        assert!(file.load().await.expect("ok").is_none());
        assert!(file.remove().expect("ok"));
        assert!(!file.remove().expect("ok"));
    }

    #[tokio::test]
    async fn a_client_saved_with_the_tokens_survives_their_refresh() {
        let dir = temp_dir("refresh");
        let file = TokenFile::in_dir(&dir, "s", "http://127.0.0.1:1/mcp");
        let mut saved = file.read().expect("ok");
        saved.client = Some(SavedClient {
            client_id: "dyn".into(),
            client_secret: Some("issued".into()),
            redirect_uri: "http://127.0.0.1:2/callback".into(),
        });
        file.write(&saved).expect("ok");
        file.save(credentials("dyn")).await.expect("ok");
        let back = file.read().expect("ok");
        assert_eq!(
            back.client.expect("ok").client_secret.as_deref(),
            Some("issued")
        );
        assert!(back.credentials.is_some());
    }

    #[test]
    fn names_become_file_names_that_stay_in_the_folder() {
        assert_eq!(file_stem("linear"), "linear");
        assert_eq!(file_stem("../x"), "%2E%2E%2Fx");
        assert_ne!(file_stem("a b"), file_stem("a_b"));
    }

    #[test]
    fn a_broken_file_is_an_error_that_says_what_to_do() {
        let dir = temp_dir("broken");
        let file = TokenFile::in_dir(&dir, "s", "http://h/mcp");
        std::fs::create_dir_all(file.path().parent().expect("ok")).expect("ok");
        std::fs::write(file.path(), "{not json").expect("ok");
        let e = file.read().expect_err("broken").to_string();
        assert!(e.contains("auth logout"), "{e}");
    }
}
