//! Argument validation against a tool's input schema (the `jsonschema` crate), compiled on the
//! first call of each tool and kept with the snapshot. Remote `$ref`s are never fetched.

use std::sync::OnceLock;

use serde_json::Value;
use serde_json::value::RawValue;

use crate::catalog::Directory;

/// Most violations listed in one `invalid_arguments` error.
pub const MAX_VIOLATIONS: usize = 10;

/// One failed check: a JSON pointer into the arguments and what is wrong there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// JSON pointer into the arguments object (`""` is the object itself).
    pub path: String,
    /// What is wrong.
    pub message: String,
}

/// The argument validators of one directory snapshot: one per grouped tool and one per direct
/// tool, each compiled on the tool's first call and kept with the snapshot.
#[derive(Debug)]
pub(crate) struct Validators {
    grouped: Box<[ArgValidator]>,
    direct: Box<[ArgValidator]>,
}

impl Validators {
    /// Empty (not yet compiled) validators for every tool of `dir`.
    pub(crate) fn new(dir: &Directory) -> Self {
        let none = |n: usize| (0..n).map(|_| ArgValidator::default()).collect();
        Self {
            grouped: none(dir.tools().len()),
            direct: none(dir.direct().len()),
        }
    }

    /// The validator of grouped tool `id`.
    pub(crate) fn grouped(&self, id: u32) -> &ArgValidator {
        &self.grouped[id as usize]
    }

    /// The validator of direct tool `index` (its place in [`Directory::direct`]).
    pub(crate) fn direct(&self, index: usize) -> &ArgValidator {
        &self.direct[index]
    }
}

/// A lazily compiled validator.
#[derive(Debug, Default)]
pub(crate) struct ArgValidator(OnceLock<Result<jsonschema::Validator, String>>);

impl ArgValidator {
    /// Checks `arguments`: `Ok(())`, the first violations (at most [`MAX_VIOLATIONS`]) with
    /// their total, or the schema's own error when it does not compile.
    pub(crate) fn check(
        &self,
        schema: &RawValue,
        arguments: &Value,
    ) -> Result<Result<(), (Vec<Violation>, usize)>, String> {
        let compiled = self.0.get_or_init(|| {
            jsonschema::options()
                .build(&serde_json::from_str(schema.get()).map_err(|e| e.to_string())?)
                .map_err(|e| e.to_string())
        });
        let validator = compiled.as_ref().map_err(Clone::clone)?;
        if validator.is_valid(arguments) {
            return Ok(Ok(()));
        }
        let mut shown = Vec::new();
        let mut total = 0;
        for e in validator.iter_errors(arguments) {
            total += 1;
            if shown.len() < MAX_VIOLATIONS {
                shown.push(Violation {
                    path: e.instance_path().to_string(),
                    message: e.to_string(),
                });
            }
        }
        Ok(Err((shown, total)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(v: Value) -> Box<RawValue> {
        RawValue::from_string(v.to_string()).expect("json")
    }

    #[test]
    fn reports_paths_and_caps_the_list() {
        let s = schema(json!({"type": "object", "properties": {
            "id": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string"}}
        }, "required": ["id"]}));
        let v = ArgValidator::default();
        assert_eq!(v.check(&s, &json!({"id": 3})), Ok(Ok(())));
        let Ok(Err((shown, total))) = v.check(&s, &json!({"id": "x", "tags": [1, "a", 2]})) else {
            panic!("violations expected")
        };
        assert_eq!(total, 3);
        let mut paths: Vec<&str> = shown.iter().map(|v| v.path.as_str()).collect();
        paths.sort();
        assert_eq!(paths, ["/id", "/tags/0", "/tags/2"]);
        let many: Vec<Value> = (0..20).map(|_| json!(1)).collect();
        let Ok(Err((shown, total))) = v.check(&s, &json!({"id": 1, "tags": many})) else {
            panic!()
        };
        assert_eq!((shown.len(), total), (MAX_VIOLATIONS, 20));
    }

    #[test]
    fn a_broken_schema_is_an_error_and_remote_refs_are_not_fetched() {
        let v = ArgValidator::default();
        assert!(v.check(&schema(json!({"type": 12})), &json!({})).is_err());
        let v = ArgValidator::default();
        let remote = schema(json!({"$ref": "https://example.invalid/schema.json"}));
        assert!(v.check(&remote, &json!({})).is_err());
    }

    #[test]
    fn a_schema_as_written_validates() {
        let raw = RawValue::from_string(
            r#"{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}"#.into(),
        )
        .expect("json");
        let v = ArgValidator::default();
        assert_eq!(v.check(&raw, &json!({"id": 3})), Ok(Ok(())));
        assert!(matches!(
            v.check(&raw, &json!({"id": "x"})),
            Ok(Err((_, 1)))
        ));
        let broken = RawValue::from_string(r#"{"type":12}"#.into()).expect("json");
        assert!(ArgValidator::default().check(&broken, &json!({})).is_err());
    }
}
