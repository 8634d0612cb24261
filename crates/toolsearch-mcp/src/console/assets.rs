//! The console's stylesheet and script, embedded in the binary.

/// The stylesheet's path.
pub(super) const STYLESHEET: &str = "/ui/console.css";
/// The script's path.
pub(super) const SCRIPT: &str = "/ui/console.js";

/// The asset at `path`, with its content type.
pub(super) fn asset(path: &str) -> Option<(&'static str, &'static [u8])> {
    match path {
        STYLESHEET => Some((
            "text/css; charset=utf-8",
            include_bytes!("assets/console.css"),
        )),
        SCRIPT => Some((
            "text/javascript; charset=utf-8",
            include_bytes!("assets/console.js"),
        )),
        _ => None,
    }
}
