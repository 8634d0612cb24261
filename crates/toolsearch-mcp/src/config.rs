//! The gateway config file (TOML): parsed into raw serde structs (unknown keys rejected), then
//! validated into a [`Config`] — the engine's [`Settings`](toolsearch::Settings), the sources,
//! the limits, the callers and their access, telemetry — every problem with its key path.

mod access;
mod access_file;
mod file;
mod raw;
mod settings_file;
mod source;
mod source_auth;
mod telemetry;
#[cfg(test)]
mod tests;

pub use access::{AccessConfig, ClientConfig, JWT_ALGORITHMS, JwksSource, JwtConfig};
pub use file::{Config, ConfigError, DEFAULT_STARTUP_WAIT, load_config, parse_config};
pub use source::{DEFAULT_INHERITED_ENV, HttpTransport, SourceConfig, SourceKind, ToolFilter};
pub use source_auth::{IdentityProvider, OAuthConfig, OAuthGrant};
pub use telemetry::{DEFAULT_SERVICE_NAME, TelemetryConfig};
