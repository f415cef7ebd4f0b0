//! ESPectre `.npz` captures: a zip of NPY v1.0 arrays (sensing notes, "Data").
//!
//! `csi_data` is `|i1` (N, 2·subcarriers) in C order, one raw (imag, real) buffer per packet.
//! The files carry no per-packet timestamps, only `duration_ms`, so packets are spread evenly:
//! `t = i / rate` with `rate = N / (duration_ms / 1000)`.
//!
//! The NPY reader is deliberately small and strict (only the header keys and dtypes these
//! files use) because the input may be untrusted and numpy's header is a Python literal.

use std::io::{Cursor, Read};

use super::error::clip;
use super::layout::{ChipFamily, SecondaryChannel, SubcarrierLayout, layout_for};
use super::{CsiFrame, CsiShape, MAX_BUFFER_BYTES, ParseError, WireFormat, csi_from_buffer};

/// Largest decompressed array accepted. The biggest bundled file holds 777 KB; this bounds
/// memory (and zip bombs) while allowing captures of several hours.
pub const MAX_ARRAY_BYTES: usize = 64 * 1024 * 1024;
/// Largest number of entries in the archive; real files have 8.
const MAX_ENTRIES: usize = 64;
/// Longest NPY header accepted; numpy writes 118 bytes for these arrays.
const MAX_HEADER_BYTES: usize = 4096;

/// Everything in the capture except the CSI itself.
#[derive(Debug, Clone, PartialEq)]
pub struct NpzMeta {
    pub node_id: String,
    pub n_packets: usize,
    pub num_subcarriers: usize,
    pub duration_ms: f64,
    /// Packets per second derived from the packet count and duration.
    pub rate_hz: f64,
    /// `esp32`, `s3`, `c3`, `c5`, `c6`... as recorded.
    pub chip: Option<String>,
    pub label: Option<String>,
    pub collected_at: Option<String>,
    pub format_version: Option<String>,
    pub gain_locked: Option<bool>,
    /// Whether the first word was zeroed (classic ESP32 captures).
    pub first_word_invalid: bool,
    pub layout: Option<SubcarrierLayout>,
}

/// A decoded capture, frames in recording order.
#[derive(Debug, Clone, PartialEq)]
pub struct NpzRecording {
    pub meta: NpzMeta,
    pub frames: Vec<CsiFrame>,
}

/// Decodes an ESPectre `.npz` held in memory. `node_id` names the capture (replay passes the
/// file stem), since the file records no node identity.
pub fn parse_npz(bytes: &[u8], node_id: &str) -> Result<NpzRecording, ParseError> {
    let mut zip = zip::ZipArchive::new(Cursor::new(bytes)).map_err(zip_err)?;
    if zip.len() > MAX_ENTRIES {
        return Err(ParseError::Zip(format!("{} entries", zip.len())));
    }
    let csi_raw = read_entry(&mut zip, "csi_data.npy")?
        .ok_or_else(|| ParseError::Zip("no csi_data.npy".to_string()))?;
    let csi = NpyArray::parse(&csi_raw, "csi_data")?;
    let duration_raw = read_entry(&mut zip, "duration_ms.npy")?
        .ok_or_else(|| ParseError::Zip("no duration_ms.npy".to_string()))?;
    let duration_ms = NpyArray::parse(&duration_raw, "duration_ms")?.scalar_f64()?;

    let text = |zip: &mut Archive<'_>, name: &str| -> Result<Option<String>, ParseError> {
        match read_entry(zip, &format!("{name}.npy"))? {
            Some(raw) => Ok(Some(NpyArray::parse(&raw, name)?.scalar_str()?)),
            None => Ok(None),
        }
    };
    let chip = text(&mut zip, "chip")?;
    let label = text(&mut zip, "label")?;
    let collected_at = text(&mut zip, "collected_at")?;
    let format_version = text(&mut zip, "format_version")?;
    let gain_locked = match read_entry(&mut zip, "gain_locked.npy")? {
        Some(raw) => Some(NpyArray::parse(&raw, "gain_locked")?.scalar_bool()?),
        None => None,
    };
    let declared_sc = match read_entry(&mut zip, "num_subcarriers.npy")? {
        Some(raw) => Some(NpyArray::parse(&raw, "num_subcarriers")?.scalar_i64()?),
        None => None,
    };

    if csi.descr != Dtype::I1 || csi.fortran_order || csi.shape.len() != 2 {
        return Err(npy_err(
            "csi_data",
            "expected a C-order |i1 array of shape (N, 2*subcarriers)",
        ));
    }
    let (n, cols) = (csi.shape[0], csi.shape[1]);
    if cols == 0 || cols % 2 != 0 || cols > MAX_BUFFER_BYTES {
        return Err(ParseError::MalformedBuffer(
            "csi_data rows must hold an even, bounded number of bytes",
        ));
    }
    let num_subcarriers = cols / 2;
    if let Some(d) = declared_sc
        && usize::try_from(d).ok() != Some(num_subcarriers)
    {
        return Err(ParseError::LengthMismatch {
            expected: usize::try_from(d).unwrap_or(usize::MAX),
            got: num_subcarriers,
        });
    }
    if n == 0 {
        return Err(ParseError::EmptyBuffer);
    }
    if !(duration_ms.is_finite() && duration_ms > 0.0) {
        return Err(ParseError::NonFiniteTimestamp);
    }
    let duration_s = duration_ms / 1000.0;
    let rate_hz = n as f64 / duration_s;

    let chip_lc = chip.as_deref().map(str::to_ascii_lowercase);
    let first_word_invalid = chip_lc.as_deref() == Some("esp32");
    let family = match chip_lc.as_deref() {
        Some("c5" | "c6" | "esp32c5" | "esp32c6") => ChipFamily::C5C6,
        _ => ChipFamily::Classic,
    };
    let layout = layout_for(cols, SecondaryChannel::None, family);

    let frames = csi
        .data
        .chunks_exact(cols)
        .enumerate()
        .map(|(i, row)| {
            let buf: Vec<i8> = row.iter().map(|&b| i8::from_le_bytes([b])).collect();
            CsiFrame {
                node_id: node_id.to_string(),
                t_s: i as f64 / rate_hz,
                rssi_dbm: None,
                channel: None,
                format: WireFormat::Npz,
                csi: csi_from_buffer(&buf, first_word_invalid),
                shape: CsiShape::single(Some(20)),
            }
        })
        .collect();

    Ok(NpzRecording {
        meta: NpzMeta {
            node_id: node_id.to_string(),
            n_packets: n,
            num_subcarriers,
            duration_ms,
            rate_hz,
            chip,
            label,
            collected_at,
            format_version,
            gain_locked,
            first_word_invalid,
            layout,
        },
        frames,
    })
}

type Archive<'a> = zip::ZipArchive<Cursor<&'a [u8]>>;

fn zip_err(e: zip::result::ZipError) -> ParseError {
    ParseError::Zip(clip(&e.to_string(), 120).to_string())
}

fn npy_err(array: &str, reason: &str) -> ParseError {
    ParseError::Npy {
        array: array.to_string(),
        reason: reason.to_string(),
    }
}

/// Reads one entry, bounded by [`MAX_ARRAY_BYTES`] whatever size the archive claims.
fn read_entry(zip: &mut Archive<'_>, name: &str) -> Result<Option<Vec<u8>>, ParseError> {
    let entry = match zip.by_name(name) {
        Ok(e) => e,
        Err(zip::result::ZipError::FileNotFound) => return Ok(None),
        Err(e) => return Err(zip_err(e)),
    };
    let mut out = Vec::new();
    entry
        .take(MAX_ARRAY_BYTES as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| ParseError::Zip(clip(&format!("{name}: {e}"), 120).to_string()))?;
    if out.len() > MAX_ARRAY_BYTES {
        return Err(ParseError::Zip(format!(
            "{name} is larger than {MAX_ARRAY_BYTES} bytes"
        )));
    }
    Ok(Some(out))
}

/// The dtypes ESPectre writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dtype {
    I1,
    I8,
    F8,
    Bool,
    /// UTF-32LE string of this many code points.
    Unicode(usize),
}

impl Dtype {
    fn parse(descr: &str) -> Option<Self> {
        Some(match descr {
            "|i1" | "<i1" | "i1" => Self::I1,
            "<i8" => Self::I8,
            "<f8" => Self::F8,
            "|b1" => Self::Bool,
            _ => {
                let n: usize = descr.strip_prefix("<U")?.parse().ok()?;
                if n > MAX_HEADER_BYTES {
                    return None;
                }
                Self::Unicode(n)
            }
        })
    }

    fn item_size(self) -> usize {
        match self {
            Self::I1 | Self::Bool => 1,
            Self::I8 | Self::F8 => 8,
            Self::Unicode(n) => 4 * n,
        }
    }
}

/// One NPY array borrowed from its entry bytes.
#[derive(Debug)]
struct NpyArray<'a> {
    name: &'a str,
    descr: Dtype,
    fortran_order: bool,
    shape: Vec<usize>,
    data: &'a [u8],
}

impl<'a> NpyArray<'a> {
    /// Parses the NPY preamble (versions 1.0 and 2.0) and checks the data length is exactly
    /// what the shape and dtype imply.
    fn parse(bytes: &'a [u8], name: &'a str) -> Result<Self, ParseError> {
        let err = |reason: &str| npy_err(name, reason);
        let rest = bytes
            .strip_prefix(b"\x93NUMPY")
            .ok_or_else(|| err("missing NPY magic"))?;
        let (header_len, header_start) = match rest {
            [1, 0, a, b, ..] => (usize::from(u16::from_le_bytes([*a, *b])), 10),
            [2, 0, a, b, c, d, ..] => (
                usize::try_from(u32::from_le_bytes([*a, *b, *c, *d])).unwrap_or(usize::MAX),
                12,
            ),
            _ => return Err(err("unsupported NPY version")),
        };
        if header_len > MAX_HEADER_BYTES {
            return Err(err("header too long"));
        }
        let header = bytes
            .get(header_start..header_start + header_len)
            .ok_or_else(|| err("truncated header"))?;
        let header = std::str::from_utf8(header).map_err(|_| err("header is not ASCII"))?;
        let (descr, fortran_order, shape) = parse_header(header).map_err(err)?;
        let descr = Dtype::parse(&descr).ok_or_else(|| err("unsupported dtype"))?;
        let data = &bytes[header_start + header_len..];
        let expected = shape
            .iter()
            .try_fold(descr.item_size(), |acc, &d| acc.checked_mul(d))
            .ok_or_else(|| err("shape overflows"))?;
        if data.len() != expected {
            return Err(ParseError::Npy {
                array: name.to_string(),
                reason: format!("data is {} bytes, shape needs {expected}", data.len()),
            });
        }
        Ok(Self {
            name,
            descr,
            fortran_order,
            shape,
            data,
        })
    }

    fn scalar(&self, want: Dtype) -> Result<&'a [u8], ParseError> {
        if self.descr != want || !self.shape.is_empty() {
            return Err(npy_err(self.name, "expected a scalar of another dtype"));
        }
        Ok(self.data)
    }

    fn scalar_f64(&self) -> Result<f64, ParseError> {
        let b: [u8; 8] = self
            .scalar(Dtype::F8)?
            .try_into()
            .map_err(|_| npy_err(self.name, "bad f8 size"))?;
        Ok(f64::from_le_bytes(b))
    }

    fn scalar_i64(&self) -> Result<i64, ParseError> {
        let b: [u8; 8] = self
            .scalar(Dtype::I8)?
            .try_into()
            .map_err(|_| npy_err(self.name, "bad i8 size"))?;
        Ok(i64::from_le_bytes(b))
    }

    fn scalar_bool(&self) -> Result<bool, ParseError> {
        match self.scalar(Dtype::Bool)? {
            [0] => Ok(false),
            [1] => Ok(true),
            _ => Err(npy_err(self.name, "bool is neither 0 nor 1")),
        }
    }

    fn scalar_str(&self) -> Result<String, ParseError> {
        let Dtype::Unicode(_) = self.descr else {
            return Err(npy_err(self.name, "expected a <U string"));
        };
        let data = self.scalar(self.descr)?;
        let mut s = String::new();
        for cp in data.chunks_exact(4) {
            let cp = u32::from_le_bytes([cp[0], cp[1], cp[2], cp[3]]);
            if cp == 0 {
                break;
            }
            s.push(char::from_u32(cp).ok_or_else(|| npy_err(self.name, "invalid code point"))?);
        }
        Ok(s)
    }
}

/// Parses numpy's header dict, e.g.
/// `{'descr': '|i1', 'fortran_order': False, 'shape': (6068, 128), }` padded with spaces and
/// a newline. Exactly these three keys, each once.
fn parse_header(h: &str) -> Result<(String, bool, Vec<usize>), &'static str> {
    let mut p = Lexer {
        s: h.as_bytes(),
        i: 0,
    };
    p.expect(b'{')?;
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    loop {
        p.skip_ws();
        if p.eat(b'}') {
            break;
        }
        let key = p.string()?;
        p.expect(b':')?;
        match key {
            "descr" if descr.is_none() => descr = Some(p.string()?.to_string()),
            "fortran_order" if fortran.is_none() => fortran = Some(p.boolean()?),
            "shape" if shape.is_none() => shape = Some(p.tuple()?),
            _ => return Err("unexpected or repeated header key"),
        }
        p.skip_ws();
        if !p.eat(b',') {
            p.expect(b'}')?;
            break;
        }
    }
    p.skip_ws();
    if p.i != p.s.len() {
        return Err("trailing bytes after header dict");
    }
    Ok((
        descr.ok_or("header lacks descr")?,
        fortran.ok_or("header lacks fortran_order")?,
        shape.ok_or("header lacks shape")?,
    ))
}

struct Lexer<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Lexer<'a> {
    fn skip_ws(&mut self) {
        while self.s.get(self.i).is_some_and(|c| c.is_ascii_whitespace()) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.skip_ws();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, c: u8) -> Result<(), &'static str> {
        if self.eat(c) {
            Ok(())
        } else {
            Err("malformed header dict")
        }
    }

    fn string(&mut self) -> Result<&'a str, &'static str> {
        self.expect(b'\'')?;
        let start = self.i;
        while self.s.get(self.i).is_some_and(|&c| c != b'\'') {
            self.i += 1;
        }
        let out = self.s.get(start..self.i).ok_or("unterminated string")?;
        self.expect(b'\'')?;
        std::str::from_utf8(out).map_err(|_| "non-ASCII string")
    }

    fn boolean(&mut self) -> Result<bool, &'static str> {
        self.skip_ws();
        let rest = self.s.get(self.i..).unwrap_or_default();
        if rest.starts_with(b"True") {
            self.i += 4;
            Ok(true)
        } else if rest.starts_with(b"False") {
            self.i += 5;
            Ok(false)
        } else {
            Err("expected True or False")
        }
    }

    fn tuple(&mut self) -> Result<Vec<usize>, &'static str> {
        self.expect(b'(')?;
        let mut dims = Vec::new();
        loop {
            if self.eat(b')') {
                return Ok(dims);
            }
            if dims.len() >= 8 {
                return Err("too many dimensions");
            }
            let start = self.i;
            while self.s.get(self.i).is_some_and(u8::is_ascii_digit) {
                self.i += 1;
            }
            let digits = self.s.get(start..self.i).unwrap_or_default();
            let n = std::str::from_utf8(digits)
                .ok()
                .and_then(|d| d.parse::<usize>().ok())
                .ok_or("bad dimension")?;
            dims.push(n);
            if !self.eat(b',') {
                self.expect(b')')?;
                return Ok(dims);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_parser_accepts_numpy_output() {
        let h = "{'descr': '|i1', 'fortran_order': False, 'shape': (6068, 128), }          \n";
        assert_eq!(
            parse_header(h),
            Ok(("|i1".to_string(), false, vec![6068, 128]))
        );
        let h = "{'descr': '<f8', 'fortran_order': False, 'shape': (), }\n";
        assert_eq!(parse_header(h), Ok(("<f8".to_string(), false, vec![])));
        let h = "{'descr': '<f8', 'fortran_order': True, 'shape': (3,), }\n";
        assert_eq!(parse_header(h), Ok(("<f8".to_string(), true, vec![3])));
    }

    #[test]
    fn header_parser_rejects_anything_else() {
        for h in [
            "",
            "{",
            "{'descr': '|i1', 'fortran_order': False}",
            "{'descr': '|i1', 'descr': '|i1', 'fortran_order': False, 'shape': ()}",
            "{'descr': '|i1', 'fortran_order': Nope, 'shape': ()}",
            "{'descr': '|i1', 'fortran_order': False, 'shape': (-1,)}",
            "{'descr': '|i1', 'fortran_order': False, 'shape': (1,2,3,4,5,6,7,8,9)}",
            "{'descr': '|i1', 'fortran_order': False, 'shape': ()} extra",
            "{'descr': '|i1, 'fortran_order': False, 'shape': ()}",
            "{'extra': 1, 'descr': '|i1', 'fortran_order': False, 'shape': ()}",
            "{'descr': '|i1', 'fortran_order': False, 'shape': (99999999999999999999999,)}",
        ] {
            assert!(parse_header(h).is_err(), "{h}");
        }
    }

    #[test]
    fn array_length_must_match_shape() {
        let mut a = b"\x93NUMPY\x01\x00".to_vec();
        let h = "{'descr': '|i1', 'fortran_order': False, 'shape': (2, 2), }\n";
        a.extend_from_slice(&(h.len() as u16).to_le_bytes());
        a.extend_from_slice(h.as_bytes());
        a.extend_from_slice(&[1, 2, 3, 4]);
        assert_eq!(NpyArray::parse(&a, "x").unwrap().shape, vec![2, 2]);
        a.push(5);
        assert_eq!(NpyArray::parse(&a, "x").unwrap_err().reason(), "npy");
        assert_eq!(
            NpyArray::parse(b"\x93NUMPY\x03\x00", "x")
                .unwrap_err()
                .reason(),
            "npy"
        );
    }

    #[test]
    fn garbage_is_a_zip_error() {
        assert_eq!(parse_npz(b"not a zip", "n").unwrap_err().reason(), "zip");
    }
}
