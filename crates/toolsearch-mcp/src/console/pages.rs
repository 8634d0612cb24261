//! The console's pages (maud templates: every value is escaped). Each page is whole HTML that
//! reads without scripts; a live page (`data-refresh`) is refreshed by the script, or by a
//! `<noscript>` refresh without it.

use maud::{DOCTYPE, Markup, html};

use super::assets::{SCRIPT, STYLESHEET};
use super::side_by_side::MethodRanking;
use crate::Gateway;

/// How often the live pages refresh, in seconds.
const REFRESH_S: u32 = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum View {
    Sources,
    Tools,
    Calls,
    /// Not one of the three (sign-in, refusals).
    None,
}

fn layout(title: &str, view: View, refresh: Option<u32>, body: Markup) -> Markup {
    let here = |v: View| (v == view).then_some("here");
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { "toolsearch · " (title) }
                link rel="stylesheet" href=(STYLESHEET);
                @if let Some(s) = refresh {
                    noscript { meta http-equiv="refresh" content=(s); }
                }
                script src=(SCRIPT) defer {}
            }
            body data-refresh=[refresh] data-view=(title.to_ascii_lowercase()) {
                header {
                    strong { "toolsearch" }
                    nav {
                        a href="/ui/" class=[here(View::Sources)] { "Sources" }
                        a href="/ui/tools" class=[here(View::Tools)] { "Tools" }
                        a href="/ui/calls" class=[here(View::Calls)] { "Calls" }
                    }
                    span #live .muted {}
                }
                main { (body) }
            }
        }
    }
}

/// A tool's page in the console.
fn tool_href(canonical: &str) -> String {
    let name: String = url::form_urlencoded::byte_serialize(canonical.as_bytes()).collect();
    format!("/ui/tools?tool={name}")
}

/// A duration in milliseconds, as the tables show it.
fn ms(ms: f64) -> String {
    if ms < 10.0 {
        format!("{ms:.2}")
    } else if ms < 100.0 {
        format!("{ms:.1}")
    } else {
        format!("{ms:.0}")
    }
}

/// Sources: each source's group, transport, status, tools, restarts, calls, errors, median.
pub(super) fn sources(gateway: &Gateway) -> Markup {
    let statuses = gateway.statuses();
    let metrics = gateway.metrics();
    layout(
        "Sources",
        View::Sources,
        Some(REFRESH_S),
        html! {
            h1 { "Sources" }
            p .muted { (statuses.len()) " sources · since the gateway started · refreshed every " (REFRESH_S) " s" }
            table #sources {
                thead { tr {
                    th { "source" } th { "group" } th { "transport" } th { "status" }
                    th { "tools" } th { "restarts" } th { "calls" } th { "errors" } th { "p50 ms" }
                } }
                tbody {
                    @for s in &statuses {
                        @let calls = metrics.source_calls().summary(&s.name);
                        tr data-source=(s.name) {
                            td { (s.name) }
                            td { (s.group) }
                            td { (s.transport) }
                            td .status {
                                @if s.connecting {
                                    span .connecting { "connecting" }
                                } @else {
                                    @match &s.status {
                                        Ok(()) => span .ready { "ready" },
                                        Err(why) => {
                                            span .down { "down" } " " span .why { (why) }
                                        }
                                    }
                                }
                            }
                            td .n { (s.tools) }
                            td .n { (metrics.restarts(&s.name)) }
                            td .n .calls { (calls.calls) }
                            td .n .errors { (calls.errors) }
                            td .n { @match calls.p50 {
                                Some(d) => (ms(d.as_secs_f64() * 1000.0)),
                                None => "–",
                            } }
                        }
                    }
                }
            }
            p .muted { "p50 is estimated from the buckets of toolsearch_source_call_seconds, as histogram_quantile would; errors are calls that did not end ok." }
        },
    )
}

/// Tools: the search box (and, for a question, every method's ranking side by side), then
/// the groups and their tools.
pub(super) fn tools(
    gateway: &Gateway,
    question: Option<&str>,
    ranked: Option<&[MethodRanking]>,
) -> Markup {
    let snap = gateway.engine().snapshot();
    let dir = snap.directory();
    layout(
        "Tools",
        View::Tools,
        None,
        html! {
            h1 { "Tools" }
            form .search method="get" action="/ui/tools" {
                input type="search" name="q" value=[question] placeholder="a question, as an agent would ask it" aria-label="question";
                " "
                button type="submit" { "Rank with every method" }
            }
            @if let Some(ranked) = ranked {
                div .methods #ranked {
                    @for m in ranked {
                        section data-method=(m.method.as_str()) {
                            h2 { (m.method.as_str()) }
                            @if let Some(note) = &m.note { p .muted { (note) } }
                            @match &m.hits {
                                Ok(hits) if hits.is_empty() => p .muted { "no tool matches" },
                                Ok(hits) => ol { @for h in hits {
                                    li data-tool=(h.canonical) {
                                        a href=(tool_href(&h.canonical)) { (h.name) }
                                        " " span .score { (format!("{:.3}", h.score)) }
                                        @if !h.why.is_empty() { br; span .why { (h.why) } }
                                    }
                                } },
                                Err(e) => p .down { (e) },
                            }
                        }
                    }
                }
            }
            h2 { (dir.groups().len()) " groups, " (dir.tools().len()) " grouped tools, " (dir.direct().len()) " direct" }
            @for g in dir.groups() {
                details {
                    summary { strong { (g.name) } " · " (g.tools.len()) " tools — " span .muted { (g.description) } }
                    ul { @for id in g.tools.clone() {
                        @let t = dir.tool(id);
                        li { a href=(tool_href(&t.canonical)) { (t.name) } " — " span .muted { (t.summary()) } }
                    } }
                }
            }
            @if !dir.direct().is_empty() {
                details {
                    summary { strong { "direct tools" } " · " (dir.direct().len()) }
                    ul { @for d in dir.direct() {
                        li { a href=(tool_href(&d.def.name)) { (d.def.name) } " — " span .muted { (d.def.description) } }
                    } }
                }
            }
        },
    )
}

/// One tool's full definition, by canonical name (or a direct tool's name).
pub(super) fn tool(gateway: &Gateway, name: &str) -> Option<Markup> {
    let snap = gateway.engine().snapshot();
    let dir = snap.directory();
    let pretty = |v: &serde_json::Value| serde_json::to_string_pretty(v).unwrap_or_default();
    let (title, group, source, description, input, output) = match dir.tool_by_canonical(name) {
        Some(id) => {
            let t = dir.tool(id);
            (
                t.canonical.clone(),
                Some(dir.group_of(id).name.clone()),
                t.source.to_string(),
                t.description.clone(),
                serde_json::Value::Object(t.input_schema()),
                t.output_schema().map(serde_json::Value::Object),
            )
        }
        None => {
            let d = dir.direct().iter().find(|d| d.def.name == name)?;
            (
                d.def.name.clone(),
                None,
                d.source.to_string(),
                d.def.description.clone(),
                serde_json::Value::Object(d.def.input_schema.to_map()),
                d.def
                    .output_schema
                    .as_ref()
                    .map(|s| serde_json::Value::Object(s.to_map())),
            )
        }
    };
    Some(layout(
        "Tools",
        View::Tools,
        None,
        html! {
            h1 #tool { (title) }
            table {
                tr { th { "group" } td { (group.as_deref().unwrap_or("(direct)")) } }
                tr { th { "source" } td { (source) } }
            }
            h2 { "Description" }
            p { (description) }
            h2 { "Input schema" }
            pre #input-schema { (pretty(&input)) }
            @if let Some(out) = &output {
                h2 { "Output schema" }
                pre { (pretty(out)) }
            }
            p { a href="/ui/tools" { "All tools" } }
        },
    ))
}

/// Calls: the most recent tool calls, newest first.
pub(super) fn calls(gateway: &Gateway) -> Markup {
    let ring = gateway.recent_calls();
    let calls = ring.newest(usize::MAX);
    layout(
        "Calls",
        View::Calls,
        Some(REFRESH_S),
        html! {
            h1 { "Calls" }
            p .muted {
                (calls.len()) @if calls.len() == 1 { " call" } @else { " calls" }
                ", newest first (the gateway keeps the last " (ring.capacity())
                "). Arguments, results and headers are never kept."
            }
            table #calls {
                thead { tr {
                    th { "time (UTC)" } th { "caller" } th { "group" } th { "tool" } th { "outcome" } th { "ms" }
                } }
                tbody {
                    @for c in &calls {
                        tr {
                            td { (humantime::format_rfc3339_millis(c.ts).to_string()) }
                            td { (c.caller.as_deref().unwrap_or("–")) }
                            td { (c.group.as_deref().unwrap_or("–")) }
                            td .tool { (c.tool) }
                            td .outcome { (c.outcome) }
                            td .n { (ms(c.ms)) }
                        }
                    }
                }
            }
        },
    )
}

/// The sign-in form: the token goes to the tab's session storage, and from there into the
/// `Authorization` header of each page the script fetches.
pub(super) fn sign_in(why: &str) -> Markup {
    layout(
        "Sign in",
        View::None,
        None,
        html! {
            h1 { "Sign in" }
            p #why { (why) }
            form #login method="post" action="#" {
                label for="token" { "Bearer token " }
                input #token type="password" name="token" autocomplete="off" required;
                " "
                button type="submit" { "Open the console" }
            }
            p .muted { "The token stays in this tab's session storage and is sent only in the Authorization header of the console's own requests." }
            noscript { p .down { "Signing in sends the token in a header, which takes the console's script: turn scripts on for this page." } }
        },
    )
}

/// A refusal or a missing page.
pub(super) fn refused(why: &str) -> Markup {
    layout(
        "Refused",
        View::None,
        None,
        html! {
            h1 { "Not here" }
            p #why { (why) }
        },
    )
}
