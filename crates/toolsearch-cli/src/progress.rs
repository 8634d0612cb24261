//! Progress on stderr (drawn only when stderr is a terminal).

/// A bar over tools: `MSG [====>   ] 120/2479 tools, 95/s, eta 25s`.
pub fn tools_bar(message: &'static str) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::new(0).with_style(
        indicatif::ProgressStyle::with_template(
            "{msg} [{bar:30}] {pos}/{len} tools, {per_sec}, eta {eta}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    bar.set_message(message);
    bar
}
