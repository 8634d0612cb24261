//! A client's servers written as the gateway's `[[source]]`s: names and groups made valid from
//! the servers' keys, and every secret (a secret-looking environment value, header, argument
//! or URL password) written as an `${env:NAME}` reference, its value never copied.

use std::collections::BTreeMap;

use super::client_file::{Server, ServerKind};

/// One `[[source]]` to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub name: String,
    pub server: ServerKind,
    pub description: String,
}

/// An environment variable a written reference needs, and where its value was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Needed {
    pub variable: String,
    pub was: String,
}

/// `servers` as sources: each one's values that look secret replaced by `${env:NAME}`
/// references (returned, so the user can be told what to set), names made valid and unique.
pub fn sources(servers: &[Server]) -> (Vec<Source>, Vec<Needed>) {
    let mut names: Vec<String> = Vec::new();
    let mut needed = Secrets::default();
    let mut out = Vec::new();
    for s in servers {
        let name = unique(valid_name(&s.key), &names);
        names.push(name.clone());
        let prefix = name.to_ascii_uppercase().replace('-', "_");
        let server = match &s.kind {
            ServerKind::Stdio {
                command,
                args,
                env,
                cwd,
            } => ServerKind::Stdio {
                command: with_defaults(command),
                args: needed.args(
                    &prefix,
                    &s.key,
                    &args.iter().map(|a| with_defaults(a)).collect::<Vec<_>>(),
                ),
                env: env
                    .iter()
                    .map(|(k, v)| {
                        let value = needed.env_value(&prefix, &s.key, k, v);
                        (k.clone(), value)
                    })
                    .collect(),
                cwd: cwd.clone(),
            },
            ServerKind::Http { url, headers, sse } => ServerKind::Http {
                sse: *sse,
                url: needed.url(&prefix, &s.key, &with_defaults(url)),
                headers: headers
                    .iter()
                    .map(|(k, v)| (k.clone(), needed.header(&prefix, &s.key, k, v)))
                    .collect(),
            },
        };
        out.push(Source {
            description: placeholder(&s.key),
            name,
            server,
        });
    }
    (out, needed.list)
}

/// Claude Code's `${NAME:-default}` in a value that is no secret (a command, an argument, a
/// URL) as its default.
fn with_defaults(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else { break };
        out.push_str(&rest[..start]);
        match after[..end].split_once(":-") {
            Some((name, default)) if is_variable(name) => out.push_str(default),
            _ => out.push_str(&rest[start..start + 3 + end]),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

fn is_variable(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The description written without `--connect`.
pub fn placeholder(key: &str) -> String {
    format!("Tools of the {key} MCP server (edit: say what they are for)")
}

/// A group or source name from a client's key: ASCII letters, digits, `-` and `_` kept,
/// anything else `-`; starting with a letter, no `__`, at most 32 characters.
fn valid_name(key: &str) -> String {
    let mut name: String = key
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    while name.contains("__") {
        name = name.replace("__", "_");
    }
    while name.contains("--") {
        name = name.replace("--", "-");
    }
    let name = name.trim_matches(['-', '_']);
    let mut name = if name.starts_with(|c: char| c.is_ascii_alphabetic()) {
        name.to_owned()
    } else {
        format!("s-{name}")
    };
    name.truncate(32);
    name.trim_end_matches(['-', '_']).to_owned()
}

/// `name`, or `name-2`, `name-3`, … when taken.
fn unique(name: String, taken: &[String]) -> String {
    if !taken.contains(&name) {
        return name;
    }
    (2..)
        .map(|i| {
            let suffix = format!("-{i}");
            let mut base = name.clone();
            base.truncate(32 - suffix.len());
            base + &suffix
        })
        .find(|n| !taken.contains(n))
        .unwrap_or(name)
}

/// The references made so far, by variable (with the value each stands for, to tell two
/// different values apart; the values are never written anywhere).
#[derive(Default)]
struct Secrets {
    values: BTreeMap<String, String>,
    list: Vec<Needed>,
}

impl Secrets {
    /// `${env:VARIABLE}` for `value`; a variable already standing for another value gets the
    /// server's prefix.
    fn reference(&mut self, prefix: &str, variable: String, value: &str, was: String) -> String {
        let variable = match self.values.get(&variable) {
            Some(v) if v != value => format!("{prefix}_{variable}"),
            _ => variable,
        };
        if !self.values.contains_key(&variable) {
            self.values.insert(variable.clone(), value.to_owned());
            self.list.push(Needed {
                variable: variable.clone(),
                was,
            });
        }
        format!("${{env:{variable}}}")
    }

    /// A client's own reference (`${env:NAME}` of VS Code, `${NAME}` of Claude Code) as ours;
    /// VS Code's `${input:id}` as a variable of the server's prefix.
    fn client_reference(&mut self, prefix: &str, key: &str, value: &str) -> Option<String> {
        let inner = value.strip_prefix("${")?.strip_suffix('}')?;
        let (variable, was) = if let Some(name) = inner.strip_prefix("env:") {
            (
                name.to_owned(),
                format!("{key}: a reference to ${{env:{name}}}"),
            )
        } else if let Some(id) = inner.strip_prefix("input:") {
            (
                format!("{prefix}_{}", env_name(id)),
                format!("{key}: VS Code's input {id:?}"),
            )
        } else if is_variable(inner.split(":-").next().unwrap_or_default()) {
            // Claude Code's `${NAME}` and `${NAME:-default}`.
            let name = inner.split(":-").next().unwrap_or_default();
            (
                name.to_owned(),
                format!("{key}: a reference to ${{{name}}}"),
            )
        } else {
            return None;
        };
        Some(self.reference(prefix, variable, value, was))
    }

    fn env_value(&mut self, prefix: &str, key: &str, name: &str, value: &str) -> String {
        // VS Code's prompt for a variable's value: the variable it fills, by its own name.
        if let Some(id) = value
            .strip_prefix("${input:")
            .and_then(|v| v.strip_suffix('}'))
        {
            let was = format!("{key}: VS Code's input {id:?}");
            return self.reference(prefix, env_name(name), value, was);
        }
        if let Some(r) = self.client_reference(prefix, key, value) {
            return r;
        }
        if secret_name(name) || secret_value(value) {
            return self.reference(prefix, env_name(name), value, format!("{key}: env {name}"));
        }
        value.to_owned()
    }

    fn header(&mut self, prefix: &str, key: &str, name: &str, value: &str) -> String {
        if let Some(r) = self.client_reference(prefix, key, value) {
            return r;
        }
        if !(secret_name(name) || secret_value(value)) {
            return value.to_owned();
        }
        // `Bearer <token>`: the scheme stays, the token is referenced.
        let (scheme, secret) = match value.split_once(' ') {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("bearer") => {
                (format!("{scheme} "), rest)
            }
            _ => (String::new(), value),
        };
        if let Some(r) = self.client_reference(prefix, key, secret) {
            return scheme + &r;
        }
        let variable = if scheme.is_empty() {
            format!("{prefix}_{}", env_name(name))
        } else {
            format!("{prefix}_TOKEN")
        };
        scheme + &self.reference(prefix, variable, secret, format!("{key}: header {name}"))
    }

    fn args(&mut self, prefix: &str, key: &str, args: &[String]) -> Vec<String> {
        let mut out = Vec::with_capacity(args.len());
        let mut after_secret_flag: Option<String> = None;
        for a in args {
            if let Some(flag) = after_secret_flag.take()
                && !a.starts_with('-')
            {
                let variable = format!("{prefix}_{}", env_name(&flag));
                out.push(self.reference(prefix, variable, a, format!("{key}: argument {flag}")));
                continue;
            }
            if let Some(r) = self.client_reference(prefix, key, a) {
                out.push(r);
                continue;
            }
            let flag = a.trim_start_matches('-');
            if a.starts_with('-') && secret_name(flag.split('=').next().unwrap_or("")) {
                match flag.split_once('=') {
                    Some((name, value)) if !value.is_empty() => {
                        let variable = format!("{prefix}_{}", env_name(name));
                        let r = self.reference(
                            prefix,
                            variable,
                            value,
                            format!("{key}: argument --{name}"),
                        );
                        out.push(format!("{}={r}", &a[..a.len() - value.len() - 1]));
                    }
                    _ => {
                        after_secret_flag = Some(flag.to_owned());
                        out.push(a.clone());
                    }
                }
                continue;
            }
            out.push(self.url(prefix, key, a));
        }
        out
    }

    /// A URL's password (`scheme://user:password@host`) as a reference; anything else as is.
    fn url(&mut self, prefix: &str, key: &str, text: &str) -> String {
        let Some((scheme, rest)) = text.split_once("://") else {
            return text.to_owned();
        };
        let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let Some(at) = rest[..authority_end].rfind('@') else {
            return text.to_owned();
        };
        let Some((user, password)) = rest[..at].split_once(':') else {
            return text.to_owned();
        };
        if password.is_empty() || password.starts_with("${") {
            return text.to_owned();
        }
        let r = self.reference(
            prefix,
            format!("{prefix}_PASSWORD"),
            password,
            format!("{key}: the password in a URL"),
        );
        format!("{scheme}://{user}:{r}{}", &rest[at..])
    }
}

/// A name as an environment variable's: upper case, anything but letters and digits `_`.
fn env_name(name: &str) -> String {
    let n: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    if n.starts_with(|c: char| c.is_ascii_digit()) {
        format!("_{n}")
    } else {
        n
    }
}

/// Whether a variable, header or flag name says it holds a secret.
fn secret_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    [
        "token",
        "secret",
        "password",
        "passwd",
        "apikey",
        "api_key",
        "api-key",
        "key",
        "auth",
        "credential",
        "cookie",
        "session",
        "pat",
    ]
    .iter()
    .any(|w| {
        n == *w
            || n.split(['_', '-', '.'])
                .any(|part| part == *w || (w.len() > 3 && part.contains(w)))
    })
}

/// Whether a value looks like a secret whatever its name: a long run of letters and digits
/// (and `-_.+/=`) with both letters and digits, not a path, URL or plain word.
fn secret_value(value: &str) -> bool {
    value.len() >= 20
        && !value.contains("://")
        && !value.starts_with(['/', '.', '~'])
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.+/=".contains(c))
        && value.chars().any(|c| c.is_ascii_digit())
        && value.chars().any(|c| c.is_ascii_alphabetic())
}

/// `sources` as the `[[source]]` tables of a gateway config.
pub fn toml(sources: &[Source]) -> String {
    let mut out = String::new();
    for s in sources {
        out.push_str("[[source]]\n");
        out.push_str(&format!("name = {}\n", quoted(&s.name)));
        match &s.server {
            ServerKind::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                out.push_str(&format!("command = {}\n", quoted(command)));
                if !args.is_empty() {
                    let list: Vec<String> = args.iter().map(|a| quoted(a)).collect();
                    out.push_str(&format!("args = [{}]\n", list.join(", ")));
                }
                if !env.is_empty() {
                    out.push_str(&format!("env = {}\n", inline_table(env)));
                }
                if let Some(cwd) = cwd {
                    out.push_str(&format!("cwd = {}\n", quoted(cwd)));
                }
            }
            ServerKind::Http { url, headers, sse } => {
                out.push_str(&format!("url = {}\n", quoted(url)));
                if *sse {
                    out.push_str("transport = \"sse\"\n");
                }
                if !headers.is_empty() {
                    out.push_str(&format!("headers = {}\n", inline_table(headers)));
                }
            }
        }
        out.push_str(&format!("group = {}\n", quoted(&s.name)));
        out.push_str(&format!("description = {}\n\n", quoted(&s.description)));
    }
    out
}

/// A TOML basic string (JSON's escapes are TOML's).
fn quoted(s: &str) -> String {
    serde_json::Value::String(s.to_owned()).to_string()
}

fn inline_table(map: &BTreeMap<String, String>) -> String {
    let pairs: Vec<String> = map
        .iter()
        .map(|(k, v)| format!("{} = {}", quoted(k), quoted(v)))
        .collect();
    format!("{{ {} }}", pairs.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_become_valid_unique_names() {
        assert_eq!(valid_name("github"), "github");
        assert_eq!(valid_name("My Server (prod)"), "My-Server-prod");
        assert_eq!(valid_name("9lives"), "s-9lives");
        assert_eq!(valid_name("a__b"), "a_b");
        assert_eq!(valid_name(&"x".repeat(40)).len(), 32);
        let taken = vec!["github".to_owned()];
        assert_eq!(unique("github".into(), &taken), "github-2");
    }

    #[test]
    fn secret_names_and_values_are_recognised() {
        for n in [
            "GITHUB_TOKEN",
            "api-key",
            "X-Api-Key",
            "Authorization",
            "DB_PASSWORD",
            "token",
        ] {
            assert!(secret_name(n), "{n}");
        }
        for n in [
            "DEBUG",
            "PATH",
            "LOG_LEVEL",
            "keyboard",
            "NODE_ENV",
            "monkey",
        ] {
            assert!(!secret_name(n), "{n}");
        }
        assert!(secret_value("ghp_a1B2c3D4e5F6g7H8i9J0kLmN"));
        assert!(!secret_value("/home/me/projects"));
        assert!(!secret_value("production"));
    }

    #[test]
    fn claude_codes_defaults_are_taken_in_plain_values() {
        assert_eq!(
            with_defaults("${BASE:-https://api.example.com}/mcp"),
            "https://api.example.com/mcp"
        );
        assert_eq!(with_defaults("${env:X} ${Y}"), "${env:X} ${Y}");
    }
}
