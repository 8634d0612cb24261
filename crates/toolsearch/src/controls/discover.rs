//! `discover_tools` and `list_tools` (discover with an empty query).

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::args::{object, opt_str, opt_uint, pointer};
use super::{Context, Searched};
use crate::catalog::{Directory, Schema, ToolId};
use crate::config::{SearchMethod, Settings};
use crate::error::ToolError;
use crate::page::{TooLarge, fit_page};
use crate::search::Query;
use crate::search::keyword::ALL_FIELDS;

/// Longest query, in characters.
pub const MAX_QUERY_CHARS: usize = 2048;
/// Largest response `detail: "auto"` expands into.
pub const AUTO_FULL_MAX_BYTES: usize = 8192;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Detail {
    Auto,
    Summary,
    Full,
}

#[derive(Serialize)]
struct SummaryEntry<'a> {
    group: &'a str,
    tool: &'a str,
    description: &'a str,
}

#[derive(Serialize)]
pub(super) struct FullEntry<'a> {
    group: &'a str,
    tool: &'a str,
    description: &'a str,
    parameters_json_schema: &'a RawValue,
    return_schema: Option<&'a RawValue>,
    instructions: &'a [String],
    /// Present only when CodeAct is enabled.
    #[serde(skip_serializing_if = "Option::is_none")]
    codeact_eligible: Option<bool>,
    /// The other fields its source listed it with (`title`, `annotations`, …), as they came.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    listed: Option<Map<String, Value>>,
}

pub(super) fn summary_json(dir: &Directory, id: ToolId) -> String {
    let t = dir.tool(id);
    serde_json::to_string(&SummaryEntry {
        group: &dir.group_of(id).name,
        tool: &t.name,
        description: t.summary(),
    })
    .unwrap_or_default()
}

/// Tool `id`'s full entry; `codeact` (CodeAct is enabled) adds `codeact_eligible`.
pub(super) fn full_entry(dir: &Directory, id: ToolId, codeact: bool) -> FullEntry<'_> {
    let t = dir.tool(id);
    FullEntry {
        group: &dir.group_of(id).name,
        tool: &t.name,
        description: &t.description,
        parameters_json_schema: t.input_schema_json.json(),
        return_schema: t.output_schema_json.as_ref().map(Schema::json),
        instructions: &t.instructions,
        codeact_eligible: codeact.then_some(t.codeact),
        listed: t.listed(),
    }
}

fn full_json(dir: &Directory, id: ToolId, codeact: bool) -> String {
    serde_json::to_string(&full_entry(dir, id, codeact)).unwrap_or_default()
}

fn parse_detail(
    value: Option<&str>,
    allowed: &[(&str, Detail)],
) -> Result<Option<Detail>, ToolError> {
    let Some(v) = value else { return Ok(None) };
    allowed
        .iter()
        .find(|(name, _)| *name == v)
        .map(|(_, d)| Some(*d))
        .ok_or_else(|| {
            let names: Vec<&str> = allowed.iter().map(|(n, _)| *n).collect();
            ToolError::invalid_request(
                "/detail",
                format!("detail must be one of: {}", names.join(", ")),
            )
        })
}

/// The `query` argument: a string of at most [`MAX_QUERY_CHARS`] characters (default `""`).
fn parse_query(obj: &serde_json::Map<String, Value>) -> Result<&str, ToolError> {
    let query = opt_str(obj, "query")?.unwrap_or("");
    let chars = query.chars().count();
    if chars > MAX_QUERY_CHARS {
        return Err(ToolError::invalid_request(
            "/query",
            format!(
                "query has {chars} characters; at most {MAX_QUERY_CHARS} are allowed. Use a few words"
            ),
        ));
    }
    Ok(query)
}

fn parse_limit(
    obj: &serde_json::Map<String, Value>,
    settings: &Settings,
) -> Result<Option<usize>, ToolError> {
    let max = settings.max_results;
    match opt_uint(obj, "limit") {
        Ok(Some(n)) if (1..=max).contains(&n) => Ok(Some(n)),
        Ok(None) => Ok(None),
        _ => Err(ToolError::invalid_request(
            &pointer("limit"),
            format!("limit must be an integer from 1 to {max} (max_results)"),
        )),
    }
}

/// `discover_tools`.
pub(super) fn discover(
    ctx: &Context<'_>,
    arguments: &Value,
) -> Result<(String, Searched), ToolError> {
    let settings = ctx.settings;
    let name = &settings.names.discover;
    let obj = object(
        name,
        arguments,
        &["query", "group", "detail", "limit", "offset"],
    )?;
    let query = parse_query(obj)?;
    let group = opt_str(obj, "group")?;
    let detail = parse_detail(
        opt_str(obj, "detail")?,
        &[
            ("auto", Detail::Auto),
            ("summary", Detail::Summary),
            ("full", Detail::Full),
        ],
    )?
    .unwrap_or(Detail::Auto);
    let limit = parse_limit(obj, settings)?;
    let offset = opt_uint(obj, "offset")?.unwrap_or(0);
    search_page(ctx, query, group, detail, limit, offset, ALL_FIELDS)
}

/// `search_proxy_tools` (toolproxy surface): full entries only, keywords matched on names,
/// descriptions and group names.
pub(super) fn search_proxy(
    ctx: &Context<'_>,
    arguments: &Value,
) -> Result<(String, Searched), ToolError> {
    let settings = ctx.settings;
    let name = &settings.names.search_proxy;
    let obj = object(name, arguments, &["query", "group", "limit", "offset"])?;
    let query = parse_query(obj)?;
    let group = opt_str(obj, "group")?;
    let limit = parse_limit(obj, settings)?;
    let offset = opt_uint(obj, "offset")?.unwrap_or(0);
    search_page(ctx, query, group, Detail::Full, limit, offset, PROXY_FIELDS)
}

/// Fields `search_proxy_tools` matches: name, description, group.
const PROXY_FIELDS: u8 = 0b111;

/// `list_tools`.
pub(super) fn list(ctx: &Context<'_>, arguments: &Value) -> Result<String, ToolError> {
    let settings = ctx.settings;
    let name = &settings.names.list;
    let obj = object(name, arguments, &["group", "detail", "limit", "offset"])?;
    let group = opt_str(obj, "group")?;
    let detail = parse_detail(
        opt_str(obj, "detail")?,
        &[("summary", Detail::Summary), ("full", Detail::Full)],
    )?
    .unwrap_or(Detail::Summary);
    let limit = parse_limit(obj, settings)?;
    let offset = opt_uint(obj, "offset")?.unwrap_or(0);
    search_page(ctx, "", group, detail, limit, offset, ALL_FIELDS).map(|(json, _)| json)
}

fn search_page(
    ctx: &Context<'_>,
    query: &str,
    group: Option<&str>,
    detail: Detail,
    limit: Option<usize>,
    offset: usize,
    fields: u8,
) -> Result<(String, Searched), ToolError> {
    let (dir, settings) = (ctx.dir, ctx.settings);
    let view = ctx.view();
    let (scope, scope_group) = match group {
        None => (0..dir.tools().len() as ToolId, None),
        Some(g) => match view.group_index(g) {
            Some(i) => (dir.groups()[i as usize].tools.clone(), Some(i)),
            None => return Err(super::groups::unknown_group(view, settings, g)),
        },
    };
    let down = unavailable_json(view, scope_group);
    let max = settings.max_results;
    let summary_limit = limit.unwrap_or(10.min(max));
    let full_limit = limit.unwrap_or(5.min(max));
    let need = offset.saturating_add(summary_limit.max(full_limit));
    // A query without words (empty: browse) is answered by the keyword rules.
    let method = if crate::text::words(query).is_empty() {
        SearchMethod::Keyword
    } else {
        settings.method
    };
    let q = Query::new(query, method, need)
        .within(scope)
        .fields(fields)
        .exact_first()
        .visible_to(ctx.visible);
    let dense = matches!(method, SearchMethod::Semantic | SearchMethod::Hybrid);
    if dense && ctx.semantic.is_none() {
        return Err(unavailable(format!(
            "search method {:?} has no embedding model in this engine",
            method.as_str()
        )));
    }
    let ranked = ctx
        .searcher()
        .rank(&q)
        .map_err(|e| unavailable(e.to_string()))?;
    if ranked.no_keywords && !query.trim().is_empty() && ranked.total == 0 {
        return Err(ToolError::invalid_request(
            "/query",
            format!(
                "the query {:?} has no words and is no tool's exact name; search with words, or an empty query to browse",
                query.trim()
            ),
        ));
    }
    let page_ids: Vec<ToolId> = ranked.hits.iter().skip(offset).map(|h| h.tool).collect();
    let budget = settings.max_search_bytes;
    let summary = |ids: &[ToolId]| {
        page(
            dir,
            "summary",
            &down,
            ids.iter().map(|&id| summary_json(dir, id)),
            ids,
            offset,
            summary_limit,
            ranked.total,
            budget,
        )
    };
    let full = |ids: &[ToolId], limit: usize, budget: usize| {
        page(
            dir,
            "full",
            &down,
            ids.iter()
                .map(|&id| full_json(dir, id, settings.codeact.enabled)),
            ids,
            offset,
            limit,
            ranked.total,
            budget,
        )
    };
    let listed_n = match detail {
        Detail::Full => full_limit,
        _ => summary_limit,
    };
    let searched = Searched {
        method,
        found: ranked.total > 0,
        query: query.to_owned(),
        listed: page_ids
            .iter()
            .take(listed_n)
            .map(|&id| dir.tool(id).canonical.clone())
            .collect(),
    };
    let json = match detail {
        Detail::Summary => summary(&page_ids),
        Detail::Full => full(&page_ids, full_limit, budget),
        Detail::Auto => {
            let single_exact =
                ranked.total == 1 && offset == 0 && ranked.hits.first().is_some_and(|h| h.exact);
            let expanded = single_exact
                .then(|| full(&page_ids, 1, budget.min(AUTO_FULL_MAX_BYTES)).ok())
                .flatten();
            expanded.map_or_else(|| summary(&page_ids), Ok)
        }
    }?;
    Ok((json, searched))
}

/// The search failed for a reason the model cannot fix (no model, an endpoint down).
fn unavailable(message: String) -> ToolError {
    ToolError::search_unavailable(format!(
        "{message}; search with another method is not possible from here, tell the user"
    ))
}

#[derive(Serialize)]
struct Unavailable<'a> {
    group: &'a str,
    reason: String,
}

/// `,"unavailable":[{"group","reason"}]` for the groups in scope (one group, or every group
/// the caller sees) that have a source unavailable now (still connecting, or down); empty when
/// none has. The reason names each such source: `"fs: still connecting"`.
fn unavailable_json(view: crate::catalog::View<'_>, scope: Option<u32>) -> String {
    let down: Vec<Unavailable<'_>> = view
        .groups()
        .filter(|(i, g)| scope.is_none_or(|s| s == *i) && !g.unavailable.is_empty())
        .map(|(_, g)| Unavailable {
            group: &g.name,
            reason: g
                .unavailable
                .iter()
                .map(|(source, why)| format!("{source}: {why}"))
                .collect::<Vec<_>>()
                .join("; "),
        })
        .collect();
    if down.is_empty() {
        return String::new();
    }
    format!(
        ",\"unavailable\":{}",
        serde_json::to_string(&down).unwrap_or_default()
    )
}

#[allow(clippy::too_many_arguments)]
fn page(
    dir: &Directory,
    detail: &str,
    unavailable: &str,
    entries: impl Iterator<Item = String>,
    ids: &[ToolId],
    offset: usize,
    limit: usize,
    total: usize,
    budget: usize,
) -> Result<String, ToolError> {
    let head = format!("{{\"detail\":\"{detail}\"{unavailable},\"tools\":");
    match fit_page(&head, entries, offset, limit, total, budget) {
        Ok(p) => Ok(p.json),
        Err(TooLarge { needed }) => Err(entry_too_large(dir, ids[0], needed, budget, detail)),
    }
}

pub(super) fn entry_too_large(
    dir: &Directory,
    id: ToolId,
    needed: usize,
    budget: usize,
    detail: &str,
) -> ToolError {
    let t = dir.tool(id);
    let group = &dir.group_of(id).name;
    ToolError::entry_too_large(format!(
            "The {detail} entry of tool {:?} in group {group:?} needs {needed} bytes, more than the {budget}-byte response budget, so it cannot be returned (nothing is truncated). {}",
            t.name,
            if detail == "full" { "Ask for detail \"summary\", or pick another tool." } else { "Pick another tool." }
        ),
    )
    .with("group", group.as_str())
    .with("tool", t.name.as_str())
    .with("bytes", needed)
    .with("max_search_bytes", budget)
}
