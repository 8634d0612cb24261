//! Per-caller catalogs: the `[[policy]]` rules compiled once, the rules that apply to a caller
//! (its [`CallerClass`], read from its session's trusted context), and the [`Visibility`] they
//! give over a directory. With no rule, every caller sees every tool; with rules, a caller sees
//! the tools some applicable rule allows and no applicable rule denies, and a caller no rule
//! applies to sees nothing.
//!
//! Tools are named `group/tool` for the globs; a direct tool by its name alone.

use globset::{Glob, GlobSet, GlobSetBuilder};

use crate::catalog::{Directory, Visibility};
use crate::config::PolicyRule;
use crate::exec::Session;
use crate::text::fnv1a;

/// The context path of a caller's client name.
pub const CLIENT_PATH: &str = "identity.client";

/// A set of globs over `group/tool`.
#[derive(Debug, Clone)]
pub struct ToolGlobs(GlobSet);

impl ToolGlobs {
    /// Compiles `globs`; the first bad one is the error.
    pub fn new(globs: &[String]) -> Result<Self, String> {
        let mut b = GlobSetBuilder::new();
        for g in globs {
            b.add(Glob::new(g).map_err(|e| format!("{g:?}: {e}"))?);
        }
        b.build().map(Self).map_err(|e| e.to_string())
    }

    /// Whether tool `tool` of `group` (a direct tool: no group) matches.
    pub fn matches(&self, group: Option<&str>, tool: &str) -> bool {
        if self.0.is_empty() {
            return false;
        }
        match group {
            Some(g) => self.0.is_match(format!("{g}/{tool}")),
            None => self.0.is_match(tool),
        }
    }
}

#[derive(Debug, Clone)]
struct Rule {
    client: Option<String>,
    claims: Vec<(String, String)>,
    allow: ToolGlobs,
    deny: ToolGlobs,
    /// A hash of what the rule says, the same in every process (see [`Policy::class_key`]).
    fingerprint: u64,
}

impl Rule {
    fn applies_to(&self, session: &Session) -> bool {
        self.client
            .as_deref()
            .is_none_or(|c| session.context(CLIENT_PATH) == Some(c))
            && self
                .claims
                .iter()
                .all(|(path, value)| session.context(path) == Some(value.as_str()))
    }
}

/// What `rule` says, hashed: its match (client and claims) and its globs, each part
/// length-prefixed so that no two rules share a text.
fn fingerprint(rule: &PolicyRule) -> u64 {
    let mut text = String::new();
    let mut part = |s: &str| {
        text.push_str(&s.len().to_string());
        text.push(':');
        text.push_str(s);
    };
    part(rule.client.as_deref().unwrap_or("\u{0}"));
    for (path, value) in &rule.claims {
        part(path);
        part(value);
    }
    part("allow");
    rule.allow.iter().for_each(|g| part(g));
    part("deny");
    rule.deny.iter().for_each(|g| part(g));
    fnv1a(&text)
}

/// Which rules apply to a caller: callers of one class see the same catalog.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CallerClass(Vec<u64>);

impl CallerClass {
    fn applies(&self, rule: usize) -> bool {
        self.0
            .get(rule / 64)
            .is_some_and(|w| w & (1 << (rule % 64)) != 0)
    }
}

/// The compiled `[[policy]]` rules.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    rules: Vec<Rule>,
}

impl Policy {
    /// Compiles `rules` (an empty list: every caller sees every tool).
    pub fn new(rules: &[PolicyRule]) -> Result<Self, String> {
        let rules = rules
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let globs =
                    |g: &[String]| ToolGlobs::new(g).map_err(|e| format!("policy[{i}]: {e}"));
                Ok(Rule {
                    client: r.client.clone(),
                    claims: r.claims.clone().into_iter().collect(),
                    allow: globs(&r.allow)?,
                    deny: globs(&r.deny)?,
                    fingerprint: fingerprint(r),
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(Self { rules })
    }

    /// Whether there are no rules (every caller sees everything).
    pub fn is_open(&self) -> bool {
        self.rules.is_empty()
    }

    /// The rules that apply to `session`'s caller.
    pub fn class_of(&self, session: &Session) -> CallerClass {
        let mut bits = vec![0u64; self.rules.len().div_ceil(64)];
        for (i, r) in self.rules.iter().enumerate() {
            if r.applies_to(session) {
                bits[i / 64] |= 1 << (i % 64);
            }
        }
        CallerClass(bits)
    }

    /// A name for `class` that stays the same across restarts and replicas while the rules
    /// that apply to it say the same (in any order): what learned uses are kept apart by.
    /// Empty without rules (one class, every caller).
    pub fn class_key(&self, class: &CallerClass) -> String {
        if self.is_open() {
            return String::new();
        }
        let mut applying: Vec<u64> = self
            .rules
            .iter()
            .enumerate()
            .filter(|(i, _)| class.applies(*i))
            .map(|(_, r)| r.fingerprint)
            .collect();
        applying.sort_unstable();
        applying.dedup();
        let text: Vec<String> = applying.iter().map(|f| format!("{f:016x}")).collect();
        format!("{:016x}", fnv1a(&text.join(",")))
    }

    /// What callers of `class` see of `dir`.
    pub fn visibility(&self, dir: &Directory, class: &CallerClass) -> Visibility {
        let applicable: Vec<&Rule> = self
            .rules
            .iter()
            .enumerate()
            .filter(|(i, _)| class.applies(*i))
            .map(|(_, r)| r)
            .collect();
        Visibility::build(dir, |group, tool| {
            applicable.iter().any(|r| r.allow.matches(group, tool))
                && !applicable.iter().any(|r| r.deny.matches(group, tool))
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::catalog::{GroupSpec, SourceTools, ToolDef};

    fn session(client: &str, tenant: &str) -> Session {
        Session::with_context(BTreeMap::from([
            (CLIENT_PATH.to_owned(), client.to_owned()),
            ("identity.tenant_id".to_owned(), tenant.to_owned()),
        ]))
    }

    /// A class's key depends on what its rules say, not on their order or the process; other
    /// classes get other keys; without rules it is empty.
    #[test]
    fn class_keys_are_stable_and_apart() {
        let alice = PolicyRule::for_client("alice", &["billing/*"], &[]);
        let bob = PolicyRule::for_client("bob", &["billing/get_*"], &["crm/*"]);
        let everyone = PolicyRule::new(vec!["crm/find".into()], vec![]);
        let one = Policy::new(&[alice.clone(), bob.clone(), everyone.clone()]).expect("policy");
        let other = Policy::new(&[everyone, bob, alice]).expect("policy");
        let key = |p: &Policy, client: &str| p.class_key(&p.class_of(&session(client, "t")));
        assert_eq!(key(&one, "alice"), key(&other, "alice"));
        assert_eq!(key(&one, "bob"), key(&other, "bob"));
        assert_ne!(key(&one, "alice"), key(&one, "bob"));
        assert_ne!(key(&one, "carol"), key(&one, "alice"));
        assert_eq!(key(&one, "alice").len(), 16);
        // A rule that says something else is another class.
        let changed = Policy::new(&[PolicyRule::for_client("alice", &["billing/get_*"], &[])])
            .expect("policy");
        assert_ne!(key(&changed, "alice"), key(&one, "alice"));
        assert_eq!(key(&Policy::default(), "alice"), "");
    }

    #[test]
    fn rules_apply_by_client_and_claims_and_deny_wins() {
        let dir = Directory::build(vec![
            SourceTools::grouped(
                "s",
                GroupSpec::new("billing", "d"),
                vec![
                    ToolDef::new("get_invoice", ""),
                    ToolDef::new("refund_payment", ""),
                ],
            ),
            SourceTools::grouped(
                "t",
                GroupSpec::new("crm", "d"),
                vec![ToolDef::new("find", "")],
            ),
            SourceTools::direct("u", vec![ToolDef::new("clock", "")]),
        ])
        .expect("valid");
        let policy = Policy::new(&[
            PolicyRule::for_client(
                "alice",
                &["crm/*", "billing/*", "clock"],
                &["billing/refund_*"],
            ),
            PolicyRule::for_client("bob", &["billing/*"], &[])
                .with_claim("identity.tenant_id", "acme"),
        ])
        .expect("valid");
        let alice = policy.visibility(&dir, &policy.class_of(&session("alice", "x")));
        let names = |v: &Visibility| {
            dir.tools()
                .iter()
                .enumerate()
                .filter(|(i, _)| v.tool(*i as u32))
                .map(|(_, t)| t.canonical.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(&alice), ["billing__get_invoice", "crm__find"]);
        assert!(alice.direct(0));
        let bob_acme = policy.visibility(&dir, &policy.class_of(&session("bob", "acme")));
        assert_eq!(
            names(&bob_acme),
            ["billing__get_invoice", "billing__refund_payment"]
        );
        let bob_other = policy.visibility(&dir, &policy.class_of(&session("bob", "other")));
        assert_eq!(
            bob_other.visible(),
            0,
            "no rule applies: nothing is visible"
        );
        assert!(!bob_other.direct(0));
        assert!(Policy::new(&[]).expect("empty").is_open());

        // A rule that only denies, with the config's default `allow` (every tool): every other
        // tool is allowed.
        let policy = Policy::new(&[PolicyRule::for_client(
            "alice",
            &["*"],
            &["billing/refund_*"],
        )])
        .expect("valid");
        let alice = policy.visibility(&dir, &policy.class_of(&session("alice", "x")));
        assert_eq!(names(&alice), ["billing__get_invoice", "crm__find"]);
        assert!(alice.direct(0));
        assert!(Policy::new(&[PolicyRule::for_client("a", &["[z-a]"], &[])]).is_err());
    }
}
