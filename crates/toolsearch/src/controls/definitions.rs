//! The controls as a model sees them (name, description, input schema) and the generated
//! instructions, with the configured names filled in.

use serde_json::{Map, Value, json};

use super::discover::MAX_QUERY_CHARS;
use crate::catalog::{Directory, View};
use crate::codeact::MAX_CODE_CHARS;
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
    /// The other fields its source listed it with (`title`, `annotations`, `icons`, `_meta`),
    /// as they came; `None` for the controls.
    pub listed: Option<Map<String, Value>>,
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
            listed: None,
        }
    }
}

fn def(name: &str, description: String, input_schema: Value) -> ToolDefinition {
    ToolDefinition::new(name, description, input_schema)
}

/// The controls of the configured surface; none when no grouped tool exists (and no grouped
/// source is still connecting).
pub fn control_definitions(settings: &Settings, dir: &Directory) -> Vec<ToolDefinition> {
    control_definitions_for(settings, View::new(dir, None))
}

/// The controls as one caller sees them: the toolproxy group `enum` and the capabilities
/// server list name only the groups it can see.
pub fn control_definitions_for(settings: &Settings, view: View<'_>) -> Vec<ToolDefinition> {
    if !view.dir().offers_controls() {
        return Vec::new();
    }
    let mut out = match settings.surface {
        Surface::Toolsearch => toolsearch_controls(settings),
        Surface::Toolproxy => toolproxy_controls(settings, view),
        Surface::Capabilities => capabilities_controls(settings, view),
    };
    out.extend(codeact_controls(settings));
    out
}

/// `run_code`, and `run_program` when program folders are configured (CodeAct enabled).
fn codeact_controls(settings: &Settings) -> Vec<ToolDefinition> {
    let c = &settings.codeact;
    if !c.enabled {
        return Vec::new();
    }
    let n = &settings.names;
    let functions = super::host_functions(settings).join(", ");
    let limits = format!(
        "It may run {} s, hold {} MiB and make {} calls.",
        c.timeout.as_millis() as f64 / 1000.0,
        c.max_memory_mb,
        c.max_calls
    );
    let mut out = vec![def(
        &n.run_code,
        format!(
            "Run a short Python program that finds and calls tools in one step, instead of one call \
             per step. Inside it, the controls are async functions taking their arguments as \
             keywords and returning the same JSON you would get: {functions} \
             (e.g. `r = await {discover}(query=\"customer name\")`). Tool errors come back as \
             their error objects, not as exceptions. The value of the last expression is the \
             result; print() output is returned too. No files, network, environment or clock. \
             {limits}",
            discover = settings.names.for_surface(settings.surface)[0].1,
        ),
        json!({
            "type": "object",
            "properties": {
                "code": {"type": "string", "maxLength": MAX_CODE_CHARS, "description": "Python source; top-level await is allowed."},
                "inputs": {"type": "object", "description": "Available to the program as the global `inputs` (default {})."}
            },
            "required": ["code"],
            "additionalProperties": false
        }),
    )];
    if c.offers_programs() {
        out.push(def(
            &n.run_program,
            format!(
                "Run a saved program (a *.codeact.py file defining `async def main(inputs)`) \
                 with inputs; its return value is the result. {limits}"
            ),
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "The program's path relative to a programs folder, ending in .codeact.py."},
                    "inputs": {"type": "object", "description": "Passed to main(inputs) (default {})."}
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        ));
    }
    out
}

fn capabilities_controls(settings: &Settings, view: View<'_>) -> Vec<ToolDefinition> {
    let n = &settings.names;
    let servers: Vec<String> = view
        .groups()
        .map(|(_, g)| format!("{} ({})", g.name, g.description))
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

fn toolproxy_controls(settings: &Settings, view: View<'_>) -> Vec<ToolDefinition> {
    let n = &settings.names;
    let max = settings.max_results;
    let groups: Vec<&str> = view.groups().map(|(_, g)| g.name.as_str()).collect();
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
    let base = match settings.surface {
        Surface::Toolsearch => None,
        Surface::Capabilities => Some(String::new()),
        Surface::Toolproxy => Some(format!(
            "Tools are grouped by domain and reached through two controls.\n\
                 1. Call {search} with a few words (optionally a group) to get matching tools with their full definitions.\n\
                 2. Call {call} with the exact group, the exact local name, and an arguments object matching the tool's complete parameter schema.\n\
                 3. Reuse definitions you already have; do not search again before every call.\n\
                 4. When a response has a next_offset, pass it as offset to see more. When a tool is reported unknown or unavailable, search again: the catalog may have changed.\n\
                 5. When a call fails with an uncertain outcome, inspect the current state before retrying anything that changes data; never blindly repeat a mutation.",
            search = n.search_proxy,
            call = n.call_proxy,
        )),
    };
    let base = base.unwrap_or_else(|| format!(
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
    ));
    let codeact = codeact_instructions(settings);
    match (base.is_empty(), codeact) {
        (true, None) => None,
        (true, Some(c)) => Some(c),
        (false, None) => Some(base),
        (false, Some(c)) => Some(format!("{base}\n{c}")),
    }
}

/// When a program beats single calls; only when CodeAct is enabled.
fn codeact_instructions(settings: &Settings) -> Option<String> {
    let c = &settings.codeact;
    if !c.enabled {
        return None;
    }
    let n = &settings.names;
    let functions = super::host_functions(settings).join(", ");
    let mut text = format!(
        "When a task needs several tool calls in a row (find something, then read or change it, \
         then use that result), or needs results filtered, joined or summed, write one short \
         Python program and run it with {run_code} instead of making each call yourself: it \
         costs one step and only its result comes back. In the program, `await` the controls \
         ({functions}) with keyword arguments; each returns the JSON you would get, errors as \
         error objects; check them before going on. Make single calls when you need one tool \
         once, or when you must look at a result before deciding what to do next.",
        run_code = n.run_code
    );
    if c.offers_programs() {
        text.push_str(&format!(
            " Saved programs run with {} (a path and inputs).",
            n.run_program
        ));
    }
    Some(text)
}
