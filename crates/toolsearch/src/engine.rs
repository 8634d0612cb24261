//! The engine: a live catalog plus settings, answering the model's control calls.

use serde_json::Value;

use crate::catalog::{Catalog, Directory, DirectoryError, SourceTools};
use crate::config::{SearchMethod, Settings, Surface};
use crate::controls::{self, ControlDef, ControlOutput};

/// Why an engine could not be built.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// Invalid settings.
    #[error("{}", .0.join("; "))]
    Settings(Vec<String>),
    /// Invalid sources.
    #[error(transparent)]
    Directory(#[from] DirectoryError),
    /// A control name equals a direct tool's name.
    #[error("control name {0:?} is also the name of a direct tool; rename one under [names]")]
    NameClash(String),
    /// A setting this build does not serve yet.
    #[error("{0}")]
    Unsupported(String),
}

/// A catalog behind the controls of one surface.
#[derive(Debug)]
pub struct Engine {
    catalog: Catalog,
    settings: Settings,
}

impl Engine {
    /// Validates settings and sources and builds the first snapshot.
    pub fn new(settings: Settings, sources: Vec<SourceTools>) -> Result<Self, EngineError> {
        let problems = settings.problems();
        if !problems.is_empty() {
            return Err(EngineError::Settings(problems));
        }
        if settings.surface != Surface::Toolsearch {
            return Err(EngineError::Unsupported(format!(
                "surface {:?} is not available in this build yet; use \"toolsearch\"",
                settings.surface.as_str()
            )));
        }
        if settings.method != SearchMethod::Keyword {
            return Err(EngineError::Unsupported(format!(
                "search method {:?} is not available in this build yet; use \"keyword\"",
                settings.method.as_str()
            )));
        }
        let dir = Directory::build(sources)?;
        check_clashes(&settings, &dir)?;
        Ok(Self {
            catalog: Catalog::new(dir),
            settings,
        })
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The live catalog.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// Replaces the snapshot with one built from `sources` (the next control call sees it).
    pub fn reload(&self, sources: Vec<SourceTools>) -> Result<(), EngineError> {
        let dir = Directory::build(sources)?;
        check_clashes(&self.settings, &dir)?;
        self.catalog.replace(dir);
        Ok(())
    }

    /// The control definitions the model sees (none when nothing is grouped).
    pub fn control_definitions(&self) -> Vec<ControlDef> {
        controls::control_definitions(&self.settings, &self.catalog.snapshot())
    }

    /// The generated instructions (none when nothing is grouped).
    pub fn instructions(&self) -> Option<String> {
        controls::instructions(&self.settings, &self.catalog.snapshot())
    }

    /// Answers a discovery control call; `None` when `name` is not a control of this surface.
    pub fn handle_control(&self, name: &str, arguments: &Value) -> Option<ControlOutput> {
        let dir = self.catalog.snapshot();
        if dir.tools().is_empty() {
            return None;
        }
        let control = controls::control_for(&self.settings, name)?;
        Some(controls::run_discovery(
            &dir,
            &self.settings,
            control,
            arguments,
        ))
    }
}

fn check_clashes(settings: &Settings, dir: &Directory) -> Result<(), EngineError> {
    for (_, name) in settings.names.for_surface(settings.surface) {
        if dir.direct().iter().any(|d| d.def.name == name) {
            return Err(EngineError::NameClash(name.to_owned()));
        }
    }
    Ok(())
}
