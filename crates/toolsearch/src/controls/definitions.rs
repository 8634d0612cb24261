//! The controls as a model sees them (name, description, input schema) and the generated
//! instructions, with the configured names filled in.

use serde_json::{Value, json};

use super::discover::MAX_QUERY_CHARS;
use crate::catalog::Directory;
use crate::config::{Settings, Surface};

/// One model-facing tool definition (a control or a direct tool).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolDefinition {
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// JSON Schema of the arguments.
    pub input_schema: Value,
    /// JSON Schema of the structured result, when declared.
    pub output_schema: Option<Value>,
}

impl ToolDefinition {
    /// A definition without an output schema.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            input_schema,
            output_schema: None,
        }
    }
}

fn def(name: &str, description: String, input_schema: Value) -> ToolDefinition {
    ToolDefinition::new(name, description, input_schema)
}

/// The controls of the configured surface; none when no grouped tool exists (and no grouped
/// source is still connecting).
pub fn control_definitions(settings: &Settings, dir: &Directory) -> Vec<ToolDefinition> {
    if !dir.offers_controls() {
        return Vec::new();
    }
    match settings.surface {
        Surface::Toolsearch => toolsearch_controls(settings),
        Surface::Toolproxy => toolproxy_controls(settings, dir),
        Surface::Capabilities => capabilities_controls(settings, dir),
    }
}

fn capabilities_controls(settings: &Settings, dir: &Directory) -> Vec<ToolDefinition> {
    let n = &settings.names;
    let servers: Vec<String> = dir
        .groups()
        .iter()
        .map(|g| format!("{} ({})", g.name, g.description))
        .collect();
    vec![
        def(
            &n.search_capabilities,
            format!(
                "Search the capabilities you can use: tools of the servers {} — and skills \
                 (written instructions for tasks). Describe what you need to do in a few words. \
                 Returns the best tools grouped by server, each with its toolId and inputSchema, \
                 and the best skills; call a tool with {}, read a skill with {}.",
                servers.join(", "),
                n.invoke,
                n.get_skill
            ),
            json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "maxLength": MAX_QUERY_CHARS, "description": "What you need to do, in a few words."},
                    "topKTools": {"type": "integer", "description": "How many tools (default 5, at most 50)."},
                    "topKSkills": {"type": "integer", "description": "How many skills (default 3, at most 50)."},
                    "method": {"type": "string", "enum": ["bm25", "semantic", "hybrid", "keyword"], "description": format!("Retrieval method (default {}).", settings.method)}
                },
                "required": ["query"],
                "additionalProperties": false
            }),
        ),
        def(
            &n.invoke,
            format!(
                "Call a tool found by {}: its toolId, and args matching its inputSchema.",
                n.search_capabilities
            ),
            json!({
                "type": "object",
                "properties": {
                    "toolId": {"type": "string", "description": "The toolId from the search results."},
                    "args": {"type": "object", "description": "Arguments matching the tool's inputSchema ({} for none)."}
                },
                "required": ["toolId"]
            }),
        ),
        def(
            &n.get_skill,
            format!(
                "Read the full instructions of a skill found by {}.",
                n.search_capabilities
            ),
            json!({
                "type": "object",
                "properties": {"skillId": {"type": "string", "description": "The skillId from the search results."}},
                "required": ["skillId"],
                "additionalProperties": false
            }),
        ),
    ]
}

fn toolproxy_controls(settings: &Settings, dir: &Directory) -> Vec<ToolDefinition> {
    let n = &settings.names;
    let max = settings.max_results;
    let groups: Vec<&str> = dir.groups().iter().map(|g| g.name.as_str()).collect();
    vec![
        def(
            &n.search_proxy,
            format!(
                "Search the tool catalog by keywords (matched on tool names, descriptions and group names). \
                 Returns full definitions, best first, with each tool's parameter schema; call one with {}.",
                n.call_proxy
            ),
            json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "maxLength": MAX_QUERY_CHARS, "description": "Words describing the tool you need, or its exact name."},
                    "group": {"type": ["string", "null"], "enum": groups.iter().map(|g| Value::from(*g)).chain([Value::Null]).collect::<Vec<_>>(), "description": "Only search this group."},
                    "limit": {"type": ["integer", "null"], "minimum": 1, "maximum": max, "description": format!("Entries per page (1 to {max}, default {}).", 5.min(max))},
                    "offset": {"type": "integer", "minimum": 0, "default": 0, "description": "Where the page starts; pass the previous response's next_offset."}
                },
                "required": ["query"],
                "additionalProperties": false
            }),
        ),
        def(
            &n.call_proxy,
            "Call a catalog tool by group and exact local name, with arguments matching its complete parameter schema; they are validated before the tool runs.".to_owned(),
            json!({
                "type": "object",
                "properties": {
                    "group": {"type": "string", "enum": groups, "description": "The tool's group."},
                    "tool": {"type": "string", "description": "The tool's exact local name within the group."},
                    "arguments": {"type": "object", "description": "Arguments matching the tool's parameter schema."}
                },
                "required": ["group", "tool", "arguments"],
                "additionalProperties": false
            }),
        ),
    ]
}

fn toolsearch_controls(settings: &Settings) -> Vec<ToolDefinition> {
    let n = &settings.names;
    let max = settings.max_results;
    let group_prop = |what: &str| json!({"type": ["string", "null"], "description": what});
    let limit = json!({"type": ["integer", "null"], "minimum": 1, "maximum": max,
        "description": format!("Entries per page (1 to {max}). Default: {} for summaries, {} for full definitions.", 10.min(max), 5.min(max))});
    let offset = json!({"type": "integer", "minimum": 0, "default": 0,
        "description": "Where the page starts; pass the previous response's next_offset."});
    vec![
        def(
            &n.discover,
            format!(
                "Search the tool catalog by keywords or an exact tool name. Returns matching tools best first: \
                 summaries (group, tool, description), or full definitions with the parameter schema. \
                 Use {describe} on a summary before calling it with {call}. Follow next_offset for more.",
                describe = n.describe,
                call = n.call
            ),
            json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "maxLength": MAX_QUERY_CHARS, "default": "",
                        "description": "Words describing the tool you need, or its exact name. Empty browses every tool in scope."},
                    "group": group_prop(&format!("Only search this group (names from {}).", n.list_groups)),
                    "detail": {"type": "string", "enum": ["auto", "summary", "full"], "default": "auto",
                        "description": "auto: the full definition when the query is exactly one tool's name, else summaries."},
                    "limit": limit,
                    "offset": offset
                },
                "additionalProperties": false
            }),
        ),
        def(
            &n.describe,
            format!("Get the full current definition of one tool (its parameter schema, return schema and instructions) by group and exact local name, as {} returned them.", n.discover),
            json!({
                "type": "object",
                "properties": {
                    "group": {"type": "string", "description": "The tool's group."},
                    "tool": {"type": "string", "description": "The tool's exact local name within the group."}
                },
                "required": ["group", "tool"],
                "additionalProperties": false
            }),
        ),
        def(
            &n.call,
            "Call a catalog tool by group and exact local name. arguments must match the tool's complete parameter schema; they are validated before the tool runs.".to_owned(),
            json!({
                "type": "object",
                "properties": {
                    "group": {"type": "string", "description": "The tool's group."},
                    "tool": {"type": "string", "description": "The tool's exact local name within the group."},
                    "arguments": {"type": "object", "description": "Arguments matching the tool's parameter schema."}
                },
                "required": ["group", "tool", "arguments"],
                "additionalProperties": false
            }),
        ),
        def(
            &n.list,
            "List tools by canonical name, in one group or all, page by page.".to_owned(),
            json!({
                "type": "object",
                "properties": {
                    "group": group_prop("Only list this group."),
                    "detail": {"type": "string", "enum": ["summary", "full"], "default": "summary",
                        "description": "summary entries, or full definitions."},
                    "limit": limit,
                    "offset": offset
                },
                "additionalProperties": false
            }),
        ),
        def(
            &n.list_groups,
            "List the tool groups (domains) with their descriptions and tool counts, by name.".to_owned(),
            json!({
                "type": "object",
                "properties": {"offset": offset},
                "additionalProperties": false
            }),
        ),
    ]
}

/// The generated instructions for the model; `None` when the controls are not offered.
pub fn instructions(settings: &Settings, dir: &Directory) -> Option<String> {
    if !dir.offers_controls() {
        return None;
    }
    let n = &settings.names;
    match settings.surface {
        Surface::Toolsearch => {}
        Surface::Capabilities => return None,
        Surface::Toolproxy => {
            return Some(format!(
                "Tools are grouped by domain and reached through two controls.\n\
                 1. Call {search} with a few words (optionally a group) to get matching tools with their full definitions.\n\
                 2. Call {call} with the exact group, the exact local name, and an arguments object matching the tool's complete parameter schema.\n\
                 3. Reuse definitions you already have; do not search again before every call.\n\
                 4. When a response has a next_offset, pass it as offset to see more. When a tool is reported unknown or unavailable, search again: the catalog may have changed.\n\
                 5. When a call fails with an uncertain outcome, inspect the current state before retrying anything that changes data; never blindly repeat a mutation.",
                search = n.search_proxy,
                call = n.call_proxy,
            ));
        }
    }
    Some(format!(
        "Tools are grouped by domain and reached through a few controls.\n\
         1. Pick a group ({list_groups} lists them) and call {discover} with a few words, or the tool's exact name.\n\
         2. Before calling a tool found as a summary, call {describe} for its full definition, unless you already know its current full definition.\n\
         3. Call it with {call}: the exact group, the exact local name, and an arguments object matching its complete parameter schema.\n\
         4. Reuse schemas you already know; do not search again before every call.\n\
         5. When a response has a next_offset, pass it as offset to see more. When a tool is reported unknown or unavailable, search again: the catalog may have changed.\n\
         6. When a call fails with an uncertain outcome, inspect the current state before retrying anything that changes data; never blindly repeat a mutation.",
        list_groups = n.list_groups,
        discover = n.discover,
        describe = n.describe,
        call = n.call,
    ))
}
