//! Registers a catalog's tools with a Ratel registry under the evaluation's tool keys: shared
//! by the Ratel benchmarks (`#[path]`-included).

use toolsearch::Directory;
use toolsearch::eval::tool_key;

/// Every tool of `dir`, registered with `registry` (id: `group/tool`).
pub fn register_all(registry: &mut ratel_ai_core::ToolRegistry, dir: &Directory) {
    for id in 0..dir.tools().len() as u32 {
        let t = dir.tool(id);
        registry.register(ratel_ai_core::Tool {
            id: tool_key(dir, id),
            name: t.name.clone(),
            description: t.description.clone(),
            experimental_searchable_description: None,
            input_schema: serde_json::Value::Object(t.input_schema()),
            output_schema: serde_json::Value::Null,
        });
    }
}
