//! Node sessions: how a node on the LAN sends UDP the hub can trust.
//!
//! UDP has no handshake, so a datagram's source address is only a claim that any device on the
//! network can forge. A remote node therefore first opens a session over HTTP
//! (`POST /ingest/session`, under the hub's token rule), and the hub answers with a session id
//! and a fresh 32-byte key. Every datagram then travels in an envelope:
//!
//! ```text
//! offset  size  field
//! 0       4     magic 0xC5115E01 (u32 little-endian)
//! 4       8     session id (u64 LE)
//! 12      8     counter (u64 LE), strictly increasing within the session
//! 20      n     one ADR-018 packet, unchanged
//! 20+n    16    HMAC-SHA256(key, bytes 0 .. 20+n), first 16 bytes
//! ```
//!
//! The tag binds the packet, the session and the counter: a forged or altered datagram fails
//! the tag, a captured one replayed fails the counter (a 64-datagram window tolerates
//! reordering). A session belongs to one node id: a packet under it claiming another id is
//! refused, so one session cannot register a fleet. HMAC-SHA256 is what ESP32 firmware does
//! cheaply: mbedTLS has it, backed by the chip's SHA accelerator (a few microseconds per frame).
//!
//! A datagram naming a session the hub does not know (it restarted, or the session went idle)
//! gets a 12-byte reply, magic 0xC5115E02 and the session id, so the node opens a new session at
//! once instead of sending into the void; replies are rate-limited and smaller than the
//! datagram that caused them, so the hub cannot be used to amplify traffic at a forged address.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// First four bytes (LE) of a session envelope.
pub const ENVELOPE_MAGIC: u32 = 0xC511_5E01;
/// First four bytes (LE) of the hub's "unknown session, open a new one" reply.
pub const REKEY_MAGIC: u32 = 0xC511_5E02;
/// Magic, session id and counter.
pub const HEADER_LEN: usize = 20;
/// Truncated HMAC-SHA256 (128 bits, as in RFC 4868's truncation guidance).
pub const TAG_LEN: usize = 16;
pub const KEY_LEN: usize = 32;
/// Length of the rekey reply.
pub const REKEY_LEN: usize = 12;
/// A session with no valid datagram for this long is forgotten.
pub const SESSION_IDLE: Duration = Duration::from_secs(600);
/// Most sessions held; the least recently used one is forgotten first.
pub const MAX_SESSIONS: usize = 256;
/// Counters this far behind the highest one seen are still accepted once (reordering).
const REPLAY_WINDOW: u64 = 64;
/// Rekey replies per second, for the whole hub.
const REKEY_PER_S: f64 = 20.0;

/// A parsed (not yet verified) envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Envelope<'a> {
    pub session_id: u64,
    pub counter: u64,
    /// The ADR-018 packet inside.
    pub inner: &'a [u8],
    /// Everything the tag covers.
    signed: &'a [u8],
    tag: &'a [u8],
}

/// Reads an envelope; `None` when `bytes` is not one (another magic), `Some(Err(()))` when it
/// has the magic but is too short to hold a header and a tag.
pub fn parse_envelope(bytes: &[u8]) -> Option<Result<Envelope<'_>, ()>> {
    let magic = u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?);
    if magic != ENVELOPE_MAGIC {
        return None;
    }
    Some(envelope_fields(bytes))
}

fn envelope_fields(bytes: &[u8]) -> Result<Envelope<'_>, ()> {
    if bytes.len() < HEADER_LEN + TAG_LEN {
        return Err(());
    }
    let (signed, tag) = bytes.split_at(bytes.len() - TAG_LEN);
    let word = |at: usize| -> Result<u64, ()> {
        signed
            .get(at..at + 8)
            .and_then(|s| s.try_into().ok())
            .map(u64::from_le_bytes)
            .ok_or(())
    };
    Ok(Envelope {
        session_id: word(4)?,
        counter: word(12)?,
        inner: &signed[HEADER_LEN..],
        signed,
        tag,
    })
}

/// Wraps one packet for `session_id` (what a node does for every datagram).
pub fn seal(key: &[u8; KEY_LEN], session_id: u64, counter: u64, packet: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + packet.len() + TAG_LEN);
    out.extend_from_slice(&ENVELOPE_MAGIC.to_le_bytes());
    out.extend_from_slice(&session_id.to_le_bytes());
    out.extend_from_slice(&counter.to_le_bytes());
    out.extend_from_slice(packet);
    let tag = tag_of(key, &out);
    out.extend_from_slice(&tag[..TAG_LEN]);
    out
}

fn tag_of(key: &[u8; KEY_LEN], signed: &[u8]) -> [u8; 32] {
    // A 32-byte key is always accepted by HMAC.
    let mut mac = <HmacSha256 as Mac>::new_from_slice(key).unwrap_or_else(|_| unreachable!());
    mac.update(signed);
    mac.finalize().into_bytes().into()
}

/// The hub's reply to a datagram of an unknown session.
pub fn rekey_notice(session_id: u64) -> [u8; REKEY_LEN] {
    let mut out = [0u8; REKEY_LEN];
    out[..4].copy_from_slice(&REKEY_MAGIC.to_le_bytes());
    out[4..].copy_from_slice(&session_id.to_le_bytes());
    out
}

/// Reads a rekey reply: the session it names.
pub fn parse_rekey(bytes: &[u8]) -> Option<u64> {
    if bytes.len() != REKEY_LEN || bytes[..4] != REKEY_MAGIC.to_le_bytes() {
        return None;
    }
    bytes[4..].try_into().ok().map(u64::from_le_bytes)
}

/// What a node receives when it opens a session.
#[derive(Clone, PartialEq, Eq)]
pub struct Grant {
    pub session_id: u64,
    pub key: [u8; KEY_LEN],
    pub node_id: u8,
}

impl std::fmt::Debug for Grant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grant")
            .field("session_id", &format_args!("{:016x}", self.session_id))
            .field("node_id", &self.node_id)
            .finish_non_exhaustive()
    }
}

/// The verdict on one envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Authentic and fresh; the packet inside must report `node_id`.
    Accepted { node_id: u8 },
    /// No such session (never opened, idle too long, or the hub restarted).
    UnknownSession,
    /// The tag does not verify: forged or corrupted.
    BadTag,
    /// Authentic but already seen, or too far behind the newest counter.
    Replayed,
}

struct Session {
    key: [u8; KEY_LEN],
    node_id: u8,
    /// The address that opened it (one live session per address and node id).
    owner: IpAddr,
    /// Highest counter accepted, and a bitmap of the `REPLAY_WINDOW` counters below it.
    highest: Option<u64>,
    seen: u64,
    last_used: Instant,
}

/// The session table.
pub struct Sessions {
    inner: Mutex<Table>,
    idle: Duration,
    max: usize,
}

struct Table {
    sessions: HashMap<u64, Session>,
    /// Token bucket for rekey replies.
    rekey_tokens: f64,
    rekey_at: Instant,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions")
            .field("open", &self.len())
            .finish_non_exhaustive()
    }
}

impl Default for Sessions {
    fn default() -> Self {
        Self::new(SESSION_IDLE, MAX_SESSIONS)
    }
}

impl Sessions {
    pub fn new(idle: Duration, max: usize) -> Self {
        Self {
            inner: Mutex::new(Table {
                sessions: HashMap::new(),
                rekey_tokens: REKEY_PER_S,
                rekey_at: Instant::now(),
            }),
            idle,
            max: max.max(1),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn len(&self) -> usize {
        self.lock().sessions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Opens a session for `node_id`, asked for by a caller at `owner` that passed the token
    /// rule. Replaces that caller's previous session for the same node id.
    pub fn open(&self, owner: IpAddr, node_id: u8, now: Instant) -> Grant {
        let mut rng = rand::rng();
        let mut key = [0u8; KEY_LEN];
        rng.fill_bytes(&mut key);
        let mut t = self.lock();
        let idle = self.idle;
        t.sessions.retain(|_, s| {
            now.saturating_duration_since(s.last_used) <= idle
                && !(s.owner == owner && s.node_id == node_id)
        });
        if t.sessions.len() >= self.max
            && let Some(oldest) = t
                .sessions
                .iter()
                .min_by_key(|(_, s)| s.last_used)
                .map(|(id, _)| *id)
        {
            t.sessions.remove(&oldest);
        }
        // Random ids, so one session's id says nothing about another's; 0 is never used.
        let mut session_id = 0;
        while session_id == 0 || t.sessions.contains_key(&session_id) {
            session_id = rng.next_u64();
        }
        t.sessions.insert(
            session_id,
            Session {
                key,
                node_id,
                owner,
                highest: None,
                seen: 0,
                last_used: now,
            },
        );
        Grant {
            session_id,
            key,
            node_id,
        }
    }

    /// Verifies one envelope and, when it is authentic and fresh, records its counter.
    pub fn verify(&self, env: &Envelope<'_>, now: Instant) -> Verdict {
        let mut t = self.lock();
        let idle = self.idle;
        let Some(s) = t.sessions.get_mut(&env.session_id) else {
            return Verdict::UnknownSession;
        };
        if now.saturating_duration_since(s.last_used) > idle {
            t.sessions.remove(&env.session_id);
            return Verdict::UnknownSession;
        }
        let mut mac =
            <HmacSha256 as Mac>::new_from_slice(&s.key).unwrap_or_else(|_| unreachable!());
        mac.update(env.signed);
        // Constant-time comparison of the truncated tag.
        if mac.verify_truncated_left(env.tag).is_err() {
            return Verdict::BadTag;
        }
        if !accept_counter(&mut s.highest, &mut s.seen, env.counter) {
            return Verdict::Replayed;
        }
        s.last_used = now;
        Verdict::Accepted { node_id: s.node_id }
    }

    /// Whether a rekey reply may be sent now (a hub-wide token bucket).
    pub fn may_send_rekey(&self, now: Instant) -> bool {
        let mut t = self.lock();
        let dt = now.saturating_duration_since(t.rekey_at).as_secs_f64();
        t.rekey_at = now;
        t.rekey_tokens = (t.rekey_tokens + dt * REKEY_PER_S).min(REKEY_PER_S);
        if t.rekey_tokens >= 1.0 {
            t.rekey_tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// Forgets sessions idle for longer than the idle timeout; returns how many.
    pub fn sweep(&self, now: Instant) -> usize {
        let mut t = self.lock();
        let before = t.sessions.len();
        let idle = self.idle;
        t.sessions
            .retain(|_, s| now.saturating_duration_since(s.last_used) <= idle);
        before - t.sessions.len()
    }
}

/// The anti-replay window (as in IPsec and WireGuard): accepts each counter at most once, and
/// nothing more than `REPLAY_WINDOW` behind the highest seen.
fn accept_counter(highest: &mut Option<u64>, seen: &mut u64, counter: u64) -> bool {
    let Some(top) = *highest else {
        *highest = Some(counter);
        *seen = 1;
        return true;
    };
    if counter > top {
        let shift = counter - top;
        *seen = if shift >= REPLAY_WINDOW {
            0
        } else {
            *seen << shift
        };
        *seen |= 1;
        *highest = Some(counter);
        return true;
    }
    let behind = top - counter;
    if behind >= REPLAY_WINDOW {
        return false;
    }
    let bit = 1u64 << behind;
    if *seen & bit != 0 {
        return false;
    }
    *seen |= bit;
    true
}

/// Lower-case hex, for the session id and key in JSON (simple for firmware to parse).
pub fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Parses hex of exactly `N` bytes.
pub fn from_hex<const N: usize>(text: &str) -> Option<[u8; N]> {
    let text = text.as_bytes();
    if text.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    for (i, pair) in text.chunks_exact(2).enumerate() {
        let s = std::str::from_utf8(pair).ok()?;
        out[i] = u8::from_str_radix(s, 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn sealed_datagrams_verify_once_and_tampering_fails() {
        let sessions = Sessions::default();
        let now = Instant::now();
        let g = sessions.open(ip("10.0.0.2"), 7, now);
        let d = seal(&g.key, g.session_id, 1, b"packet");
        let env = parse_envelope(&d).unwrap().unwrap();
        assert_eq!(env.inner, b"packet");
        assert_eq!(sessions.verify(&env, now), Verdict::Accepted { node_id: 7 });
        assert_eq!(sessions.verify(&env, now), Verdict::Replayed);
        for i in 0..d.len() {
            let mut bad = seal(&g.key, g.session_id, 2 + i as u64, b"packet");
            bad[i] ^= 1;
            let verdict = match parse_envelope(&bad) {
                None => continue, // the magic itself was changed
                Some(Err(())) => unreachable!(),
                Some(Ok(env)) => sessions.verify(&env, now),
            };
            assert!(
                matches!(verdict, Verdict::BadTag | Verdict::UnknownSession),
                "byte {i}: {verdict:?}"
            );
        }
        let other = seal(&[9; KEY_LEN], g.session_id, 100, b"packet");
        assert_eq!(
            sessions.verify(&parse_envelope(&other).unwrap().unwrap(), now),
            Verdict::BadTag
        );
        assert!(parse_envelope(b"\x01\x5e\x11\xc5short").unwrap().is_err());
        assert!(parse_envelope(b"\x01\x00\x11\xc5").is_none());
    }

    #[test]
    fn the_replay_window_tolerates_reordering_only() {
        let (mut h, mut s) = (None, 0);
        assert!(accept_counter(&mut h, &mut s, 10));
        assert!(accept_counter(&mut h, &mut s, 12));
        assert!(accept_counter(&mut h, &mut s, 11));
        assert!(!accept_counter(&mut h, &mut s, 11));
        assert!(!accept_counter(&mut h, &mut s, 12));
        assert!(accept_counter(&mut h, &mut s, 200));
        assert!(!accept_counter(&mut h, &mut s, 12));
        assert!(accept_counter(&mut h, &mut s, 150));
        assert!(!accept_counter(&mut h, &mut s, 136));
        assert!(accept_counter(&mut h, &mut s, 137));
    }

    #[test]
    fn sessions_expire_are_replaced_and_bounded() {
        let sessions = Sessions::new(Duration::from_secs(10), 3);
        let t0 = Instant::now();
        let a = sessions.open(ip("10.0.0.2"), 1, t0);
        let b = sessions.open(ip("10.0.0.2"), 1, t0);
        assert_eq!(sessions.len(), 1, "a new session replaces the old one");
        let env_a = seal(&a.key, a.session_id, 0, b"x");
        assert_eq!(
            sessions.verify(&parse_envelope(&env_a).unwrap().unwrap(), t0),
            Verdict::UnknownSession
        );
        let env_b = seal(&b.key, b.session_id, 0, b"x");
        let later = t0 + Duration::from_secs(11);
        assert_eq!(
            sessions.verify(&parse_envelope(&env_b).unwrap().unwrap(), later),
            Verdict::UnknownSession,
            "idle too long"
        );
        for n in 0..5 {
            sessions.open(ip("10.0.0.3"), n, t0 + Duration::from_secs(u64::from(n)));
        }
        assert_eq!(sessions.len(), 3);
        assert_eq!(sessions.sweep(t0 + Duration::from_secs(13)), 1);
        assert!(!format!("{b:?}").contains(&to_hex(&b.key)));
    }

    #[test]
    fn rekey_notices_round_trip_and_are_rate_limited() {
        assert_eq!(parse_rekey(&rekey_notice(0xABCD)), Some(0xABCD));
        assert_eq!(parse_rekey(&[0; 12]), None);
        let sessions = Sessions::default();
        let now = Instant::now();
        let sent = (0..100).filter(|_| sessions.may_send_rekey(now)).count();
        assert_eq!(sent, REKEY_PER_S as usize);
    }

    #[test]
    fn hex_round_trip() {
        assert_eq!(from_hex::<2>("0aff"), Some([0x0a, 0xff]));
        assert_eq!(from_hex::<2>("0af"), None);
        assert_eq!(from_hex::<1>("zz"), None);
        assert_eq!(to_hex(&[0x0a, 0xff]), "0aff");
    }
}
