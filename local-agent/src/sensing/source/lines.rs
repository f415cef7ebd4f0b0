//! Reading text recordings one bounded line at a time, shared by the replay of line formats and
//! the Atheros CSV export reader: a hostile file with a huge line costs a counter, not memory.

use std::io::{self, BufRead};

#[derive(Debug, PartialEq, Eq)]
pub(crate) enum LineRead {
    Eof,
    /// `buf` holds the line without its terminator.
    Line,
    /// The line (this many bytes) exceeded the limit and was discarded up to its newline.
    TooLong(usize),
}

/// Reads one `\n`-terminated line into `buf`, keeping at most `max` bytes (plus `\r\n`). A
/// longer line is consumed and dropped rather than buffered, so memory stays bounded.
pub(crate) fn read_bounded_line(
    r: &mut dyn BufRead,
    buf: &mut Vec<u8>,
    max: usize,
) -> io::Result<LineRead> {
    buf.clear();
    let mut total = 0usize;
    let mut any = false;
    loop {
        let avail = match r.fill_buf() {
            Ok(a) => a,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if avail.is_empty() {
            break;
        }
        any = true;
        let newline = avail.iter().position(|&b| b == b'\n');
        let take = newline.map_or(avail.len(), |i| i + 1);
        let chunk = &avail[..newline.unwrap_or(avail.len())];
        total = total.saturating_add(chunk.len());
        if total <= max + 1 {
            buf.extend_from_slice(chunk);
        }
        r.consume(take);
        if newline.is_some() {
            break;
        }
    }
    if !any {
        return Ok(LineRead::Eof);
    }
    if total <= max + 1 && buf.last() == Some(&b'\r') {
        buf.pop();
        total -= 1;
    }
    if total > max {
        buf.clear();
        return Ok(LineRead::TooLong(total));
    }
    Ok(LineRead::Line)
}
