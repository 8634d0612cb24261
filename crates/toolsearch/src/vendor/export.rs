//! The tools array for a vendor's API: the search tool, the direct tools as they are, every
//! grouped tool deferred (for OpenAI inside a namespace per group), each under the name
//! `name` gives it.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use super::name::exported_name;
use super::{Format, SEARCH_TOOL};
use crate::catalog::View;
use crate::config::Settings;

/// Why a catalog cannot be exported.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// Two tools would reach the vendor under one name.
    #[error("{first} and {second} would both be exported as {name:?}; rename one of them")]
    NameClash {
        /// The name both would get.
        name: String,
        /// The first tool (canonical name, or a direct tool's name).
        first: String,
        /// The second.
        second: String,
    },
    /// A direct tool's name breaks the vendor's name rules (direct tools keep their names).
    #[error(
        "direct tool {0:?} cannot be exported: a vendor name is 1-64 letters, digits, '_' or '-'"
    )]
    DirectName(String),
}

/// What the search tool's description says, in both formats.
const SEARCH_DESCRIPTION: &str = "Search the tool catalog by what you need to do. The best-matching tools come back and become callable by name. Describe the task in a few words (\"refund a payment\"); search again with other words when nothing fits.";

/// The search tool's parameters.
fn search_parameters(settings: &Settings) -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "maxLength": 2048,
                "description": "What the tool should do, in a few words."
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": settings.max_results,
                "description": "How many tools to return (default 5)."
            }
        },
        "required": ["query"],
        "additionalProperties": false
    })
}

/// One function definition in the format's shape. `programmatic`: its source lets programs
/// call it, so an OpenAI function also allows the model's programs as callers (Anthropic's
/// caller names are tied to the code-execution tool version an agent declares; they are left
/// to the agent).
fn function(
    format: Format,
    name: &str,
    description: &str,
    schema: Map<String, Value>,
    output: Option<Map<String, Value>>,
    deferred: bool,
    programmatic: bool,
) -> Value {
    let mut f = Map::new();
    match format {
        Format::Anthropic => {
            f.insert("name".into(), name.into());
            if !description.is_empty() {
                f.insert("description".into(), description.into());
            }
            f.insert("input_schema".into(), Value::Object(schema));
        }
        Format::Openai => {
            f.insert("type".into(), "function".into());
            f.insert("name".into(), name.into());
            if !description.is_empty() {
                f.insert("description".into(), description.into());
            }
            f.insert("parameters".into(), Value::Object(schema));
            // The Responses API makes functions strict unless told; MCP schemas are not
            // written for strict mode.
            f.insert("strict".into(), false.into());
            if let Some(out) = output {
                f.insert("output_schema".into(), Value::Object(out));
            }
            if programmatic {
                f.insert("allowed_callers".into(), json!(["direct", "programmatic"]));
            }
        }
    }
    if deferred {
        f.insert("defer_loading".into(), true.into());
    }
    Value::Object(f)
}

/// The search tool in the format's shape.
pub(crate) fn search_tool(format: Format, settings: &Settings) -> Value {
    match format {
        Format::Anthropic => json!({
            "name": SEARCH_TOOL,
            "description": SEARCH_DESCRIPTION,
            "input_schema": search_parameters(settings),
        }),
        Format::Openai => json!({
            "type": "tool_search",
            "execution": "client",
            "description": SEARCH_DESCRIPTION,
            "parameters": search_parameters(settings),
        }),
    }
}

/// One grouped tool, deferred, as the format lists it (inside its namespace for OpenAI).
pub(crate) fn deferred_tool(format: Format, view: View<'_>, id: u32) -> Value {
    let t = view.dir().tool(id);
    function(
        format,
        &exported_name(&t.canonical),
        &t.description,
        t.input_schema(),
        t.output_schema(),
        true,
        t.codeact,
    )
}

/// A namespace (OpenAI) for group `g` holding `tools`.
pub(crate) fn namespace(view: View<'_>, g: u32, tools: Vec<Value>) -> Value {
    let group = &view.dir().groups()[g as usize];
    json!({
        "type": "namespace",
        "name": group.name,
        "description": group.description,
        "tools": tools,
    })
}

/// The tools array of `view` for `format`: the search tool (when anything is grouped), the
/// direct tools, then the grouped tools deferred — by canonical name, and for OpenAI in one
/// namespace per group.
pub fn export(
    format: Format,
    view: View<'_>,
    settings: &Settings,
) -> Result<Vec<Value>, ExportError> {
    let dir = view.dir();
    let mut taken: HashMap<String, String> = HashMap::new();
    let mut claim = |name: &str, owner: &str| -> Result<(), ExportError> {
        match taken.insert(name.to_owned(), owner.to_owned()) {
            Some(first) => Err(ExportError::NameClash {
                name: name.to_owned(),
                first,
                second: owner.to_owned(),
            }),
            None => Ok(()),
        }
    };
    let grouped = view.tool_total() > 0;
    let mut out = Vec::new();
    if grouped {
        claim(SEARCH_TOOL, "the search tool")?;
        out.push(search_tool(format, settings));
    }
    for (_, d) in view.direct() {
        if !super::fits(&d.def.name) {
            return Err(ExportError::DirectName(d.def.name.clone()));
        }
        claim(&d.def.name, &d.def.name)?;
        out.push(function(
            format,
            &d.def.name,
            &d.def.description,
            d.def.input_schema.to_map(),
            d.def.output_schema.as_ref().map(|s| s.to_map()),
            false,
            d.def.codeact,
        ));
    }
    for (g, group) in view.groups() {
        let mut tools = Vec::new();
        for id in group.tools.clone() {
            if !view.sees(id) {
                continue;
            }
            let canonical = &dir.tool(id).canonical;
            claim(&exported_name(canonical), canonical)?;
            tools.push(deferred_tool(format, view, id));
        }
        match format {
            Format::Anthropic => out.extend(tools),
            Format::Openai => out.push(namespace(view, g, tools)),
        }
    }
    Ok(out)
}

/// Every tool of `view` loaded up front, none deferred: the direct tools and each grouped
/// tool under its exported name, as plain tools of the format (no search tool, no
/// namespaces) — what an agent sends when it defers nothing.
pub fn loaded(format: Format, view: View<'_>) -> Vec<Value> {
    let mut out: Vec<Value> = view
        .direct()
        .map(|(_, d)| {
            function(
                format,
                &d.def.name,
                &d.def.description,
                d.def.input_schema.to_map(),
                d.def.output_schema.as_ref().map(|s| s.to_map()),
                false,
                d.def.codeact,
            )
        })
        .collect();
    for (_, group) in view.groups() {
        for id in group.tools.clone().filter(|&id| view.sees(id)) {
            let t = view.dir().tool(id);
            out.push(function(
                format,
                &exported_name(&t.canonical),
                &t.description,
                t.input_schema(),
                t.output_schema(),
                false,
                t.codeact,
            ));
        }
    }
    out
}

/// Tool definitions (e.g. the MCP controls) as plain tools of the format.
pub fn plain(format: Format, defs: &[crate::controls::ToolDefinition]) -> Vec<Value> {
    defs.iter()
        .map(|d| {
            let schema = match &d.input_schema {
                Value::Object(m) => m.clone(),
                _ => Map::new(),
            };
            let output = match &d.output_schema {
                Some(Value::Object(m)) => Some(m.clone()),
                _ => None,
            };
            function(
                format,
                &d.name,
                &d.description,
                schema,
                output,
                false,
                false,
            )
        })
        .collect()
}

/// What the model sees of an exported array before it searches: every entry but the
/// deferred ones (an OpenAI namespace keeps its name and description).
pub fn always_loaded(exported: &[Value]) -> Vec<Value> {
    exported
        .iter()
        .filter(|t| t.get("defer_loading") != Some(&Value::Bool(true)))
        .map(|t| match t.get("tools").and_then(Value::as_array) {
            Some(inner) => {
                let mut t = t.clone();
                t["tools"] = Value::Array(always_loaded(inner));
                t
            }
            None => t.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{Directory, GroupSpec, SourceTools, ToolDef};

    fn dir() -> Directory {
        Directory::build(vec![
            SourceTools::grouped(
                "s",
                GroupSpec::new("crm", "Customer records"),
                vec![
                    ToolDef::new("customer_name", "Look up a customer's name"),
                    ToolDef::new("get.v1/orders", "List orders"),
                ],
            ),
            SourceTools::grouped(
                "b",
                GroupSpec::new("billing", "Payments"),
                vec![ToolDef::new("refund", "Refund a payment")],
            ),
        ])
        .expect("valid")
    }

    #[test]
    fn anthropic_defers_every_grouped_tool_behind_one_search_tool() {
        let dir = dir();
        let tools = export(
            Format::Anthropic,
            View::new(&dir, None),
            &Settings::default(),
        )
        .expect("valid");
        assert_eq!(tools.len(), 4);
        assert_eq!(tools[0]["name"], "tool_search");
        assert!(tools[0].get("defer_loading").is_none());
        assert_eq!(tools[0]["input_schema"]["required"], json!(["query"]));
        let names: Vec<&str> = tools[1..]
            .iter()
            .map(|t| t["name"].as_str().expect("valid"))
            .collect();
        assert_eq!(names[0], "billing__refund");
        assert_eq!(names[1], "crm__customer_name");
        assert_eq!(names[2], exported_name("crm__get.v1/orders"));
        assert!(tools[1..].iter().all(|t| t["defer_loading"] == true));
        assert_eq!(tools[1]["input_schema"]["type"], "object");
    }

    #[test]
    fn openai_puts_each_group_in_a_namespace() {
        let dir = dir();
        let tools =
            export(Format::Openai, View::new(&dir, None), &Settings::default()).expect("valid");
        assert_eq!(tools[0]["type"], "tool_search");
        assert_eq!(tools[0]["execution"], "client");
        assert_eq!(tools[1]["type"], "namespace");
        assert_eq!(tools[1]["name"], "billing");
        assert_eq!(tools[1]["description"], "Payments");
        assert_eq!(tools[2]["name"], "crm");
        let crm = tools[2]["tools"].as_array().expect("valid");
        assert_eq!(crm.len(), 2);
        assert_eq!(crm[0]["name"], "crm__customer_name");
        assert_eq!(crm[0]["strict"], false);
        assert_eq!(crm[0]["defer_loading"], true);
        assert!(crm[0]["parameters"].is_object());
    }

    #[test]
    fn a_clash_of_exported_names_is_refused() {
        let short = exported_name("g__a.b").into_owned();
        let tool = short.strip_prefix("g__").expect("valid").to_owned();
        let dir = Directory::build(vec![SourceTools::grouped(
            "s",
            GroupSpec::new("g", "G"),
            vec![ToolDef::new("a.b", ""), ToolDef::new(tool, "")],
        )])
        .expect("valid");
        let err = export(
            Format::Anthropic,
            View::new(&dir, None),
            &Settings::default(),
        )
        .expect_err("fails");
        assert!(matches!(err, ExportError::NameClash { name, .. } if name == short));
    }
}
