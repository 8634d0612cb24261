//! The config file as written: plain serde structs, unknown keys rejected. [`super::file`]
//! validates them into the runtime types.

use std::collections::BTreeMap;

use serde::Deserialize;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConfig {
    pub(super) surface: Option<String>,
    pub(super) skills: Option<Vec<String>>,
    pub(super) search: Option<RawSearch>,
    pub(super) names: Option<RawNames>,
    pub(super) limits: Option<RawLimits>,
    pub(super) codeact: Option<RawCodeAct>,
    #[serde(default)]
    pub(super) source: Vec<RawSource>,
    #[serde(default)]
    pub(super) client: Vec<RawClient>,
    pub(super) auth: Option<RawAuth>,
    #[serde(default)]
    pub(super) policy: Vec<RawPolicy>,
    pub(super) approval: Option<RawApproval>,
    pub(super) audit: Option<RawAudit>,
    pub(super) telemetry: Option<RawTelemetry>,
    pub(super) reload: Option<RawReload>,
    pub(super) learning: Option<RawLearning>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawClient {
    pub(super) name: Option<String>,
    pub(super) token: Option<String>,
    pub(super) claims: Option<BTreeMap<String, String>>,
    pub(super) admin: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAuth {
    pub(super) jwt: Option<RawJwt>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawJwt {
    pub(super) jwks: Option<String>,
    pub(super) issuer: Option<String>,
    pub(super) audience: Option<String>,
    pub(super) algorithms: Option<Vec<String>>,
    pub(super) leeway_s: Option<i64>,
    pub(super) authorization_servers: Option<Vec<String>>,
    pub(super) admin_claim: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPolicy {
    #[serde(rename = "match")]
    pub(super) when: Option<RawMatch>,
    pub(super) allow: Option<Vec<String>>,
    pub(super) deny: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMatch {
    pub(super) client: Option<String>,
    pub(super) claims: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawApproval {
    pub(super) tools: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawAudit {
    pub(super) file: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRate {
    pub(super) calls_per_minute: Option<f64>,
    pub(super) burst: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLimits {
    pub(super) call_timeout_ms: Option<i64>,
    pub(super) max_tool_calls: Option<i64>,
    pub(super) max_http_sessions: Option<i64>,
    pub(super) http_session_idle_s: Option<i64>,
    pub(super) http_header_timeout_ms: Option<i64>,
    pub(super) http_idle_timeout_s: Option<i64>,
    pub(super) startup_wait_ms: Option<i64>,
    pub(super) rate: Option<RawRate>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSearch {
    pub(super) method: Option<String>,
    pub(super) max_results: Option<i64>,
    pub(super) max_search_bytes: Option<i64>,
    pub(super) bm25: Option<RawBm25>,
    pub(super) semantic: Option<RawSemantic>,
    pub(super) hybrid: Option<RawHybrid>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSemantic {
    pub(super) model: Option<String>,
    pub(super) url: Option<String>,
    pub(super) api_key_env: Option<String>,
    pub(super) cache_dir: Option<String>,
    pub(super) min_similarity: Option<f64>,
    pub(super) max_tokens: Option<i64>,
    pub(super) sentences: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHybrid {
    pub(super) fusion: Option<String>,
    pub(super) semantic_weight: Option<f64>,
    pub(super) rrf_k: Option<f64>,
    pub(super) confidence_scale: Option<f64>,
    pub(super) confidence_slope: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawBm25 {
    pub(super) k1: Option<f64>,
    pub(super) b: Option<f64>,
    pub(super) name: Option<f64>,
    pub(super) description: Option<f64>,
    pub(super) parameters: Option<f64>,
    pub(super) group: Option<f64>,
    pub(super) b_name: Option<f64>,
    pub(super) b_description: Option<f64>,
    pub(super) b_parameters: Option<f64>,
    pub(super) b_group: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawNames {
    pub(super) discover: Option<String>,
    pub(super) describe: Option<String>,
    pub(super) call: Option<String>,
    pub(super) list: Option<String>,
    pub(super) list_groups: Option<String>,
    pub(super) search_proxy: Option<String>,
    pub(super) call_proxy: Option<String>,
    pub(super) search_capabilities: Option<String>,
    pub(super) invoke: Option<String>,
    pub(super) get_skill: Option<String>,
    pub(super) run_code: Option<String>,
    pub(super) run_program: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCodeAct {
    pub(super) enabled: Option<bool>,
    pub(super) programs: Option<Vec<String>>,
    pub(super) timeout_ms: Option<i64>,
    pub(super) max_memory_mb: Option<i64>,
    pub(super) max_calls: Option<i64>,
}

/// `codeact` of a `[[source]]`: every tool (`true`), none (`false`), or the named ones.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum RawCodeActTools {
    All(bool),
    Tools(Vec<String>),
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSource {
    pub(super) name: Option<String>,
    pub(super) command: Option<String>,
    pub(super) args: Option<Vec<String>>,
    pub(super) env: Option<BTreeMap<String, String>>,
    pub(super) inherit_env: Option<Vec<String>>,
    pub(super) cwd: Option<String>,
    pub(super) url: Option<String>,
    pub(super) transport: Option<String>,
    pub(super) auth: Option<super::source_auth::RawAuth>,
    pub(super) headers: Option<BTreeMap<String, String>>,
    pub(super) context_headers: Option<BTreeMap<String, String>>,
    pub(super) catalog: Option<String>,
    pub(super) group: Option<String>,
    pub(super) description: Option<String>,
    pub(super) instructions: Option<Vec<String>>,
    pub(super) presentation: Option<String>,
    pub(super) codeact: Option<RawCodeActTools>,
    pub(super) per_session: Option<bool>,
    pub(super) sampling: Option<bool>,
    pub(super) tools: Option<RawToolFilter>,
    pub(super) call_timeout_ms: Option<i64>,
}

/// `tools` of a `[[source]]`: globs over the upstream's own tool names.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawToolFilter {
    pub(super) allow: Option<Vec<String>>,
    pub(super) deny: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTelemetry {
    pub(super) otlp_endpoint: Option<String>,
    pub(super) service_name: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawReload {
    pub(super) watch: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLearning {
    pub(super) enabled: Option<bool>,
    pub(super) file: Option<String>,
}
