//! Reading rmcp's and the HTTP client's errors: their chain of causes as plain words (no Rust
//! type names), the operating system's root cause, and whether the peer was unreachable.

/// Where an error's chain of causes really starts: rmcp's initialize error keeps its transport
/// error out of `source()`, so the chain is followed from that error instead.
fn chain_of<'a>(e: &'a (dyn std::error::Error + 'static)) -> &'a (dyn std::error::Error + 'static) {
    match e.downcast_ref::<rmcp::service::ClientInitializeError>() {
        Some(rmcp::service::ClientInitializeError::TransportError { error, .. }) => error,
        _ => e,
    }
}

/// The next cause in an error's chain; rmcp's HTTP client error keeps the HTTP client's own
/// error out of `source()`, so it is taken from there.
fn next_cause<'a>(
    e: &'a (dyn std::error::Error + 'static),
) -> Option<&'a (dyn std::error::Error + 'static)> {
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    match e.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
        Some(StreamableHttpError::Client(inner)) => Some(inner),
        _ => e.source(),
    }
}

/// The message of an rmcp or HTTP error and its causes, without Rust type names: each cause
/// in the chain once, joined with `: `.
pub fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next = Some(chain_of(e));
    while let Some(err) = next {
        let text = err.to_string();
        // rmcp wraps transport errors in messages naming generic types (`WorkerTransport<…>`).
        let cleaned = match text.find(" [") {
            Some(i) if text[i..].contains("::") => text[..i].to_owned(),
            _ => text,
        };
        let cleaned = cleaned.trim().to_owned();
        if !cleaned.is_empty()
            && !cleaned.contains("::")
            && !parts.iter().any(|p| p.contains(&cleaned))
        {
            parts.push(cleaned);
        }
        next = next_cause(err);
    }
    parts.join(": ")
}

/// The deepest cause of an error (what the OS said: "Connection refused (os error 111)").
pub(crate) fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut last = chain_of(e);
    while let Some(next) = next_cause(last) {
        last = next;
    }
    last.to_string()
}

/// Whether an error chain says the peer could not be reached (not a protocol answer).
pub(crate) fn is_unreachable(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(chain_of(e));
    while let Some(err) = next {
        if let Some(r) = err.downcast_ref::<reqwest::Error>()
            && (r.is_connect() || r.is_timeout())
        {
            return true;
        }
        if err.downcast_ref::<std::io::Error>().is_some() {
            return true;
        }
        next = next_cause(err);
    }
    false
}
