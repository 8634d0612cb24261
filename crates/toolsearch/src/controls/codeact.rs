//! `run_code` and `run_program`: their arguments checked, a saved program found (only
//! `*.codeact.py` files inside a configured folder), and a run's outcome as the model reads it.

use std::path::{Component, Path, PathBuf};

use serde_json::{Map, Value, json};

use super::args::{object, pointer, req_str};
use crate::codeact::{CodeError, CodeOutcome, MAX_CODE_CHARS};
use crate::config::Settings;
use crate::error::ToolError;
use crate::outcome::Outcome;

/// The file name errors give a `run_code` program.
pub const RUN_CODE_FILENAME: &str = "run_code.py";
/// What a saved program's file name ends with.
pub const PROGRAM_SUFFIX: &str = ".codeact.py";
/// The line appended to a saved program: its result is `main`'s return value.
const CALL_MAIN: &str = "await main(inputs)";

/// A program ready to run: source, the name errors give it, inputs.
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    /// The Python source.
    pub code: String,
    /// The name errors give it.
    pub filename: String,
    /// The `inputs` global.
    pub inputs: Map<String, Value>,
    /// The line of the appended `main(inputs)` call (saved programs).
    pub main_call_line: Option<u32>,
}

/// The optional `inputs` argument: an object, `{}` when missing or null.
fn inputs(obj: &Map<String, Value>) -> Result<Map<String, Value>, ToolError> {
    match obj.get("inputs") {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(m)) => Ok(m.clone()),
        Some(_) => Err(ToolError::invalid_request(
            &pointer("inputs"),
            "inputs must be a JSON object (the program reads it as the global `inputs`)",
        )),
    }
}

/// `run_code {code, inputs?}`.
pub fn run_code_program(settings: &Settings, arguments: &Value) -> Result<Program, ToolError> {
    let obj = object(&settings.names.run_code, arguments, &["code", "inputs"])?;
    let code = req_str(obj, "code")?;
    let chars = code.chars().count();
    if chars > MAX_CODE_CHARS {
        return Err(ToolError::invalid_request(
            &pointer("code"),
            format!(
                "code has {chars} characters; at most {MAX_CODE_CHARS} are allowed. Write a shorter program"
            ),
        ));
    }
    if code.trim().is_empty() {
        return Err(ToolError::invalid_request(
            &pointer("code"),
            "code is empty: give the Python program to run",
        ));
    }
    Ok(Program {
        code: code.to_owned(),
        filename: RUN_CODE_FILENAME.to_owned(),
        inputs: inputs(obj)?,
        main_call_line: None,
    })
}

/// `run_program {path, inputs?}`: the file `path` names inside one of the program folders,
/// with a call of its `main(inputs)` appended.
pub fn saved_program(settings: &Settings, arguments: &Value) -> Result<Program, ToolError> {
    let obj = object(&settings.names.run_program, arguments, &["path", "inputs"])?;
    let path = req_str(obj, "path")?;
    let inputs = inputs(obj)?;
    let file = find_program(&settings.codeact.programs, path)?;
    let code = read_program(&file, path)?;
    let main_call_line = format!("{code}\n").lines().count() as u32 + 1;
    Ok(Program {
        code: format!("{code}\n{CALL_MAIN}\n"),
        filename: path.to_owned(),
        inputs,
        main_call_line: Some(main_call_line),
    })
}

fn refused(message: String) -> ToolError {
    ToolError::invalid_request(&pointer("path"), message)
}

/// The program file `path` names: relative, `*.codeact.py`, no `..`, and — symlinks resolved —
/// inside the folder it was found in. The first folder holding it wins.
pub fn find_program(folders: &[PathBuf], path: &str) -> Result<PathBuf, ToolError> {
    let rel = Path::new(path);
    if path.is_empty() || !path.ends_with(PROGRAM_SUFFIX) {
        return Err(refused(format!(
            "path {path:?} is not a saved program: it must end in {PROGRAM_SUFFIX}"
        )));
    }
    if path.contains('\0') {
        return Err(refused("path must not hold a NUL character".to_owned()));
    }
    let plain = rel
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if rel.is_absolute() || !plain {
        return Err(refused(format!(
            "path {path:?} must be relative to a programs folder, without `..`"
        )));
    }
    for folder in folders {
        let Ok(root) = folder.canonicalize() else {
            continue;
        };
        let Ok(file) = root.join(rel).canonicalize() else {
            continue;
        };
        if !file.starts_with(&root) {
            return Err(refused(format!(
                "path {path:?} leads out of its programs folder (a symbolic link); it is not run"
            )));
        }
        if file.is_file() {
            return Ok(file);
        }
    }
    Err(refused(format!(
        "there is no saved program {path:?} in the programs folders"
    )))
}

fn read_program(file: &Path, path: &str) -> Result<String, ToolError> {
    let code = std::fs::read_to_string(file)
        .map_err(|e| refused(format!("the program {path:?} cannot be read: {e}")))?;
    if code.chars().count() > MAX_CODE_CHARS {
        return Err(refused(format!(
            "the program {path:?} is longer than {MAX_CODE_CHARS} characters"
        )));
    }
    Ok(code)
}

/// A saved program that defines no `main`: said so, instead of a `NameError` on a line the
/// program does not have.
pub fn explain_missing_main(main_call_line: Option<u32>, outcome: &mut CodeOutcome) {
    let Some(line) = main_call_line else {
        return;
    };
    let missing = format!("NameError: name 'main' is not defined (line {line})");
    if matches!(&outcome.result, Err(CodeError::Failed(m)) if *m == missing) {
        outcome.result = Err(CodeError::Failed(
            "NameError: the program defines no `async def main(inputs)`, which run_program calls"
                .to_owned(),
        ));
    }
}

/// The answer to a run: `{"result", "stdout", "calls"}`, or the error object with the printed
/// text and the calls made so far.
pub fn outcome_json(outcome: &CodeOutcome) -> (String, Outcome) {
    let error = match &outcome.result {
        Ok(value) => {
            let ok = json!({"result": value, "stdout": outcome.stdout, "calls": outcome.calls});
            return (ok.to_string(), Outcome::Ok);
        }
        Err(e) => e,
    };
    let tool_error = match error {
        CodeError::Failed(m) => ToolError::code_failed(m.clone()),
        CodeError::Timeout(limit) => ToolError::timeout(format!(
            "The program ran longer than {} s and was stopped. Host calls it made may have had effects: inspect the state before running it again.",
            limit.as_secs_f64()
        )),
        CodeError::ResourceLimit(m) => ToolError::resource_limit(m.clone()),
        CodeError::UsageLimit(m) => ToolError::usage_limit(m.clone()),
    };
    let code = tool_error.code;
    let value = tool_error
        .with("stdout", outcome.stdout.as_str())
        .with("calls", outcome.calls);
    (value.to_json(), Outcome::Error(code))
}
