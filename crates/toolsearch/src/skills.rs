//! The skills catalog of the `capabilities` surface: folders holding a `SKILL.md` whose YAML
//! front matter gives `name` and `description` (the Agent Skills layout).
//!
//! A configured path is either one skill folder (it holds `SKILL.md`) or a folder of skill
//! folders (each child with a `SKILL.md`; other children are ignored). A skill's id is its
//! `name`. Every problem — unreadable file, missing or malformed front matter, a missing
//! `name` or `description`, two skills with one name — is reported with its file, all at once.
//!
//! Skills are ranked like tools by every search method: the search layer reads them as a corpus
//! of one group, `skills`, one document per skill with its name and description.

use std::fs;
use std::path::{Path, PathBuf};

use yaml_rust2::{Yaml, YamlLoader};

use crate::catalog::name::tool_name_problem;
use crate::problem::Problems;

/// One skill.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Skill {
    /// Its id: the front matter's `name`.
    pub name: String,
    /// When to use it: the front matter's `description`.
    pub description: String,
    /// The full body of `SKILL.md` after the front matter.
    pub body: String,
    /// The `SKILL.md` file.
    pub path: PathBuf,
}

/// Why skills could not be loaded: every problem, each with its file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("skills: {0}")]
#[non_exhaustive]
pub struct SkillsError(pub Problems);

/// A loaded skills catalog.
#[derive(Debug)]
pub struct Skills {
    skills: Vec<Skill>,
}

impl Skills {
    /// The group skills are searched in.
    pub const GROUP: &'static str = "skills";
    /// That group's description.
    pub const GROUP_DESCRIPTION: &'static str = "Agent skills: instructions for tasks";

    /// Loads every skill under `paths`.
    pub fn load(paths: &[PathBuf]) -> Result<Self, SkillsError> {
        let mut problems = Problems::new();
        let mut skills = Vec::new();
        for path in paths {
            if path.join("SKILL.md").is_file() {
                read_skill(&path.join("SKILL.md"), &mut skills, &mut problems);
                continue;
            }
            let entries = match fs::read_dir(path) {
                Ok(e) => e,
                Err(e) => {
                    problems.add(path.display().to_string(), e.to_string());
                    continue;
                }
            };
            let mut children: Vec<PathBuf> = entries
                .filter_map(Result::ok)
                .map(|e| e.path().join("SKILL.md"))
                .filter(|p| p.is_file())
                .collect();
            children.sort();
            if children.is_empty() {
                problems.add(
                    path.display().to_string(),
                    "holds no SKILL.md, nor folders holding one",
                );
            }
            for file in children {
                read_skill(&file, &mut skills, &mut problems);
            }
        }
        if !problems.is_empty() {
            return Err(SkillsError(problems));
        }
        Self::new(skills)
    }

    /// A catalog of these skills (names must be distinct).
    pub fn new(mut skills: Vec<Skill>) -> Result<Self, SkillsError> {
        skills.sort_by(|a, b| a.name.cmp(&b.name));
        let mut problems = Problems::new();
        for pair in skills.windows(2) {
            if pair[0].name == pair[1].name {
                problems.add(
                    format!("{} and {}", pair[0].path.display(), pair[1].path.display()),
                    format!("two skills named {:?}", pair[0].name),
                );
            }
        }
        for skill in &skills {
            if let Some(p) = tool_name_problem(&skill.name) {
                // The rule of tool names: non-blank, at most 128 characters, no control chars.
                problems.add(skill.path.display().to_string(), p.replace("tool", "skill"));
            }
        }
        if !problems.is_empty() {
            return Err(SkillsError(problems));
        }
        Ok(Self { skills })
    }

    /// Every skill, by name.
    pub fn all(&self) -> &[Skill] {
        &self.skills
    }

    /// The skill named `name`.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills
            .binary_search_by(|s| s.name.as_str().cmp(name))
            .ok()
            .map(|i| &self.skills[i])
    }

    /// The skill ranked as document `id` of the skills corpus (skills are in name order).
    pub fn by_id(&self, id: u32) -> Option<&Skill> {
        self.skills.get(id as usize)
    }
}

fn read_skill(file: &Path, skills: &mut Vec<Skill>, problems: &mut Problems) {
    let at = file.display().to_string();
    let text = match fs::read_to_string(file) {
        Ok(t) => t,
        Err(e) => {
            problems.add(at, e.to_string());
            return;
        }
    };
    match parse_skill(&text) {
        Ok((name, description, body)) => skills.push(Skill {
            name,
            description,
            body,
            path: file.to_owned(),
        }),
        Err(why) => problems.add(at, why),
    }
}

/// Splits `SKILL.md` into its front matter's `name` and `description` and the body.
pub fn parse_skill(text: &str) -> Result<(String, String, String), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return Err("does not start with a YAML front matter (a line of ---)".into());
    };
    let (yaml, body) = match rest.find("\n---") {
        Some(i) => {
            let after = &rest[i + 4..];
            let body = after
                .strip_prefix("\r\n")
                .or_else(|| after.strip_prefix('\n'))
                .unwrap_or(after);
            (&rest[..i], body)
        }
        None => return Err("the front matter has no closing line of ---".into()),
    };
    let docs = YamlLoader::load_from_str(yaml).map_err(|e| format!("front matter: {e}"))?;
    let doc = docs.first().cloned().unwrap_or(Yaml::Null);
    if !matches!(doc, Yaml::Hash(_)) {
        return Err("the front matter is not a mapping of keys".into());
    }
    let field = |key: &str| -> Result<String, String> {
        match &doc[key] {
            Yaml::String(s) if !s.trim().is_empty() => Ok(s.trim().to_owned()),
            Yaml::BadValue => Err(format!("the front matter has no {key:?}")),
            _ => Err(format!(
                "the front matter's {key:?} is not a non-empty string"
            )),
        }
    };
    let name = field("name")?;
    let description = field("description")?;
    Ok((name, description, body.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_gives_name_description_and_body() {
        let (n, d, b) = parse_skill(
            "---\nname: pdf-forms\ndescription: >\n  Fill PDF forms\n  from data.\nlicense: MIT\n---\n# PDF forms\nStep 1.\n",
        )
        .expect("valid");
        assert_eq!(n, "pdf-forms");
        assert_eq!(d, "Fill PDF forms from data.");
        assert_eq!(b, "# PDF forms\nStep 1.\n");
        for (text, why) in [
            ("# no front matter", "does not start"),
            ("---\nname: a\n", "no closing"),
            ("---\nname: a\n---\nbody", "no \"description\""),
            (
                "---\nname: [1, 2]\ndescription: x\n---\n",
                "\"name\" is not a non-empty string",
            ),
            ("---\n- a\n- b\n---\n", "not a mapping"),
            (
                "---\nname: a\ndescription: \"unterminated\n---\n",
                "front matter:",
            ),
        ] {
            let e = parse_skill(text).expect_err(text);
            assert!(e.contains(why), "{text:?}: {e}");
        }
    }
}
