//! The access sections of a config file — `[[client]]`, `[auth.jwt]`, `[[policy]]`,
//! `[approval]`, `[limits] rate`, `[audit]` — validated into [`AccessConfig`], every problem
//! with its key path.

use std::path::Path;

use toolsearch::{PolicyRule, RateLimit, glob_problem, outside};

use super::access::{AccessConfig, ClientConfig, JWT_ALGORITHMS, JwksSource, JwtConfig};
use super::raw::{RawConfig, RawJwt, RawRate};
use toolsearch::Problems;

/// Default `[auth.jwt] leeway_s`.
pub const DEFAULT_LEEWAY_S: u64 = 30;

/// The `allow` of a `[[policy]]` that gives none: every tool (`*` crosses the `/` of
/// `group/tool`).
const ALL_TOOLS: &str = "*";

/// The access sections of `raw` (taken out of it); problems are appended.
pub(super) fn access(
    raw: &mut RawConfig,
    rate: Option<RawRate>,
    base: &Path,
    problems: &mut Problems,
) -> AccessConfig {
    let mut out = AccessConfig::default();
    for (i, c) in std::mem::take(&mut raw.client).into_iter().enumerate() {
        let at = format!("client[{i}]");
        let name = match c.name {
            Some(n) if !n.trim().is_empty() => n,
            _ => {
                problems.add(format!("{at}.name"), "missing or empty");
                continue;
            }
        };
        let at = format!("{at} ({name:?})");
        if out.clients.iter().any(|o: &ClientConfig| o.name == name) {
            problems.add(format!("{at}.name"), "used by an earlier client");
        }
        let token = c.token.unwrap_or_default();
        if !is_env_reference(&token) {
            problems.add(
                format!("{at}.token"),
                "a client's token comes from the environment: write \"${env:NAME}\"",
            );
        }
        let claims = c.claims.unwrap_or_default();
        for k in claims.keys() {
            if !is_segment(k) {
                problems.add(
                    format!("{at}.claims"),
                    format!("{k:?} is not a claim name (letters, digits, _ and -)"),
                );
            }
        }
        out.clients.push(ClientConfig {
            name,
            token,
            claims,
            admin: c.admin.unwrap_or(false),
        });
    }
    if let Some(jwt) = raw.auth.take().and_then(|a| a.jwt) {
        out.jwt = jwt_config(jwt, base, problems);
    }
    for (i, p) in std::mem::take(&mut raw.policy).into_iter().enumerate() {
        let at = format!("policy[{i}]");
        let when = p.when.unwrap_or_default();
        let claims = when.claims.unwrap_or_default();
        for k in claims.keys() {
            if !(k.starts_with("identity.") && is_context_path(k)) {
                problems.add(
                    format!("{at}.match.claims"),
                    format!("{k:?} is not a context path such as \"identity.tenant_id\""),
                );
            }
        }
        // Without `allow`, a rule allows every tool its `deny` does not name.
        let allow = p.allow.unwrap_or_else(|| vec![ALL_TOOLS.to_owned()]);
        let deny = p.deny.unwrap_or_default();
        for (key, globs) in [("allow", &allow), ("deny", &deny)] {
            for (j, g) in globs.iter().enumerate() {
                if let Some(why) = glob_problem(g) {
                    problems.add(format!("{at}.{key}[{j}]"), format!("{g:?}: {why}"));
                }
            }
        }
        out.policies
            .push(PolicyRule::new(allow, deny).with_match(when.client, claims));
    }
    if let Some(a) = raw.approval.take() {
        let tools = a.tools.unwrap_or_default();
        for (j, g) in tools.iter().enumerate() {
            if let Some(why) = glob_problem(g) {
                problems.add(format!("approval.tools[{j}]"), format!("{g:?}: {why}"));
            }
        }
        out.approval = tools;
    }
    if let Some(r) = rate {
        let per_minute = r.calls_per_minute.unwrap_or(f64::NAN);
        if !(per_minute.is_finite() && per_minute > 0.0 && per_minute <= 1e6) {
            problems.add(
                "limits.rate.calls_per_minute",
                "a number of calls above 0 (at most 1000000) is needed",
            );
        }
        let burst = match r.burst {
            None => (per_minute / 10.0).ceil().clamp(1.0, 1e6) as u32,
            Some(b) => match outside("limits.rate.burst", b, &(1..=1_000_000)) {
                None => b as u32,
                Some(problem) => {
                    problems.push(problem);
                    1
                }
            },
        };
        out.rate = Some(RateLimit::new(per_minute, burst));
    }
    if let Some(a) = raw.audit.take() {
        match a.file {
            Some(f) if !f.trim().is_empty() => out.audit_file = Some(base.join(f)),
            _ => problems.add("audit.file", "missing or empty"),
        }
    }
    out
}

fn jwt_config(j: RawJwt, base: &Path, problems: &mut Problems) -> Option<JwtConfig> {
    let before = problems.len();
    let mut required = |key: &str, v: Option<String>| match v {
        Some(s) if !s.trim().is_empty() => s,
        _ => {
            problems.add(format!("auth.jwt.{key}"), "missing or empty");
            String::new()
        }
    };
    let jwks = required("jwks", j.jwks);
    let issuer = required("issuer", j.issuer);
    let audience = required("audience", j.audience);
    let jwks = if jwks.starts_with("https://") {
        JwksSource::Url(jwks)
    } else if let Some(rest) = jwks.strip_prefix("http://") {
        let authority = rest.split('/').next().unwrap_or_default();
        let host = match authority.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or_default(),
            None => authority.split(':').next().unwrap_or_default(),
        };
        if !matches!(host, "127.0.0.1" | "localhost" | "::1") {
            problems.add("auth.jwt.jwks", format!("{jwks:?}: keys are fetched over https:// (plain http:// only from a loopback host)"));
        }
        JwksSource::Url(jwks)
    } else {
        JwksSource::File(base.join(&jwks))
    };
    let algorithms = j.algorithms.unwrap_or_else(|| vec!["RS256".to_owned()]);
    if algorithms.is_empty() {
        problems.add("auth.jwt.algorithms", "name at least one algorithm");
    }
    for a in &algorithms {
        if a.eq_ignore_ascii_case("none") {
            problems.add("auth.jwt.algorithms", "\"none\" is never accepted");
        } else if !JWT_ALGORITHMS.contains(&a.as_str()) {
            problems.add(
                "auth.jwt.algorithms",
                format!("{a:?} is not one of {}", JWT_ALGORITHMS.join(", ")),
            );
        }
    }
    let leeway_s = match j.leeway_s {
        None => DEFAULT_LEEWAY_S,
        Some(n) => match outside("auth.jwt.leeway_s", n, &(0..=600)) {
            None => n as u64,
            Some(problem) => {
                problems.push(problem);
                DEFAULT_LEEWAY_S
            }
        },
    };
    let authorization_servers = j
        .authorization_servers
        .unwrap_or_else(|| vec![issuer.clone()]);
    let admin_claim = j.admin_claim;
    if let Some(c) = &admin_claim
        && !is_segment(c)
    {
        problems.add(
            "auth.jwt.admin_claim",
            format!("{c:?} is not a claim name (letters, digits, _ and -)"),
        );
    }
    (problems.len() == before).then_some(JwtConfig {
        jwks,
        issuer,
        audience,
        algorithms,
        leeway_s,
        authorization_servers,
        admin_claim,
    })
}

/// `${env:NAME}` and nothing else.
fn is_env_reference(s: &str) -> bool {
    s.strip_prefix("${env:")
        .and_then(|r| r.strip_suffix('}'))
        .is_some_and(|name| {
            let mut b = name.bytes();
            b.next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
                && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
        })
}

fn is_segment(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A dotted path of segments (`identity.tenant_id`).
pub(super) fn is_context_path(path: &str) -> bool {
    !path.is_empty() && path.split('.').all(is_segment)
}
