//! One source's state in the gateway: a static catalog's tools, or an upstream with its last
//! listed tools and how it stands (ready, connecting, down and why).

use std::sync::Arc;

use crate::config::{SourceConfig, SourceKind};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use toolsearch::{GroupSpec, SourceTools, ToolDef, ToolGlobs, load_catalog_file};

use super::{CONNECTING, GatewayError};
use crate::upstream::{ConnectionOptions, Upstream, UpstreamEvent, UpstreamExecutor};

pub(super) enum Origin {
    /// A static catalog: its sources never change.
    Catalog(Vec<SourceTools>),
    /// An upstream: its last listed tools.
    Upstream {
        upstream: Arc<Upstream>,
        tools: Vec<ToolDef>,
    },
}

pub(super) struct SourceState {
    pub(super) config: SourceConfig,
    /// Its `tools` filter, compiled.
    filter: Filter,
    pub(super) origin: Origin,
    pub(super) status: Result<(), String>,
    pub(super) connecting: bool,
    /// Stops this source's supervisor (a child of the gateway's stop): cancelled when a
    /// reload removes or replaces the source.
    pub(super) stop: CancellationToken,
}

impl SourceState {
    /// A source as configured: a static catalog loaded now, or an upstream not yet connected
    /// (its supervisor connects it).
    pub(super) fn new(
        config: SourceConfig,
        events: &mpsc::UnboundedSender<UpstreamEvent>,
        gateway_stop: &CancellationToken,
    ) -> Result<Self, GatewayError> {
        let origin = match &config.kind {
            SourceKind::Catalog { path } => Origin::Catalog(load_catalog_source(&config, path)?),
            SourceKind::Stdio { .. } | SourceKind::Http { .. } => Origin::Upstream {
                upstream: Arc::new(
                    Upstream::new(&config.name, config.kind.clone(), events.clone()).with_options(
                        ConnectionOptions {
                            per_session: config.per_session,
                            sampling: config.sampling,
                            call_timeout: config.call_timeout,
                        },
                    ),
                ),
                tools: Vec::new(),
            },
        };
        let connecting = matches!(origin, Origin::Upstream { .. });
        let filter = Filter::new(&config).map_err(|message| GatewayError::Source {
            source_name: config.name.clone(),
            message,
        })?;
        Ok(Self {
            filter,
            config,
            origin,
            status: if connecting {
                Err(CONNECTING.to_owned())
            } else {
                Ok(())
            },
            connecting,
            stop: gateway_stop.child_token(),
        })
    }

    /// What a supervisor needs, for an upstream: its name, the upstream, its stop token.
    pub(super) fn supervised(&self) -> Option<(String, Arc<Upstream>, CancellationToken)> {
        match &self.origin {
            Origin::Upstream { upstream, .. } => Some((
                self.config.name.clone(),
                upstream.clone(),
                self.stop.clone(),
            )),
            Origin::Catalog(_) => None,
        }
    }

    /// The source as the engine sees it now.
    pub(super) fn sources(&self) -> Vec<SourceTools> {
        match &self.origin {
            Origin::Catalog(sources) => sources.clone(),
            Origin::Upstream { upstream, tools } => {
                let source = grouped_or_direct(&self.config, self.filter.kept(tools))
                    .with_executor(Arc::new(UpstreamExecutor(upstream.clone())))
                    .with_unavailable(self.status.clone().err())
                    .with_connecting(self.connecting);
                vec![source]
            }
        }
    }

    pub(super) fn tool_count(&self) -> usize {
        match &self.origin {
            Origin::Catalog(sources) => sources.iter().map(|s| s.tools.len()).sum(),
            Origin::Upstream { tools, .. } => {
                tools.iter().filter(|t| self.filter.keeps(&t.name)).count()
            }
        }
    }
}

/// A source's `tools` filter: which of the upstream's tools are offered, by their own names.
struct Filter {
    /// `None`: every tool.
    allow: Option<ToolGlobs>,
    deny: ToolGlobs,
}

impl Filter {
    fn new(config: &SourceConfig) -> Result<Self, String> {
        let f = &config.tools;
        Ok(Self {
            allow: f.allow.as_deref().map(ToolGlobs::new).transpose()?,
            deny: ToolGlobs::new(&f.deny)?,
        })
    }

    fn keeps(&self, tool: &str) -> bool {
        self.allow.as_ref().is_none_or(|a| a.matches(None, tool)) && !self.deny.matches(None, tool)
    }

    fn kept(&self, tools: &[ToolDef]) -> Vec<ToolDef> {
        tools
            .iter()
            .filter(|t| self.keeps(&t.name))
            .cloned()
            .collect()
    }
}

fn grouped_or_direct(config: &SourceConfig, tools: Vec<ToolDef>) -> SourceTools {
    let source = match (&config.group, config.direct) {
        (Some((name, description)), false) => {
            SourceTools::grouped(&config.name, GroupSpec::new(name, description), tools)
        }
        _ => SourceTools::direct(&config.name, tools),
    };
    source
        .with_instructions(config.instructions.clone())
        .with_codeact(&config.codeact)
}

pub(super) fn load_catalog_source(
    sc: &SourceConfig,
    path: &std::path::Path,
) -> Result<Vec<SourceTools>, GatewayError> {
    let mut file = load_catalog_file(path).map_err(|e| GatewayError::Source {
        source_name: sc.name.clone(),
        message: e.to_string(),
    })?;
    // An external tool waits for a host that completes it; the gateway's clients have no way
    // to: such a tool is discoverable here, and answers `not_executable` like any tool of a
    // static catalog.
    let mut external = 0usize;
    for def in file
        .groups
        .iter_mut()
        .flat_map(|(_, _, tools)| tools.iter_mut())
        .chain(file.direct.iter_mut())
    {
        external += usize::from(std::mem::take(&mut def.external));
    }
    if external > 0 {
        tracing::warn!(
            source = sc.name,
            external,
            "external tools of a catalog source have no host in the gateway: they answer not_executable"
        );
    }
    Ok(match &sc.group {
        // A group in the config gathers every tool of the file into it.
        Some(_) if !sc.direct => {
            let tools: Vec<ToolDef> = file
                .groups
                .into_iter()
                .flat_map(|(_, _, tools)| tools)
                .chain(file.direct)
                .collect();
            vec![grouped_or_direct(sc, tools)]
        }
        _ => file
            .into_sources(&sc.name, sc.direct)
            .into_iter()
            .map(|s| s.with_codeact(&sc.codeact))
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An external tool of a catalog source has no host in the gateway: it is served as a
    /// static catalog's tool (discoverable, `not_executable`), never as a deferred request.
    #[test]
    fn a_catalog_source_s_external_tools_are_served_as_static_tools() {
        let catalog = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../toolsearch/tests/fixtures/external.json");
        let text = format!(
            "[[source]]\nname = \"people\"\ncatalog = {:?}\n",
            catalog.display().to_string()
        );
        let config = crate::config::parse_config("t.toml", &text, std::path::Path::new("."))
            .expect("config");
        let sources = load_catalog_source(&config.sources[0], &catalog).expect("loads");
        let tools: Vec<(&str, bool)> = sources
            .iter()
            .flat_map(|s| &s.tools)
            .map(|t| (t.name.as_str(), t.external))
            .collect();
        assert_eq!(tools, [("ask_person", false), ("lookup", false)]);
    }
}
