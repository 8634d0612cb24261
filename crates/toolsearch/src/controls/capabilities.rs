//! The `capabilities` surface's discovery: `search_capabilities` and `get_skill_content`
//! (`invoke_tool` is a call, answered by the engine's call path).

use serde_json::{Map, Value, json};

use super::args::{object, pointer};
use super::discover::MAX_QUERY_CHARS;
use super::{Context, Searched};
use crate::catalog::Directory;
use crate::config::{SearchMethod, Settings};
use crate::error::ToolError;
use crate::search::{Hit, Query, Searcher};
use crate::skills::Skills;

/// Default `topKTools`.
pub const TOP_K_TOOLS: usize = 5;
/// Default `topKSkills`.
pub const TOP_K_SKILLS: usize = 3;
/// Largest `topKTools` / `topKSkills`; larger values are clamped to it.
pub const TOP_K_MAX: usize = 50;

/// A `topK…` value: a positive integer (or a string of digits spelling one, as models send
/// it), clamped to [`TOP_K_MAX`]; anything else (missing, 0, negative, boolean, fractional,
/// another string) is the default — never an error.
pub fn top_k(v: Option<&Value>, default: usize) -> usize {
    let n = match v {
        Some(Value::String(s)) => super::args::digits(s).and_then(|n| i64::try_from(n).ok()),
        other => other.and_then(Value::as_i64),
    };
    match n {
        Some(n) if n > 0 => (n as usize).min(TOP_K_MAX),
        _ => default,
    }
}

fn score(s: f64) -> Value {
    json!((s * 10_000.0).round() / 10_000.0)
}

fn unavailable(e: impl std::fmt::Display) -> ToolError {
    ToolError::search_unavailable(format!("{e}; tell the user"))
}

/// `search_capabilities {query, topKTools?, topKSkills?, method?}`.
pub(super) fn search_capabilities(
    ctx: &Context<'_>,
    arguments: &Value,
) -> Result<(String, Searched), ToolError> {
    let (dir, settings) = (ctx.dir, ctx.settings);
    let name = &settings.names.search_capabilities;
    let obj = object(
        name,
        arguments,
        &["query", "topKTools", "topKSkills", "method"],
    )?;
    let query = match obj.get("query") {
        Some(Value::String(q)) if !q.trim().is_empty() => q.trim(),
        _ => {
            return Err(ToolError::invalid_request(
                &pointer("query"),
                "query must be a non-empty string: a few words about what you need to do",
            ));
        }
    };
    if query.chars().count() > MAX_QUERY_CHARS {
        return Err(ToolError::invalid_request(
            &pointer("query"),
            format!("query must be at most {MAX_QUERY_CHARS} characters"),
        ));
    }
    let method = match obj.get("method") {
        None | Some(Value::Null) => settings.method,
        Some(Value::String(m)) => SearchMethod::parse(m).ok_or_else(|| {
            ToolError::invalid_request(
                &pointer("method"),
                format!("method {m:?} is unknown; use bm25, semantic, hybrid or keyword"),
            )
        })?,
        Some(_) => {
            return Err(ToolError::invalid_request(
                &pointer("method"),
                "method must be a string: bm25, semantic, hybrid or keyword",
            ));
        }
    };
    let k_tools = top_k(obj.get("topKTools"), TOP_K_TOOLS);
    let k_skills = top_k(obj.get("topKSkills"), TOP_K_SKILLS);
    let tools = ctx
        .searcher()
        .rank(&Query::new(query, method, k_tools).visible_to(ctx.visible))
        .map_err(unavailable)?
        .hits;
    let skill_hits: Vec<Value> = match ctx.skills.filter(|(s, _)| !s.all().is_empty()) {
        None => Vec::new(),
        Some((s, index)) => Searcher::new(s, index, settings, ctx.semantic)
            .rank(&Query::new(query, method, k_skills))
            .map_err(unavailable)?
            .hits
            .into_iter()
            .filter_map(|h| {
                let skill = s.by_id(h.tool)?;
                Some(json!({"skillId": skill.name, "score": score(h.score), "description": skill.description}))
            })
            .collect(),
    };
    let mut searched = Searched {
        method,
        found: !tools.is_empty() || !skill_hits.is_empty(),
        query: query.to_owned(),
        listed: Vec::new(),
    };
    // Drop the lowest-ranked tools until the response fits the byte budget.
    let mut n = tools.len();
    loop {
        let out = render(dir, &tools[..n], &skill_hits);
        if out.len() <= settings.max_search_bytes || n == 0 {
            searched.listed = tools[..n]
                .iter()
                .map(|h| dir.tool(h.tool).canonical.clone())
                .collect();
            return Ok((out, searched));
        }
        n -= 1;
    }
}

/// The response: tool hits grouped by server (groups in the order of their best hit).
fn render(dir: &Directory, tools: &[Hit], skills: &[Value]) -> String {
    let mut groups: Vec<(u32, Vec<Value>)> = Vec::new();
    for h in tools {
        let t = dir.tool(h.tool);
        let hit = json!({
            "toolId": t.canonical,
            "score": score(h.score),
            "description": t.description,
            "inputSchema": Value::Object(t.input_schema()),
        });
        match groups.iter_mut().find(|(g, _)| *g == t.group) {
            Some((_, hits)) => hits.push(hit),
            None => groups.push((t.group, vec![hit])),
        }
    }
    let groups: Vec<Value> = groups
        .into_iter()
        .map(|(g, hits)| json!({"server": {"name": dir.groups()[g as usize].name}, "hits": hits}))
        .collect();
    json!({"tools": {"groups": groups}, "skills": skills}).to_string()
}

/// `get_skill_content {skillId}` → the skill's body.
pub(super) fn get_skill(
    settings: &Settings,
    skills: Option<&Skills>,
    arguments: &Value,
) -> Result<String, ToolError> {
    let name = &settings.names.get_skill;
    let obj = object(name, arguments, &["skillId"])?;
    let Some(Value::String(id)) = obj.get("skillId") else {
        return Err(ToolError::invalid_request(
            &pointer("skillId"),
            "skillId must be a string: a skillId returned by search_capabilities",
        ));
    };
    match skills.and_then(|s| s.get(id)) {
        Some(skill) => Ok(skill.body.clone()),
        None => Err(ToolError::unknown_skill(format!(
            "There is no skill {id:?}; use a skillId that {} returned.",
            settings.names.search_capabilities
        ))
        .with("skillId", id.as_str())),
    }
}

/// The arguments `invoke_tool` forwards: `args` when it is an object; when it is missing or
/// null, every top-level key but `toolId` and `args` (the flattened form models often send).
pub(crate) fn invoke_args(
    control: &str,
    obj: &Map<String, Value>,
) -> Result<Map<String, Value>, ToolError> {
    let bad = || {
        ToolError::invalid_request(
            &pointer("args"),
            format!("{control}: args must be a JSON object matching the tool's inputSchema"),
        )
    };
    match obj.get("args") {
        Some(Value::Object(m)) => Ok(m.clone()),
        // Models often send the arguments object as its JSON text.
        Some(Value::String(s)) => super::args::object_text(s).ok_or_else(bad),
        None | Some(Value::Null) => Ok(obj
            .iter()
            .filter(|(k, _)| *k != "toolId" && *k != "args")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()),
        Some(_) => Err(bad()),
    }
}
