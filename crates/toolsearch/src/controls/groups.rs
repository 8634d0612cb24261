//! `list_tool_groups`, and the `unknown_group` error that lists the current groups.

use serde::Serialize;
use serde_json::Value;

use super::args::{object, opt_uint};
use crate::catalog::{GroupEntry, NEEDS_LOGIN, View};
use crate::config::Settings;
use crate::error::ToolError;
use crate::page::{TooLarge, fit_page};

#[derive(Serialize)]
struct GroupLine<'a> {
    group: &'a str,
    description: &'a str,
    count: u32,
    /// Present only while a source of the group is down.
    #[serde(skip_serializing_if = "Option::is_none")]
    unavailable: Option<String>,
}

fn line(g: &GroupEntry, count: u32) -> String {
    let unavailable = (!g.unavailable.is_empty()).then(|| {
        if g.unavailable.iter().all(|(_, r)| r == NEEDS_LOGIN) {
            return NEEDS_LOGIN.to_owned();
        }
        let why: Vec<String> = g
            .unavailable
            .iter()
            .map(|(s, r)| format!("{s}: {r}"))
            .collect();
        format!(
            "calls to its tools fail until it is back ({})",
            why.join("; ")
        )
    });
    serde_json::to_string(&GroupLine {
        group: &g.name,
        description: &g.description,
        count,
        unavailable,
    })
    .unwrap_or_default()
}

pub(super) fn list_groups(
    view: View<'_>,
    settings: &Settings,
    arguments: &Value,
) -> Result<String, ToolError> {
    let obj = object(&settings.names.list_groups, arguments, &["offset"])?;
    let offset = opt_uint(obj, "offset")?.unwrap_or(0);
    let groups: Vec<(u32, &GroupEntry)> = view.groups().collect();
    let entries = groups
        .iter()
        .skip(offset)
        .map(|(i, g)| line(g, view.group_count(*i)));
    match fit_page(
        "{\"groups\":",
        entries,
        offset,
        settings.max_results,
        groups.len(),
        settings.max_search_bytes,
    ) {
        Ok(p) => Ok(p.json),
        Err(TooLarge { needed }) => {
            let g = groups[offset].1;
            Err(ToolError::entry_too_large(format!(
                    "The entry of group {:?} needs {needed} bytes, more than the {}-byte response budget.",
                    g.name, settings.max_search_bytes
                ),
            )
            .with("group", g.name.as_str()))
        }
    }
}

/// `unknown_group`: lists the current groups with their descriptions (as many as the response
/// budget holds; the message says when there are more).
pub(crate) fn unknown_group(view: View<'_>, settings: &Settings, group: &str) -> ToolError {
    let all: Vec<&GroupEntry> = view.groups().map(|(_, g)| g).collect();
    let base = |shown: usize| {
        let more = if shown < all.len() {
            format!(
                " Showing {shown} of {}; call {} to page through all.",
                all.len(),
                settings.names.list_groups
            )
        } else {
            String::new()
        };
        ToolError::unknown_group(format!("There is no group {group:?}. Use one of the current groups below and search again.{more}"),
        )
        .with("group", group)
    };
    let entries: Vec<Value> = all
        .iter()
        .map(|g| serde_json::json!({"group": g.name, "description": g.description}))
        .collect();
    let mut shown = all.len();
    loop {
        let e = base(shown).with("groups", Value::Array(entries[..shown].to_vec()));
        if shown == 0 || e.to_json().len() <= settings.max_search_bytes {
            return e;
        }
        // Shrink by the overshoot's share, at least one entry per step.
        let over = e.to_json().len() - settings.max_search_bytes;
        let avg = e.to_json().len() / shown.max(1);
        shown = shown.saturating_sub((over / avg.max(1)).max(1));
    }
}
