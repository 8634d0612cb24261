//! `describe_tool`: one full definition by group and exact local name.

use serde::Serialize;
use serde_json::Value;

use super::args::{object, req_str};
use super::discover::{FullEntry, entry_too_large, full_entry};
use crate::catalog::{NEEDS_LOGIN, ToolId, View, login_hint};
use crate::config::Settings;
use crate::error::ToolError;

#[derive(Serialize)]
struct Described<'a> {
    detail: &'static str,
    tool: FullEntry<'a>,
}

pub(super) fn describe(
    view: View<'_>,
    settings: &Settings,
    arguments: &Value,
) -> Result<String, ToolError> {
    let dir = view.dir();
    let obj = object(&settings.names.describe, arguments, &["group", "tool"])?;
    let group = req_str(obj, "group")?;
    let tool = req_str(obj, "tool")?;
    let id = resolve(view, settings, group, tool)?;
    let json = serde_json::to_string(&Described {
        detail: "full",
        tool: full_entry(dir, id, settings.codeact.enabled),
    })
    .unwrap_or_default();
    if json.len() > settings.max_search_bytes {
        return Err(entry_too_large(
            dir,
            id,
            json.len(),
            settings.max_search_bytes,
            "full",
        ));
    }
    Ok(json)
}

/// Resolves `(group, tool)` in the current snapshot as the caller sees it, with the
/// model-facing errors (a hidden tool answers exactly as one that does not exist).
pub(crate) fn resolve(
    view: View<'_>,
    settings: &Settings,
    group: &str,
    tool: &str,
) -> Result<ToolId, ToolError> {
    let dir = view.dir();
    let Some(g) = view.group_index(group) else {
        return Err(super::groups::unknown_group(view, settings, group));
    };
    if let Some(id) = view.tool_id(group, tool) {
        return Ok(id);
    }
    let entry = &dir.groups()[g as usize];
    if let Some((source, _)) = entry.unavailable.first()
        && entry.unavailable.iter().all(|(_, r)| r == NEEDS_LOGIN)
    {
        // Its tools are not known until a person logs in to its source.
        return Err(ToolError::needs_auth(format!(
            "Group {group:?} lists no tool named {tool:?} right now: its source {source} needs a login before its tools are known. Nothing ran."
        ))
        .with("hint", login_hint(source))
        .with("upstream", source.clone()));
    }
    if !entry.unavailable.is_empty() {
        // The tool may belong to a source that is connecting or down: say that, not "unknown".
        let why: Vec<String> = entry
            .unavailable
            .iter()
            .map(|(s, r)| format!("{s}: {r}"))
            .collect();
        return Err(ToolError::unavailable(format!(
                "Group {group:?} lists no tool named {tool:?} right now, and a source of it is unavailable ({}); its tools appear when it is back. Nothing ran; try again later, or call {} with group {group:?} to see its current tools.",
                why.join("; "),
                settings.names.discover
            ),
        )
        .with("group", group)
        .with("tool", tool));
    }
    let range = entry.tools.clone();
    let hint = range
        .clone()
        .filter(|id| view.sees(*id))
        .map(|id| dir.tool(id))
        .find(|t| t.canonical == tool || t.name.eq_ignore_ascii_case(tool))
        .map(|t| format!(" Did you mean the local name {:?}?", t.name))
        .unwrap_or_default();
    Err(ToolError::unknown_tool(format!(
            "Group {group:?} has no tool named {tool:?} (names are exact local names).{hint} Call {} with group {group:?} to find its current tools, then use one of those names.",
            settings.names.discover
        ),
    )
    .with("group", group)
    .with("tool", tool))
}
