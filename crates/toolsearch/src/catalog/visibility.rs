//! Which tools of one directory snapshot a caller may see: a bit per grouped tool, a flag per
//! direct tool, and how many tools of each group are visible. Search filters by it before
//! ranking and paging; the controls answer from it; a hidden tool is treated everywhere as one
//! that does not exist. Built once per snapshot and caller class, shared by every caller of
//! that class (the indexes themselves are never rebuilt per caller).

use super::{DirectEntry, Directory, GroupEntry, ToolId};

/// The tools one caller may see in one snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Visibility {
    bits: Vec<u64>,
    direct: Vec<bool>,
    groups: Vec<u32>,
    visible: usize,
}

impl Visibility {
    /// The tools of `dir` for which `sees(group, tool)` holds; a direct tool is asked with no
    /// group.
    pub fn build(dir: &Directory, mut sees: impl FnMut(Option<&str>, &str) -> bool) -> Self {
        let tools = dir.tools();
        let mut bits = vec![0u64; tools.len().div_ceil(64)];
        let mut groups = vec![0u32; dir.groups().len()];
        let mut visible = 0;
        for (id, t) in tools.iter().enumerate() {
            let group = &dir.groups()[t.group as usize];
            if sees(Some(&group.name), &t.name) {
                bits[id / 64] |= 1 << (id % 64);
                groups[t.group as usize] += 1;
                visible += 1;
            }
        }
        let direct = dir
            .direct()
            .iter()
            .map(|d| sees(None, &d.def.name))
            .collect();
        Self {
            bits,
            direct,
            groups,
            visible,
        }
    }

    /// Everything of `dir` visible.
    pub fn everything(dir: &Directory) -> Self {
        Self::build(dir, |_, _| true)
    }

    /// Whether grouped tool `id` is visible.
    #[inline]
    pub fn tool(&self, id: ToolId) -> bool {
        let i = id as usize;
        self.bits
            .get(i / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    /// Whether direct tool `index` (its place in [`Directory::direct`]) is visible.
    pub fn direct(&self, index: usize) -> bool {
        self.direct.get(index).copied().unwrap_or(false)
    }

    /// Visible tools of group `g`.
    pub fn group_count(&self, g: u32) -> u32 {
        self.groups.get(g as usize).copied().unwrap_or(0)
    }

    /// Whether group `g` has a visible tool (a group without one is hidden too).
    pub fn group(&self, g: u32) -> bool {
        self.group_count(g) > 0
    }

    /// Visible grouped tools.
    pub fn visible(&self) -> usize {
        self.visible
    }

    /// Visible grouped tools among `ids`.
    pub fn count_in(&self, ids: std::ops::Range<ToolId>) -> usize {
        ids.filter(|&id| self.tool(id)).count()
    }
}

/// A directory as one caller sees it: hidden tools, and groups left without a visible tool,
/// do not exist in it. Without a [`Visibility`], everything is visible.
#[derive(Debug, Clone, Copy)]
pub struct View<'a> {
    dir: &'a Directory,
    visible: Option<&'a Visibility>,
}

impl<'a> View<'a> {
    /// `dir` as `visible` shows it (`None`: all of it).
    pub fn new(dir: &'a Directory, visible: Option<&'a Visibility>) -> Self {
        Self { dir, visible }
    }

    /// The whole directory (visible or not: use the view's own methods to respect it).
    pub fn dir(&self) -> &'a Directory {
        self.dir
    }

    /// The visibility, when there is one.
    pub fn visibility(&self) -> Option<&'a Visibility> {
        self.visible
    }

    /// Whether grouped tool `id` is visible.
    #[inline]
    pub fn sees(&self, id: ToolId) -> bool {
        self.visible.is_none_or(|v| v.tool(id))
    }

    /// Whether group `g` has a visible tool.
    pub fn sees_group(&self, g: u32) -> bool {
        self.visible.is_none_or(|v| v.group(g))
    }

    /// Visible tools of group `g`.
    pub fn group_count(&self, g: u32) -> u32 {
        match self.visible {
            None => {
                let r = &self.dir.groups()[g as usize].tools;
                r.end - r.start
            }
            Some(v) => v.group_count(g),
        }
    }

    /// The visible groups, by name, with their indexes.
    pub fn groups(&self) -> impl Iterator<Item = (u32, &'a GroupEntry)> + '_ {
        self.dir
            .groups()
            .iter()
            .enumerate()
            .map(|(i, g)| (i as u32, g))
            .filter(|(i, _)| self.sees_group(*i))
    }

    /// How many groups are visible.
    pub fn group_total(&self) -> usize {
        match self.visible {
            None => self.dir.groups().len(),
            Some(_) => self.groups().count(),
        }
    }

    /// A visible group by name.
    pub fn group_index(&self, name: &str) -> Option<u32> {
        self.dir.group_index(name).filter(|g| self.sees_group(*g))
    }

    /// A visible tool by group and local name.
    pub fn tool_id(&self, group: &str, tool: &str) -> Option<ToolId> {
        self.dir.tool_id(group, tool).filter(|id| self.sees(*id))
    }

    /// A visible tool by canonical name.
    pub fn tool_by_canonical(&self, canonical: &str) -> Option<ToolId> {
        self.dir
            .tool_by_canonical(canonical)
            .filter(|id| self.sees(*id))
    }

    /// The visible direct tools, with their places in [`Directory::direct`].
    pub fn direct(&self) -> impl Iterator<Item = (usize, &'a DirectEntry)> + '_ {
        self.dir
            .direct()
            .iter()
            .enumerate()
            .filter(|(i, _)| self.visible.is_none_or(|v| v.direct(*i)))
    }

    /// Visible grouped tools.
    pub fn tool_total(&self) -> usize {
        self.visible
            .map_or(self.dir.tools().len(), Visibility::visible)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{GroupSpec, SourceTools, ToolDef};

    #[test]
    fn a_predicate_selects_tools_and_counts_groups() {
        let dir = Directory::build(vec![
            SourceTools::grouped(
                "s",
                GroupSpec::new("crm", "d"),
                vec![ToolDef::new("a", ""), ToolDef::new("b", "")],
            ),
            SourceTools::grouped("t", GroupSpec::new("pay", "d"), vec![ToolDef::new("c", "")]),
            SourceTools::direct("u", vec![ToolDef::new("clock", "")]),
        ])
        .expect("valid");
        let v = Visibility::build(&dir, |g, t| g == Some("crm") && t == "b" || g.is_none());
        let b = dir.tool_id("crm", "b").expect("b");
        let a = dir.tool_id("crm", "a").expect("a");
        assert!(v.tool(b) && !v.tool(a));
        assert_eq!(v.visible(), 1);
        assert_eq!((v.group_count(0), v.group(1)), (1, false));
        assert!(v.direct(0));
        assert_eq!(Visibility::everything(&dir).visible(), 3);
    }
}
