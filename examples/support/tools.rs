//! The examples' catalog: a `crm` and a `billing` group of local tools, where customer 42 is
//! Ada Lovelace.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use toolsearch::{Engine, ExecError, GroupSpec, Toolset};

#[derive(Deserialize, JsonSchema)]
struct CustomerId {
    /// Numeric customer ID.
    customer_id: u64,
}

#[derive(Deserialize, JsonSchema)]
struct Invoices {
    /// Numeric customer ID.
    customer_id: u64,
    /// Only invoices not yet paid.
    #[serde(default)]
    unpaid_only: bool,
}

fn crm() -> Toolset {
    Toolset::new()
        .tool(
            "customer_name",
            "Look up the display name for a customer ID.",
            |a: CustomerId| async move {
                match a.customer_id {
                    42 => Ok(json!({"name": "Ada Lovelace"})),
                    id => Err(ExecError::from(format!("no customer {id}"))),
                }
            },
        )
        .tool(
            "update_contact_email",
            "Change the contact email address of a customer account.",
            |a: CustomerId| async move { Ok(json!({"updated": a.customer_id})) },
        )
}

fn billing() -> Toolset {
    Toolset::new().tool(
        "list_invoices",
        "List a customer's invoices with due dates and balances.",
        |a: Invoices| async move {
            Ok(json!({"customer_id": a.customer_id, "unpaid_only": a.unpaid_only, "invoices": []}))
        },
    )
}

/// The engine over both groups, with the default settings.
pub fn engine() -> Engine {
    Engine::builder()
        .source(crm().into_group(
            "crm-service",
            GroupSpec::new("crm", "Customer records and account operations"),
        ))
        .source(billing().into_group(
            "billing-service",
            GroupSpec::new("billing", "Invoices, payments and refunds"),
        ))
        .build()
        .expect("a valid catalog")
}

/// What a scripted model puts in a call: every required integer property of `schema` set to
/// `id` (the customer the task is about).
pub fn arguments_for(
    schema: &serde_json::Value,
    id: u64,
) -> serde_json::Map<String, serde_json::Value> {
    let mut arguments = serde_json::Map::new();
    for name in schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(serde_json::Value::as_str)
    {
        if schema["properties"][name]["type"] == "integer" {
            arguments.insert(name.to_owned(), json!(id));
        }
    }
    arguments
}
