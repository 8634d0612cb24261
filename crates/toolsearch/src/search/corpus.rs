//! What search reads of the things it ranks: a [`Corpus`] of documents, each a name, a
//! description, a group and parameter text. A tool directory is one; a skills catalog is
//! another (its skills are not tools and are never dispatched — they are only ranked).

use crate::catalog::schema_text::SchemaText;
use crate::catalog::{Directory, ToolId};
use crate::skills::Skills;

/// The searchable fields of one document.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Doc<'a> {
    /// Its name (a tool's local name, a skill's id).
    pub name: &'a str,
    /// Its fully qualified name (a tool's canonical name); a query equal to it is exact.
    pub canonical: &'a str,
    /// Its description.
    pub description: &'a str,
    /// Index of its group.
    pub group: u32,
    /// Its parameters' names and descriptions, when it has any.
    pub params: Option<&'a SchemaText>,
}

impl<'a> Doc<'a> {
    /// Parameter names.
    pub fn param_names(&self) -> impl Iterator<Item = &'a str> + Clone + 'a {
        self.params.into_iter().flat_map(SchemaText::property_names)
    }

    /// Parameter descriptions.
    pub fn param_descriptions(&self) -> impl Iterator<Item = &'a str> + Clone + 'a {
        self.params.into_iter().flat_map(SchemaText::descriptions)
    }
}

/// Documents numbered `0..len()`, in groups; what every index is built over.
pub trait Corpus: Sync {
    /// How many documents.
    fn len(&self) -> usize;

    /// Whether there are none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Document `id` (`id < len()`).
    fn doc(&self, id: ToolId) -> Doc<'_>;

    /// How many groups.
    fn group_count(&self) -> usize;

    /// A group's name.
    fn group_name(&self, group: u32) -> &str;

    /// A group's description.
    fn group_description(&self, group: u32) -> &str;
}

impl Corpus for Directory {
    fn len(&self) -> usize {
        self.tools().len()
    }

    fn doc(&self, id: ToolId) -> Doc<'_> {
        let t = self.tool(id);
        Doc {
            name: &t.name,
            canonical: &t.canonical,
            description: &t.description,
            group: t.group,
            params: Some(&t.schema_text),
        }
    }

    fn group_count(&self) -> usize {
        self.groups().len()
    }

    fn group_name(&self, group: u32) -> &str {
        &self.groups()[group as usize].name
    }

    fn group_description(&self, group: u32) -> &str {
        &self.groups()[group as usize].description
    }
}

/// Skills are searched as one group named `skills`, each document named by its skill id.
impl Corpus for Skills {
    fn len(&self) -> usize {
        self.all().len()
    }

    fn doc(&self, id: ToolId) -> Doc<'_> {
        let s = &self.all()[id as usize];
        Doc {
            name: &s.name,
            canonical: &s.name,
            description: &s.description,
            group: 0,
            params: None,
        }
    }

    fn group_count(&self) -> usize {
        1
    }

    fn group_name(&self, _: u32) -> &str {
        Skills::GROUP
    }

    fn group_description(&self, _: u32) -> &str {
        Skills::GROUP_DESCRIPTION
    }
}
