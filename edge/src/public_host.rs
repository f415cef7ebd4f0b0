//! Which hosts the Worker may fetch from on an agent's say-so: the SSRF guard of the key-directory
//! fetch. An address is public unless the IANA special-purpose address registries (IPv4 and IPv6)
//! or the multicast/reserved blocks say otherwise; names are read the way URL parsers and
//! resolvers read them, so `127.1`, `0177.0.0.1`, `0x7f.1` and `2130706433` are all loopback.

use std::net::{Ipv4Addr, Ipv6Addr};

/// IPv4 blocks that are never fetched: every entry of the IANA IPv4 Special-Purpose Address
/// Registry (RFC 6890 and its updates), plus multicast and the reserved 240/4.
const V4_DENY: &[(Ipv4Addr, u8)] = &[
    (Ipv4Addr::new(0, 0, 0, 0), 8),       // "this network"
    (Ipv4Addr::new(10, 0, 0, 0), 8),      // private
    (Ipv4Addr::new(100, 64, 0, 0), 10),   // shared address space (CGN)
    (Ipv4Addr::new(127, 0, 0, 0), 8),     // loopback
    (Ipv4Addr::new(169, 254, 0, 0), 16),  // link-local (cloud metadata lives here)
    (Ipv4Addr::new(172, 16, 0, 0), 12),   // private
    (Ipv4Addr::new(192, 0, 0, 0), 24),    // IETF protocol assignments
    (Ipv4Addr::new(192, 0, 2, 0), 24),    // documentation (TEST-NET-1)
    (Ipv4Addr::new(192, 31, 196, 0), 24), // AS112-v4
    (Ipv4Addr::new(192, 52, 193, 0), 24), // AMT
    (Ipv4Addr::new(192, 88, 99, 0), 24),  // deprecated 6to4 relay anycast
    (Ipv4Addr::new(192, 168, 0, 0), 16),  // private
    (Ipv4Addr::new(192, 175, 48, 0), 24), // direct delegation AS112
    (Ipv4Addr::new(198, 18, 0, 0), 15),   // benchmarking
    (Ipv4Addr::new(198, 51, 100, 0), 24), // documentation (TEST-NET-2)
    (Ipv4Addr::new(203, 0, 113, 0), 24),  // documentation (TEST-NET-3)
    (Ipv4Addr::new(224, 0, 0, 0), 4),     // multicast
    (Ipv4Addr::new(240, 0, 0, 0), 4),     // reserved, and 255.255.255.255 broadcast
];

/// IPv6 blocks that are never fetched: every entry of the IANA IPv6 Special-Purpose Address
/// Registry (RFC 6890 and its updates), plus multicast and the deprecated site-local block.
/// Addresses that embed an IPv4 address (mapped, compatible, NAT64, 6to4, Teredo) are refused
/// whole: a gateway would carry them to an IPv4 address this check never saw.
const V6_DENY: &[(u128, u8)] = &[
    (0, 96),                                         // ::/128, ::1/128 and IPv4-compatible ::/96
    (0xffff_0000_0000, 96),                          // ::ffff:0:0/96 IPv4-mapped
    (0x0064_ff9b_0000_0000_0000_0000_0000_0000, 96), // 64:ff9b::/96 NAT64
    (0x0064_ff9b_0001_0000_0000_0000_0000_0000, 48), // 64:ff9b:1::/48 local-use NAT64
    (0x0100_0000_0000_0000_0000_0000_0000_0000, 64), // 100::/64 discard-only
    (0x0100_0000_0000_0001_0000_0000_0000_0000, 64), // 100:0:0:1::/64 dummy prefix
    (0x2001_0000_0000_0000_0000_0000_0000_0000, 23), // 2001::/23 IETF protocol assignments (Teredo 2001::/32, benchmarking, ORCHID …)
    (0x2001_0db8_0000_0000_0000_0000_0000_0000, 32), // 2001:db8::/32 documentation
    (0x2002_0000_0000_0000_0000_0000_0000_0000, 16), // 2002::/16 6to4
    (0x2620_004f_8000_0000_0000_0000_0000_0000, 48), // 2620:4f:8000::/48 AS112-v6
    (0x3fff_0000_0000_0000_0000_0000_0000_0000, 20), // 3fff::/20 documentation
    (0x5f00_0000_0000_0000_0000_0000_0000_0000, 16), // 5f00::/16 SRv6 SIDs
    (0xfc00_0000_0000_0000_0000_0000_0000_0000, 7),  // fc00::/7 unique-local
    (0xfe80_0000_0000_0000_0000_0000_0000_0000, 10), // fe80::/10 link-local
    (0xfec0_0000_0000_0000_0000_0000_0000_0000, 10), // fec0::/10 site-local (deprecated)
    (0xff00_0000_0000_0000_0000_0000_0000_0000, 8),  // ff00::/8 multicast
];

fn in_v4(ip: Ipv4Addr, (net, len): (Ipv4Addr, u8)) -> bool {
    let mask = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
    u32::from(ip) & mask == u32::from(net) & mask
}

fn in_v6(ip: Ipv6Addr, (net, len): (u128, u8)) -> bool {
    let mask = u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
    u128::from(ip) & mask == net & mask
}

/// True when an IPv4 address is public unicast.
pub fn is_public_v4(ip: Ipv4Addr) -> bool {
    !V4_DENY.iter().any(|&block| in_v4(ip, block))
}

/// IANA's global unicast space; everything outside it is reserved, local or multicast.
const V6_GLOBAL_UNICAST: (u128, u8) = (0x2000_0000_0000_0000_0000_0000_0000_0000, 3);

/// True when an IPv6 address is public unicast (and embeds no IPv4 address).
pub fn is_public_v6(ip: Ipv6Addr) -> bool {
    in_v6(ip, V6_GLOBAL_UNICAST) && !V6_DENY.iter().any(|&block| in_v6(ip, block))
}

/// How a URL parser reads a host whose last label is numeric (WHATWG URL "IPv4 parser", the same
/// rules as `inet_aton`): one to four parts, each decimal, octal (leading `0`) or hex (`0x`), the
/// last part filling the remaining bytes. `None` when the host is not numeric (a name);
/// `Some(None)` when it is numeric but no valid address (a parser refuses it).
fn numeric_v4(host: &str) -> Option<Option<Ipv4Addr>> {
    let host = host.strip_suffix('.').unwrap_or(host);
    let parts: Vec<&str> = host.split('.').collect();
    let last = parts.last()?;
    let numeric = |p: &str| {
        let hex = p.strip_prefix("0x").or_else(|| p.strip_prefix("0X"));
        match hex {
            Some(h) => h.chars().all(|c| c.is_ascii_hexdigit()),
            None => !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()),
        }
    };
    if !numeric(last) {
        return None;
    }
    let value = |p: &str| -> Option<u64> {
        if let Some(h) = p.strip_prefix("0x").or_else(|| p.strip_prefix("0X")) {
            if h.is_empty() {
                return Some(0);
            }
            u64::from_str_radix(h, 16).ok()
        } else if p.len() > 1 && p.starts_with('0') {
            u64::from_str_radix(&p[1..], 8).ok()
        } else {
            p.parse().ok()
        }
    };
    if parts.len() > 4 || parts.iter().any(|p| p.is_empty()) {
        return Some(None);
    }
    let mut numbers = Vec::with_capacity(parts.len());
    for p in &parts {
        match value(p) {
            Some(n) => numbers.push(n),
            None => return Some(None),
        }
    }
    let (init, tail) = numbers.split_at(numbers.len() - 1);
    if init.iter().any(|&n| n > 255) {
        return Some(None);
    }
    let room = 8 * (5 - numbers.len() as u32);
    if tail[0] >= 1u64 << room.min(32) {
        return Some(None);
    }
    let mut addr: u64 = tail[0];
    for (i, &n) in init.iter().enumerate() {
        addr |= n << (8 * (3 - i as u32));
    }
    Some(u32::try_from(addr).ok().map(Ipv4Addr::from))
}

/// Local-only name suffixes (RFC 6761, RFC 6762, RFC 8375 and common private conventions).
const LOCAL_NAMES: &[&str] = &[
    "localhost",
    "local",
    "internal",
    "localdomain",
    "home.arpa",
    "lan",
];

/// True when `host` (a URL host: a name, a dotted or numeric IPv4 form, or `[IPv6]`) may be
/// fetched: a public address, or a name with a public-looking suffix.
pub fn is_public(host: &str) -> bool {
    if host.is_empty() {
        return false;
    }
    if let Some(inner) = host.strip_prefix('[') {
        return inner
            .strip_suffix(']')
            .and_then(|v6| v6.parse::<Ipv6Addr>().ok())
            .is_some_and(is_public_v6);
    }
    let host = host.to_ascii_lowercase();
    match numeric_v4(&host) {
        Some(Some(v4)) => return is_public_v4(v4),
        Some(None) => return false,
        None => {}
    }
    let name = host.strip_suffix('.').unwrap_or(&host);
    let valid = name.split('.').all(|l| {
        !l.is_empty() && l.len() <= 63 && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    });
    valid
        && name.contains('.')
        && !LOCAL_NAMES
            .iter()
            .any(|tld| name == *tld || name.ends_with(&format!(".{tld}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One case per registry entry: its first address, an address inside, its last address,
    /// all refused; and the neighbours just outside, accepted where they are public.
    #[test]
    fn every_ipv4_special_purpose_block_is_refused_and_its_neighbours_are_not() {
        for &(net, len) in V4_DENY {
            let first = u32::from(net);
            let last = first | (u32::MAX.checked_shr(u32::from(len)).unwrap_or(0));
            for ip in [first, first + (last - first) / 2, last] {
                let ip = Ipv4Addr::from(ip);
                assert!(!is_public_v4(ip), "{ip} in {net}/{len}");
                assert!(!is_public(&ip.to_string()), "{ip}");
            }
        }
        for ip in [
            "1.1.1.1",
            "8.8.8.8",
            "9.255.255.255",
            "11.0.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "192.0.1.255",
            "192.0.3.0",
            "192.88.98.255",
            "192.88.100.0",
            "198.17.255.255",
            "198.20.0.0",
            "223.255.255.255",
        ] {
            assert!(is_public(ip), "{ip}");
        }
    }

    #[test]
    fn every_ipv6_special_purpose_block_is_refused_and_its_neighbours_are_not() {
        for &(net, len) in V6_DENY {
            let last = net | u128::MAX.checked_shr(u32::from(len)).unwrap_or(0);
            for ip in [net, net + (last - net) / 2, last] {
                let ip = Ipv6Addr::from(ip);
                assert!(!is_public_v6(ip), "{ip} in {}/{len}", Ipv6Addr::from(net));
                assert!(!is_public(&format!("[{ip}]")), "{ip}");
            }
        }
        // The ranges the issue names, spelled as an attacker would.
        for ip in [
            "64:ff9b::7f00:1",
            "64:ff9b:1::a9fe:a9fe",
            "2002:7f00:1::",
            "2001::1",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            "::ffff:127.0.0.1",
            "::127.0.0.1",
            "::1",
            "fd00::1",
            "fe80::1",
            "::1:0:0",
            "4000::1",
        ] {
            assert!(!is_public(&format!("[{ip}]")), "{ip}");
        }
        for ip in [
            "2606:4700::1111",
            "2a00:1450:4001::1",
            "2001:200::1",
            "2003::1",
            "2620:4f:8001::1",
        ] {
            assert!(is_public(&format!("[{ip}]")), "{ip}");
        }
    }

    #[test]
    fn numeric_hosts_are_read_like_url_parsers_read_them() {
        for host in [
            "127.1",
            "127.0.1",
            "0177.0.0.1",
            "0x7f.0.0.1",
            "0x7f.1",
            "2130706433",
            "0x7f000001",
            "017700000001",
            "127.0.0.1.",
            "0",
            "0x",
            "10.1",
            "0xa9.0xfe.0xa9.0xfe",
            "169.254.43518",
            "3232235777",
        ] {
            assert!(!is_public(host), "{host}");
        }
        // Numeric but not an address: URL parsers refuse it, so do we.
        for host in [
            "1.2.3.4.5",
            "256.1.1.1",
            "1.2.3.0x100",
            "4294967296",
            "1..2",
            "08.1.1.1",
        ] {
            assert!(!is_public(host), "{host}");
        }
        assert_eq!(numeric_v4("8.8.8.8"), Some(Some(Ipv4Addr::new(8, 8, 8, 8))));
        assert_eq!(
            numeric_v4("0x8.010.8.8"),
            Some(Some(Ipv4Addr::new(8, 8, 8, 8)))
        );
        assert_eq!(
            numeric_v4("134744072"),
            Some(Some(Ipv4Addr::new(8, 8, 8, 8)))
        );
        assert!(is_public("134744072"));
        assert_eq!(numeric_v4("agent.example"), None);
        assert_eq!(numeric_v4("1.example"), None);
    }

    #[test]
    fn names_must_look_public() {
        for host in [
            "agent.example.com",
            "bots.example",
            "a-b.c0.example",
            "AGENT.Example.com",
        ] {
            assert!(is_public(host), "{host}");
        }
        for host in [
            "",
            "localhost",
            "api.localhost",
            "printer.local",
            "db.internal",
            "nas.home.arpa",
            "intranet",
            "a..b",
            "%31%32%37.0.0.1",
            "\u{ff11}\u{ff12}\u{ff17}.0.0.1",
            "under_score.example",
            "[::1",
        ] {
            assert!(!is_public(host), "{host:?}");
        }
    }
}
