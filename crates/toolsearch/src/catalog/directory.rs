//! The directory: an immutable, validated snapshot of every source's tools. It knows nothing of
//! search or dispatch: indexes and argument validators are built over it by the layers above.
//!
//! Grouped tools are stored sorted by canonical name, so a tool's index ([`ToolId`]) is its rank
//! in the canonical-name tie break, and each group's tools are one contiguous range (an escaped
//! group never contains `__`, so `<escaped group>__` prefixes exactly that group's tools).

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use rustc_hash::FxHashMap;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::name::{
    canonical_name, group_description_problem, group_name_problem, tool_name_problem,
};
use super::schema_text::SchemaText;
use super::{Presentation, Schema, SourceTools, ToolDef};
use crate::exec::Executor;
use crate::problem::{Problem, Problems};
use crate::text::summary_description;

/// Index of a grouped tool in [`Directory::tools`] (its canonical-name rank).
pub type ToolId = u32;

/// One grouped tool with everything the controls and the search need, computed once.
#[derive(Debug)]
#[non_exhaustive]
pub struct ToolEntry {
    /// Index of its group in [`Directory::groups`].
    pub group: u32,
    /// Local name.
    pub name: String,
    /// Canonical name (`<escaped group>__<name>`).
    pub canonical: String,
    /// Full description.
    pub description: String,
    /// Description as summaries show it, when that differs from `description` (most do not:
    /// kept once, not twice).
    summary: Option<Box<str>>,
    /// The source's instructions.
    pub instructions: Arc<[String]>,
    /// Name of the source that yields it.
    pub source: Arc<str>,
    /// Searchable text of the input schema.
    pub schema_text: SchemaText,
    /// What runs it (none: `not_executable`).
    pub executor: Option<Arc<dyn Executor>>,
    /// A CodeAct program may call it.
    pub codeact: bool,
    /// The host runs it (see [`ToolDef::external`]).
    pub external: bool,
    /// Input schema, kept as compact text (see [`Schema`]).
    pub(crate) input_schema_json: Schema,
    /// Output schema, when declared.
    pub(crate) output_schema_json: Option<Schema>,
    /// The other fields its source listed it with (see [`ToolDef::listed`]).
    pub(crate) listed: Option<Schema>,
}

impl ToolEntry {
    /// The description as summaries show it (whitespace collapsed, long ones cut).
    pub fn summary(&self) -> &str {
        self.summary.as_deref().unwrap_or(&self.description)
    }

    /// The other fields its source listed it with (see [`ToolDef::listed`]), parsed.
    pub fn listed(&self) -> Option<Map<String, Value>> {
        self.listed.as_ref().map(Schema::to_map)
    }

    /// Input schema (parsed from its text).
    pub fn input_schema(&self) -> Map<String, Value> {
        self.input_schema_json.to_map()
    }

    /// Output schema, when declared (parsed from its text).
    pub fn output_schema(&self) -> Option<Map<String, Value>> {
        self.output_schema_json.as_ref().map(Schema::to_map)
    }

    /// Input schema as compact JSON text.
    pub fn input_schema_json(&self) -> &RawValue {
        self.input_schema_json.json()
    }
}

/// One group: name, description, and its tools' range in [`Directory::tools`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct GroupEntry {
    /// Group name.
    pub name: String,
    /// Group description.
    pub description: String,
    /// Its tools, as a range of [`ToolId`]s.
    pub tools: Range<ToolId>,
    /// Names of the sources placing tools here.
    pub sources: Vec<String>,
    /// Sources of this group that are unavailable now, with the reason.
    pub unavailable: Vec<(String, String)>,
}

/// The reason of a source that is unavailable until a person logs in to it; a group whose
/// every unavailable source gives it lists `"unavailable": "needs login"`.
pub const NEEDS_LOGIN: &str = "needs login";

/// What a call of a source that [needs a login](NEEDS_LOGIN) is told to do.
pub fn login_hint(source: &str) -> String {
    format!("run: toolsearch auth login {source}")
}

/// A direct tool (listed as an ordinary top-level tool).
#[derive(Debug)]
#[non_exhaustive]
pub struct DirectEntry {
    /// The tool as its source declared it.
    pub def: ToolDef,
    /// Name of the source that yields it.
    pub source: Arc<str>,
    /// What runs it.
    pub executor: Option<Arc<dyn Executor>>,
}

/// A validated snapshot of the catalog.
#[derive(Debug)]
pub struct Directory {
    groups: Vec<GroupEntry>,
    tools: Vec<ToolEntry>,
    direct: Vec<DirectEntry>,
    group_by_name: FxHashMap<String, u32>,
    /// Some grouped source is still connecting.
    connecting: bool,
}

/// Everything wrong with a set of sources, each problem with its location.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub struct DirectoryError {
    /// Every problem, in source order.
    pub problems: Problems,
}

impl fmt::Display for DirectoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.problems.fmt(f)
    }
}

/// A group while building: description, sources, unavailable sources with the reason.
type GroupParts = (String, Vec<String>, Vec<(String, String)>);

struct Pending {
    executor: Option<Arc<dyn Executor>>,
    group_key: Arc<str>,
    def: ToolDef,
    instructions: Arc<[String]>,
    source: Arc<str>,
}

impl Directory {
    /// Validates the sources and builds the snapshot; reports every problem found. Several
    /// [`SourceTools`] may carry the same source name (a catalog file yields one per group).
    pub fn build(sources: Vec<SourceTools>) -> Result<Self, DirectoryError> {
        let problems = validate(&sources);
        if !problems.is_empty() {
            return Err(DirectoryError { problems });
        }
        // group name -> (description, sources, unavailable sources)
        let mut groups: FxHashMap<String, GroupParts> = FxHashMap::default();
        let mut pending = Vec::new();
        let mut direct = Vec::new();
        let connecting = sources
            .iter()
            .any(|s| s.connecting && matches!(s.presentation, Presentation::Group(_)));
        for src in sources {
            let source: Arc<str> = Arc::from(src.source.as_str());
            match src.presentation {
                Presentation::Group(g) => {
                    let entry = groups
                        .entry(g.name.clone())
                        .or_insert_with(|| (g.description, Vec::new(), Vec::new()));
                    if !entry.1.contains(&src.source) {
                        entry.1.push(src.source.clone());
                    }
                    if let Some(reason) = src.unavailable {
                        entry.2.push((src.source.clone(), reason));
                    }
                    let instructions: Arc<[String]> = src.instructions.into();
                    let group_key: Arc<str> = Arc::from(g.name.as_str());
                    let executor = src.executor;
                    pending.extend(src.tools.into_iter().map(|def| Pending {
                        executor: executor.clone(),
                        group_key: group_key.clone(),
                        def,
                        instructions: instructions.clone(),
                        source: source.clone(),
                    }));
                }
                Presentation::Direct => {
                    let executor = src.executor;
                    direct.extend(src.tools.into_iter().map(|def| DirectEntry {
                        def,
                        source: source.clone(),
                        executor: executor.clone(),
                    }));
                }
            }
        }

        let mut group_names: Vec<&String> = groups.keys().collect();
        group_names.sort();
        let group_by_name: FxHashMap<String, u32> = group_names
            .iter()
            .enumerate()
            .map(|(i, n)| ((*n).clone(), i as u32))
            .collect();

        // Sort small (name, index) pairs, then move each pending tool once.
        let mut order: Vec<(String, usize)> = pending
            .iter()
            .enumerate()
            .map(|(i, p)| (canonical_name(&p.group_key, &p.def.name), i))
            .collect();
        order.sort_unstable();
        let mut slots: Vec<Option<Pending>> = pending.into_iter().map(Some).collect();
        let mut tools = Vec::with_capacity(order.len());
        let mut ranges: Vec<Range<ToolId>> = vec![0..0; group_names.len()];
        let mut first_seen = vec![false; group_names.len()];
        let in_order = order
            .into_iter()
            .filter_map(|(c, i)| slots[i].take().map(|p| (c, p)));
        for (id, (canonical, p)) in in_order.enumerate() {
            let id = id as ToolId;
            let group = group_by_name[&*p.group_key];
            let r = &mut ranges[group as usize];
            if !first_seen[group as usize] {
                *r = id..id;
                first_seen[group as usize] = true;
            }
            debug_assert_eq!(r.end, id, "group tools are contiguous");
            r.end = id + 1;
            tools.push((group, canonical, p));
        }
        drop(slots);
        let tools = crate::parallel::map_owned(tools, |(group, canonical, p)| {
            make_entry(group, canonical, p)
        });

        let groups: Vec<GroupEntry> = group_names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let (description, sources, unavailable) = &groups[*n];
                GroupEntry {
                    name: (*n).clone(),
                    description: description.clone(),
                    tools: ranges[i].clone(),
                    sources: sources.clone(),
                    unavailable: unavailable.clone(),
                }
            })
            .collect();
        Ok(Self {
            groups,
            tools,
            direct,
            group_by_name,
            connecting,
        })
    }

    /// Whether the model is offered the controls: when some grouped tool exists, while a
    /// grouped source is still connecting (its tools are on the way), or while one needs a
    /// login (a person can give it, and the model can say so); a source that failed to
    /// connect does not count.
    pub fn offers_controls(&self) -> bool {
        !self.tools.is_empty()
            || self.connecting
            || self
                .groups
                .iter()
                .any(|g| g.unavailable.iter().any(|(_, r)| r == NEEDS_LOGIN))
    }

    /// Groups, sorted by name.
    pub fn groups(&self) -> &[GroupEntry] {
        &self.groups
    }

    /// Grouped tools, sorted by canonical name.
    pub fn tools(&self) -> &[ToolEntry] {
        &self.tools
    }

    /// Direct tools, in source order.
    pub fn direct(&self) -> &[DirectEntry] {
        &self.direct
    }

    /// A group's index by name.
    pub fn group_index(&self, name: &str) -> Option<u32> {
        self.group_by_name.get(name).copied()
    }

    /// The grouped tool with this canonical name.
    pub fn tool_by_canonical(&self, canonical: &str) -> Option<ToolId> {
        // An escaped group name never holds `__` (each `_` becomes `_u`), so the first `__`
        // ends it; the rest is the tool's local name.
        let (escaped, tool) = canonical.split_once("__")?;
        let group = if escaped.contains('_') {
            Cow::Owned(escaped.replace("_u", "_"))
        } else {
            Cow::Borrowed(escaped)
        };
        self.tool_id(&group, tool)
            .filter(|&id| self.tools[id as usize].canonical == canonical)
    }

    /// A tool by group and exact local name.
    pub fn tool_id(&self, group: &str, tool: &str) -> Option<ToolId> {
        // A group's tools are contiguous and, sharing the group's prefix, sorted by local name:
        // a binary search of the group alone (no map kept: at 100k tools one cost 8 MB), whose
        // few entries are near each other rather than spread over the whole catalog.
        let range = self.groups[*self.group_by_name.get(group)? as usize]
            .tools
            .clone();
        self.tools[range.start as usize..range.end as usize]
            .binary_search_by(|t| t.name.as_str().cmp(tool))
            .ok()
            .map(|i| range.start + i as ToolId)
    }

    /// A tool by id.
    pub fn tool(&self, id: ToolId) -> &ToolEntry {
        &self.tools[id as usize]
    }

    /// The group a tool lives in.
    pub fn group_of(&self, id: ToolId) -> &GroupEntry {
        &self.groups[self.tools[id as usize].group as usize]
    }
}

/// Every problem with a set of sources, each with its location.
fn validate(sources: &[SourceTools]) -> Problems {
    let mut problems = Problems::new();
    // group name -> (description, first source)
    let mut groups: FxHashMap<&str, (&str, &str)> = FxHashMap::default();
    let mut local_names: FxHashMap<(&str, &str), &str> = FxHashMap::default();
    let mut direct_names: FxHashMap<&str, &str> = FxHashMap::default();
    for src in sources {
        let sloc = format!("source {:?}", src.source);
        match &src.presentation {
            Presentation::Group(g) => {
                let gloc = format!("{sloc}: group {:?}", g.name);
                let own = [
                    group_name_problem(&g.name),
                    group_description_problem(&g.description),
                ];
                if own.iter().any(Option::is_some) {
                    problems.extend(
                        own.into_iter()
                            .flatten()
                            .map(|p| Problem::new(gloc.clone(), p)),
                    );
                    continue;
                }
                let (desc, first) = *groups
                    .entry(&g.name)
                    .or_insert((&g.description, &src.source));
                if desc != g.description {
                    problems.add(
                        gloc,
                        format!(
                            "source {first:?} already describes this group differently; \
                             sources sharing a group must use the same description"
                        ),
                    );
                    continue;
                }
                for (i, def) in src.tools.iter().enumerate() {
                    let tloc = || format!("{gloc}: tools[{i}] ({:?})", def.name);
                    if let Some(p) = tool_name_problem(&def.name) {
                        problems.add(tloc(), p);
                    } else if let Some(other) =
                        local_names.insert((&g.name, &def.name), &src.source)
                    {
                        problems.add(
                            tloc(),
                            format!(
                                "tool name is already used in this group (by source {other:?})"
                            ),
                        );
                    }
                }
            }
            Presentation::Direct => {
                for (i, def) in src.tools.iter().enumerate() {
                    let tloc = || format!("{sloc}: tools[{i}] ({:?})", def.name);
                    if let Some(p) = tool_name_problem(&def.name) {
                        problems.add(tloc(), p);
                    } else if def.external {
                        problems.add(
                            tloc(),
                            "an external tool must be grouped: the host completes it as the call_tool result",
                        );
                    } else if let Some(other) = direct_names.insert(&def.name, &src.source) {
                        problems.add(
                            tloc(),
                            format!("direct tool name is already used by source {other:?}"),
                        );
                    }
                }
            }
        }
    }
    problems
}

fn make_entry(group: u32, canonical: String, p: Pending) -> ToolEntry {
    let ToolDef {
        name,
        description,
        input_schema,
        output_schema,
        codeact,
        external,
        listed,
    } = p.def;
    ToolEntry {
        group,
        summary: Some(summary_description(&description))
            .filter(|s| *s != description)
            .map(String::into_boxed_str),
        schema_text: SchemaText::from_json(input_schema.json().get()),
        name,
        canonical,
        description,
        instructions: p.instructions,
        source: p.source,
        executor: p.executor,
        codeact,
        external,
        input_schema_json: input_schema,
        output_schema_json: output_schema,
        listed,
    }
}

#[cfg(test)]
mod tests {
    use super::super::GroupSpec;
    use super::*;

    fn src(name: &str, group: &str, desc: &str, tools: &[&str]) -> SourceTools {
        SourceTools::grouped(
            name,
            GroupSpec::new(group, desc),
            tools.iter().map(|t| ToolDef::new(*t, "")).collect(),
        )
    }

    #[test]
    fn tools_sorted_by_canonical_and_groups_contiguous() {
        let d = Directory::build(vec![
            src("s1", "a_", "x", &["b", "a"]),
            src("s2", "a", "y", &["_b", "z"]),
            src("s3", "ab", "w", &["q"]),
        ])
        .expect("valid");
        let names: Vec<&str> = d.tools().iter().map(|t| t.canonical.as_str()).collect();
        assert_eq!(names, ["a___b", "a__z", "a_u__a", "a_u__b", "ab__q"]);
        let g: Vec<(&str, Range<u32>)> = d
            .groups()
            .iter()
            .map(|g| (g.name.as_str(), g.tools.clone()))
            .collect();
        assert_eq!(g, [("a", 0..2), ("a_", 2..4), ("ab", 4..5)]);
        assert_eq!(d.tool_id("a_", "b"), Some(3));
        assert_eq!(d.tool_id("a", "b"), None);
        for (id, name) in names.iter().enumerate() {
            assert_eq!(d.tool_by_canonical(name), Some(id as ToolId), "{name}");
        }
        for absent in [
            "", "a", "a__", "a___c", "zz__q", "a_u__b ", "a___a", "a_x__b", "a_uu__a", "ab__q__",
        ] {
            assert_eq!(d.tool_by_canonical(absent), None, "{absent:?}");
        }
    }

    #[test]
    fn a_summary_is_kept_only_when_it_differs_from_the_description() {
        let mut long = ToolDef::new("long", "x ".repeat(300));
        long.description.push_str("  end");
        let d = Directory::build(vec![SourceTools::grouped(
            "s",
            GroupSpec::new("g", "d"),
            vec![
                ToolDef::new("plain", "Reads a file."),
                ToolDef::new("spaced", "  Reads\n a   file. "),
                long,
            ],
        )])
        .expect("valid");
        let t = |n: &str| d.tool(d.tool_id("g", n).expect("tool"));
        assert_eq!(t("plain").summary(), "Reads a file.");
        assert!(t("plain").summary.is_none());
        assert_eq!(t("spaced").summary(), "Reads a file.");
        assert_eq!(t("spaced").description, "  Reads\n a   file. ");
        assert_eq!(t("long").summary().chars().count(), 256);
        assert!(t("long").summary().ends_with('…'));
    }

    #[test]
    fn a_connecting_source_offers_the_controls_a_failed_one_does_not() {
        let empty = || src("up", "g", "an upstream", &[]);
        let connecting = Directory::build(vec![empty().with_connecting(true)]).expect("valid");
        assert!(connecting.tools().is_empty());
        assert!(connecting.offers_controls());
        let failed =
            Directory::build(vec![empty().with_unavailable(Some("down".into()))]).expect("valid");
        assert!(!failed.offers_controls());
        // One waiting for a person to log in does: the model can say what to do.
        let login = Directory::build(vec![empty().with_unavailable(Some(NEEDS_LOGIN.into()))])
            .expect("valid");
        assert!(login.offers_controls());
        let with_tools = Directory::build(vec![src("s", "g", "d", &["a"])]).expect("valid");
        assert!(with_tools.offers_controls());
        // A direct source still connecting has no group to offer.
        let direct = Directory::build(vec![
            SourceTools::direct("d", Vec::new()).with_connecting(true),
        ])
        .expect("valid");
        assert!(!direct.offers_controls());
    }

    #[test]
    fn shared_groups_need_the_same_description() {
        assert!(
            Directory::build(vec![
                src("s1", "g", "same", &["a"]),
                src("s2", "g", "same", &["b"])
            ])
            .is_ok()
        );
        let err = Directory::build(vec![
            src("s1", "g", "one", &["a"]),
            src("s2", "g", "two", &["b"]),
        ])
        .expect_err("different descriptions");
        assert_eq!(err.problems.len(), 1);
        assert!(
            err.to_string().contains("source \"s2\": group \"g\""),
            "{err}"
        );
    }

    #[test]
    fn every_problem_is_reported_with_its_location() {
        let err = Directory::build(vec![
            src("s1", "g", "d", &["a", "a", ""]),
            src("s1", "bad__name", "d", &[]),
            src("s3", "h", " ", &[]),
            src("s4", "g", "d", &["a"]),
        ])
        .expect_err("invalid");
        let text = err.to_string();
        assert_eq!(err.problems.len(), 5, "{text}");
        assert!(text.contains("tools[1] (\"a\"): tool name is already used in this group"));
        assert!(text.contains("tools[2] (\"\"): tool name is empty"));
        assert!(text.contains("must not contain \"__\""));
        assert!(text.contains("group description is blank"));
        assert!(text.contains("source \"s4\": group \"g\": tools[0] (\"a\")"));
    }

    #[test]
    fn direct_tools_are_kept_apart_and_must_be_distinct() {
        let d = Directory::build(vec![
            SourceTools::direct("d1", vec![ToolDef::new("now", "")]),
            src("s", "g", "d", &["now"]),
        ])
        .expect("valid");
        assert_eq!(d.direct().len(), 1);
        assert_eq!(d.tools().len(), 1);
        let err = Directory::build(vec![
            SourceTools::direct("d1", vec![ToolDef::new("now", "")]),
            SourceTools::direct("d2", vec![ToolDef::new("now", "")]),
        ])
        .expect_err("duplicate direct");
        assert!(err.to_string().contains("already used by source \"d1\""));
    }
}
