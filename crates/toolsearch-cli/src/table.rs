//! Plain-text tables for people: columns padded to their widest cell, two spaces apart.

use std::io::Write;

/// Writes `header` and `rows`; columns listed in `right` are right-aligned (numbers).
pub fn write<const N: usize>(
    out: &mut impl Write,
    header: [&str; N],
    rows: &[[String; N]],
    right: &[usize],
) -> std::io::Result<()> {
    let header = header.map(String::from);
    let widths: Vec<usize> = (0..N)
        .map(|i| {
            rows.iter()
                .chain([&header])
                .map(|r| r[i].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in [&header].into_iter().chain(rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (c, w))| {
                if right.contains(&i) {
                    format!("{c:>w$}")
                } else {
                    format!("{c:<w$}")
                }
            })
            .collect();
        writeln!(out, "{}", cells.join("  ").trim_end())?;
    }
    Ok(())
}
