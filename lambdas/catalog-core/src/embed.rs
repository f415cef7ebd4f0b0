//! A static embedding: one vector per word piece, distilled from all-MiniLM-L6-v2 by
//! `lambdas/catalog/embed/distill.py`. A text's vector is the mean of its pieces' vectors, so
//! embedding a query costs microseconds and no model runs at request time. Tool search fuses the
//! cosine of query and tool with its BM25F score.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

const MAGIC: &[u8; 8] = b"PSEMB01\0";
/// Word pieces of one word beyond this are ignored (a pathological identifier).
const MAX_PIECES: usize = 16;

#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error("not a static embedding file (bad magic)")]
    BadMagic,
    #[error("the static embedding file is truncated")]
    Truncated,
}

/// The model: word pieces, sorted, with their vectors.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StaticModel {
    pub dims: u32,
    /// Word pieces in id order (`##ing` continues a word).
    pieces: Vec<String>,
    /// `pieces.len() * dims` values; a piece's vector is its row scaled by `scales[id] / 127`.
    /// Stored in its own section of the artifact (`model::Sections`), not in the postcard core.
    #[serde(skip)]
    pub(crate) values: Vec<i8>,
    scales: Vec<f32>,
    #[serde(skip)]
    ids: HashMap<String, u32>,
}

impl StaticModel {
    /// Parses the file `distill.py` writes.
    pub fn parse(bytes: &[u8]) -> Result<StaticModel, EmbedError> {
        let rest = bytes
            .strip_prefix(MAGIC.as_slice())
            .ok_or(EmbedError::BadMagic)?;
        let u32_at = |b: &[u8], at: usize| -> Result<u32, EmbedError> {
            b.get(at..at + 4)
                .map(|x| u32::from_le_bytes([x[0], x[1], x[2], x[3]]))
                .ok_or(EmbedError::Truncated)
        };
        let n = u32_at(rest, 0)? as usize;
        let dims = u32_at(rest, 4)?;
        let mut at = 8;
        let mut pieces = Vec::with_capacity(n);
        for _ in 0..n {
            let len = rest
                .get(at..at + 2)
                .map(|x| u16::from_le_bytes([x[0], x[1]]) as usize)
                .ok_or(EmbedError::Truncated)?;
            let s = rest
                .get(at + 2..at + 2 + len)
                .ok_or(EmbedError::Truncated)?;
            pieces.push(String::from_utf8_lossy(s).into_owned());
            at += 2 + len;
        }
        let d = dims as usize;
        let mut values = Vec::with_capacity(n * d);
        let mut scales = Vec::with_capacity(n);
        for _ in 0..n {
            let s = rest.get(at..at + 4).ok_or(EmbedError::Truncated)?;
            scales.push(f32::from_le_bytes([s[0], s[1], s[2], s[3]]));
            let row = rest.get(at + 4..at + 4 + d).ok_or(EmbedError::Truncated)?;
            values.extend(row.iter().map(|&x| x as i8));
            at += 4 + d;
        }
        let mut model = StaticModel {
            dims,
            pieces,
            values,
            scales,
            ids: HashMap::new(),
        };
        model.index();
        Ok(model)
    }

    /// Builds the piece → id map (after loading from an artifact).
    pub fn index(&mut self) {
        self.ids = self
            .pieces
            .iter()
            .enumerate()
            .map(|(i, p)| (p.clone(), i as u32))
            .collect();
    }

    /// Whether `values` holds a row for every piece (an artifact's sections could disagree).
    pub(crate) fn values_fit(&self) -> bool {
        Some(self.values.len()) == self.pieces.len().checked_mul(self.dims as usize)
    }

    pub fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }

    /// Greedy longest-match word pieces of one lower-case word (BERT's WordPiece).
    fn pieces_of(&self, word: &str, out: &mut Vec<u32>) {
        let chars: Vec<char> = word.chars().collect();
        let mut start = 0;
        let mut found = Vec::new();
        while start < chars.len() {
            let mut end = chars.len();
            let mut hit = None;
            while start < end {
                let sub: String = chars[start..end].iter().collect();
                let key = if start == 0 { sub } else { format!("##{sub}") };
                if let Some(&id) = self.ids.get(&key) {
                    hit = Some(id);
                    break;
                }
                end -= 1;
            }
            match hit {
                Some(id) if found.len() < MAX_PIECES => {
                    found.push(id);
                    start = end;
                }
                // An unknown word contributes nothing rather than `[UNK]`.
                _ => return,
            }
        }
        out.extend(found);
    }

    /// The unit-length mean vector of the words (already split and lower-cased), or `None`
    /// when no word is known.
    pub fn embed_words<'a>(&self, words: impl IntoIterator<Item = &'a str>) -> Option<Vec<f32>> {
        if self.is_empty() {
            return None;
        }
        let mut ids = Vec::new();
        for w in words {
            self.pieces_of(w, &mut ids);
        }
        if ids.is_empty() {
            return None;
        }
        let d = self.dims as usize;
        let mut v = vec![0f32; d];
        for id in &ids {
            let i = *id as usize;
            let scale = self.scales[i] / 127.0;
            for (x, &q) in v.iter_mut().zip(&self.values[i * d..(i + 1) * d]) {
                *x += f32::from(q) * scale;
            }
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm == 0.0 {
            return None;
        }
        v.iter_mut().for_each(|x| *x /= norm);
        Some(v)
    }
}

/// Unit vectors quantised to i8 (×127), flat.
pub fn quantise(v: &[f32]) -> impl Iterator<Item = i8> + '_ {
    v.iter()
        .map(|x| (x * 127.0).round().clamp(-127.0, 127.0) as i8)
}

/// Cosine of a unit query vector and a quantised unit vector.
pub fn cosine(q: &[f32], stored: &[i8]) -> f32 {
    q.iter()
        .zip(stored)
        .map(|(a, &b)| a * f32::from(b))
        .sum::<f32>()
        / 127.0
}

/// [`cosine`] of one query with `N` stored vectors at once, each summed in the same order as
/// [`cosine`] (so the values are identical): the independent sums run side by side instead of
/// one long chain of dependent additions.
pub fn cosines<const N: usize>(q: &[f32], stored: [&[i8]; N]) -> [f32; N] {
    // `f32`'s `Sum` starts from -0.0.
    let mut acc = [-0.0f32; N];
    for (k, &a) in q.iter().enumerate() {
        for (s, v) in acc.iter_mut().zip(&stored) {
            *s += a * f32::from(v.get(k).copied().unwrap_or(0));
        }
    }
    acc.map(|s| s / 127.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model() -> StaticModel {
        let mut bytes = MAGIC.to_vec();
        bytes.extend(3u32.to_le_bytes());
        bytes.extend(2u32.to_le_bytes());
        for p in ["play", "##back", "stop"] {
            bytes.extend((p.len() as u16).to_le_bytes());
            bytes.extend(p.as_bytes());
        }
        for row in [[127i8, 0], [0, 127], [100, 50]] {
            bytes.extend(1.0f32.to_le_bytes());
            bytes.extend(row.iter().map(|&x| x as u8));
        }
        StaticModel::parse(&bytes).unwrap()
    }

    #[test]
    fn words_split_into_pieces_and_average() {
        let m = model();
        let v = m.embed_words(["playback"]).unwrap();
        assert!((v[0] - v[1]).abs() < 1e-6, "{v:?}");
        assert!(m.embed_words(["zebra"]).is_none());
        let q: Vec<i8> = quantise(&m.embed_words(["stop"]).unwrap()).collect();
        assert!(cosine(&v, &q) > 0.9);
    }

    #[test]
    fn cosines_side_by_side_equal_one_at_a_time() {
        let q: Vec<f32> = (0..64)
            .map(|i| ((i * 37 % 11) as f32 - 5.0) / 13.0)
            .collect();
        let rows: Vec<Vec<i8>> = (0..4)
            .map(|r| (0..64).map(|i| ((i * 7 + r * 29) % 255) as i8).collect())
            .collect();
        let many = cosines(&q, [&rows[0][..], &rows[1][..], &rows[2][..], &rows[3][..]]);
        for (r, c) in rows.iter().zip(many) {
            assert_eq!(cosine(&q, r).to_bits(), c.to_bits());
        }
    }

    #[test]
    fn damaged_files_are_refused() {
        assert!(matches!(
            StaticModel::parse(b"nope"),
            Err(EmbedError::BadMagic)
        ));
        let mut bytes = MAGIC.to_vec();
        bytes.extend(3u32.to_le_bytes());
        assert!(matches!(
            StaticModel::parse(&bytes),
            Err(EmbedError::Truncated)
        ));
    }
}
