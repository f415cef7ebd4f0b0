//! Attacks on the hub's node ingest, played by a real LAN peer (a network namespace joined to
//! the host by a veth pair) that shares the genuine node's address, i.e. an attacker who can
//! forge that source address. Each test performs the attack and asserts the hub shrugs it off.
//! These tests need root and `ip netns`; without them they fail (never skip).

mod engine_support;
mod hub_support;

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use engine_support::wait_for;
use hub_support::{BIN, Netns, Rig, RigOptions, data};
use local_agent::hub::registry::RegistryConfig;
use serde_json::Value;

fn block<T>(f: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(f)
}

/// Sends plain (untagged) ADR-018 raw CSI datagrams: `count` node ids from `first`, `rounds`
/// times, at most `rate` datagrams per second; or for `seconds` when given.
const SPOOFER: &str = r#"
import socket, struct, sys, time
host, port, first, count, rounds, rate, seconds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), float(sys.argv[7])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
buf = bytes((i % 50) for i in range(128))
start = time.monotonic()
sent = 0
r = 0
while (seconds > 0 and time.monotonic() - start < seconds) or (seconds <= 0 and r < rounds):
    for node in range(first, first + count):
        head = struct.pack('<IBBHIIbb2s', 0xC5110001, node, 1, 64, 2437, r, -55, -95, b'\0\0')
        s.sendto(head + buf, (host, port))
        sent += 1
        if sent % 100 == 0:
            ahead = sent / rate - (time.monotonic() - start)
            if ahead > 0:
                time.sleep(ahead)
    r += 1
print(sent)
"#;

struct Spoof<'a> {
    first: u8,
    count: u8,
    rounds: u32,
    rate: u32,
    seconds: f64,
    ns: &'a Netns,
    port: u16,
}

impl Spoof<'_> {
    fn args(&self) -> Vec<String> {
        vec![
            "netns".into(),
            "exec".into(),
            self.ns.name.clone(),
            "python3".into(),
            "-c".into(),
            SPOOFER.into(),
            self.ns.host_ip.clone(),
            self.port.to_string(),
            self.first.to_string(),
            self.count.to_string(),
            self.rounds.to_string(),
            self.rate.to_string(),
            self.seconds.to_string(),
        ]
    }

    /// Runs to the end; returns how many datagrams were sent.
    fn run(&self) -> u64 {
        let out = Command::new("ip")
            .args(self.args())
            .output()
            .expect("python3 runs in the namespace");
        assert!(
            out.status.success(),
            "spoofer failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .expect("count")
    }

    fn spawn(&self) -> Child {
        Command::new("ip")
            .args(self.args())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("python3 runs in the namespace")
    }
}

fn counter(health: &Value, name: &str) -> u64 {
    health["ingest"][name].as_u64().unwrap_or(0)
}

/// The genuine node proves the token over the authenticated WebSocket, as a node does.
fn node_proves_token(ns: &Netns, rig: &Rig, token: &str) {
    let csv = data("esp32-csi-tool/example_csi.csv");
    let ws = format!("ws://{}:{}/ingest", ns.host_ip, rig.hub.local_addr().port());
    let out = ns.exec(
        BIN,
        &[
            "node-emulator",
            "--file",
            csv.to_str().expect("utf-8"),
            "--to",
            &ws,
            "--token",
            token,
            "--speed",
            "8",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spoofed_udp_from_a_token_proven_address_registers_nothing() {
    let rig = Rig::start(RigOptions {
        token: Some("node-token"),
        engine: false,
        ..RigOptions::default()
    })
    .await;
    let ns = Netns::create();
    block(|| node_proves_token(&ns, &rig, "node-token"));
    wait_for("the WebSocket node", Duration::from_secs(10), || async {
        rig.node("node-3c:71:bf:6d:2a:78").await
    })
    .await;

    // The attacker forges the proven address: 64 node ids, one datagram each.
    let sent = block(|| {
        Spoof {
            first: 100,
            count: 64,
            rounds: 1,
            rate: 10_000,
            seconds: 0.0,
            ns: &ns,
            port: rig.hub.udp_addr().port(),
        }
        .run()
    });
    assert_eq!(sent, 64);
    wait_for(
        "the forged datagrams handled",
        Duration::from_secs(10),
        || async {
            let h = rig.json("/health").await;
            let seen = counter(&h, "unknown_sender")
                + counter(&h, "too_many_nodes")
                + h["nodes_total"].as_u64()?
                - 1;
            (seen >= 64).then_some(())
        },
    )
    .await;
    let health = rig.json("/health").await;
    assert_eq!(
        health["nodes_total"], 1,
        "forged datagrams registered nodes: {health}"
    );
    assert_eq!(counter(&health, "unknown_sender"), 64, "{health}");
    rig.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flooding_a_real_nodes_id_from_its_address_costs_it_no_frame() {
    let rig = Rig::start(RigOptions {
        token: Some("node-token"),
        engine: false,
        ..RigOptions::default()
    })
    .await;
    let ns = Netns::create();
    block(|| node_proves_token(&ns, &rig, "node-token"));
    let udp_port = rig.hub.udp_addr().port();

    // The attacker floods node 1's id from node 1's address for the whole run.
    let flood = Spoof {
        first: 1,
        count: 1,
        rounds: 0,
        rate: 5_000,
        seconds: 4.0,
        ns: &ns,
        port: udp_port,
    }
    .spawn();
    wait_for("the flood arriving", Duration::from_secs(10), || async {
        let h = rig.json("/health").await;
        (counter(&h, "unknown_sender") + counter(&h, "rate_limited") + h["nodes_total"].as_u64()?
            > 1)
        .then_some(())
    })
    .await;

    // Meanwhile the genuine node 1 streams its 13 frames with its token (in a node session).
    let csv = data("esp32-csi-tool/example_csi.csv");
    let udp = format!("udp://{}:{udp_port}", ns.host_ip);
    let hub = format!("http://{}:{}", ns.host_ip, rig.hub.local_addr().port());
    let out = block(|| {
        ns.exec(
            BIN,
            &[
                "node-emulator",
                "--file",
                csv.to_str().expect("utf-8"),
                "--to",
                &udp,
                "--token",
                "node-token",
                "--hub",
                &hub,
                "--speed",
                "8",
            ],
        )
    });
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let flood = block(|| flood.wait_with_output().expect("flooder ends"));
    assert!(flood.status.success());
    let node = wait_for("node-1's 13 frames", Duration::from_secs(10), || async {
        rig.node("node-1")
            .await
            .filter(|n| n["frames"].as_u64() >= Some(13))
    })
    .await;
    assert_eq!(
        node["frames"], 13,
        "forged frames counted as node-1's: {node}"
    );
    assert_eq!(node["dropped"], 0, "genuine frames were dropped: {node}");
    let health = rig.json("/health").await;
    assert_eq!(counter(&health, "rate_limited"), 0, "{health}");
    assert!(counter(&health, "unknown_sender") > 1000, "{health}");
    rig.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_listed_addresses_do_not_admit_unauthenticated_frames() {
    // The allow list is gone, and saying so beats silently dropping a user's nodes.
    let out = block(|| {
        Command::new(BIN)
            .args(["run", "--port", "0", "--hub-port", "0", "--csi-port", "0"])
            .env("SERVICE_CSI_ALLOW", "10.200.0.0/16")
            .output()
            .expect("runs")
    });
    assert!(!out.status.success(), "started with an allow list");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("SERVICE_CSI_ALLOW") && stderr.contains("/ingest/session"),
        "{stderr}"
    );

    // The attack it allowed: 64 forged node ids from a LAN address, untagged.
    let ns = Netns::create();
    let rig = Rig::start(RigOptions {
        token: Some("node-token"),
        engine: false,
        ..RigOptions::default()
    })
    .await;
    let sent = block(|| {
        Spoof {
            first: 0,
            count: 64,
            rounds: 1,
            rate: 10_000,
            seconds: 0.0,
            ns: &ns,
            port: rig.hub.udp_addr().port(),
        }
        .run()
    });
    assert_eq!(sent, 64);
    wait_for(
        "the forged datagrams handled",
        Duration::from_secs(10),
        || async {
            let h = rig.json("/health").await;
            (counter(&h, "unknown_sender")
                + counter(&h, "too_many_nodes")
                + h["nodes_total"].as_u64()?
                >= 64)
                .then_some(())
        },
    )
    .await;
    let health = rig.json("/health").await;
    assert_eq!(health["nodes_total"], 0, "{health}");
    assert_eq!(counter(&health, "unknown_sender"), 64, "{health}");
    rig.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_registry_of_silent_ids_makes_room_for_a_new_node() {
    let rig = Rig::start(RigOptions {
        engine: false,
        registry: RegistryConfig {
            offline_after: Duration::from_millis(300),
            max_nodes: 8,
            ..RegistryConfig::default()
        },
        ..RigOptions::default()
    })
    .await;
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
    let packet = |id: u8| {
        local_agent::sensing::csi::RawCsiPacket {
            node_id: id,
            n_antennas: 1,
            n_subcarriers: 4,
            freq_mhz: 2437,
            sequence: 0,
            rssi: -50,
            noise_floor: -95,
            reserved: [0, 0],
            buffer: vec![1, 2, 3, 4, 5, 6, 7, 8],
        }
        .to_bytes()
    };
    // One datagram each from eight ids that then fall silent: the registry is full.
    for id in 200..208 {
        socket.send_to(&packet(id), rig.udp()).expect("send");
    }
    wait_for(
        "eight silent nodes offline",
        Duration::from_secs(10),
        || async {
            let h = rig.json("/health").await;
            (h["nodes_total"] == 8 && h["nodes_online"] == 0).then_some(())
        },
    )
    .await;
    // A real node arrives and must get in.
    socket.send_to(&packet(1), rig.udp()).expect("send");
    let node = wait_for("the new node admitted", Duration::from_secs(10), || async {
        let h = rig.json("/health").await;
        if counter(&h, "too_many_nodes") > 0 {
            return Some(None);
        }
        rig.node("node-1").await.map(Some)
    })
    .await;
    assert!(node.is_some(), "the registry stayed full of silent ids");
    assert_eq!(rig.json("/health").await["nodes_total"], 8);
    rig.stop().await;
}

/// A node written from the README alone, in Python (as firmware would be written from it): it
/// opens a session with the token, tags its datagrams, and tries what an attacker would with what
/// it sees on the wire: replaying captured datagrams, forging tags, claiming another node's id
/// under its session, and naming a session the hub does not know (which earns a rekey notice).
const NODE: &str = r#"
import hashlib, hmac, json, socket, struct, sys, urllib.error, urllib.request
hub, host, port, token = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
addr = (host, port)
out = {}
def session(node_id, token):
    req = urllib.request.Request(hub + "/ingest/session", method="POST",
        data=json.dumps({"node_id": node_id}).encode(),
        headers={"Content-Type": "application/json", "X-Service-Token": token})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)
def packet(node_id, seq):
    head = struct.pack('<IBBHIIbb2s', 0xC5110001, node_id, 1, 64, 2437, seq, -55, -95, b'\0\0')
    return head + bytes((i % 50) for i in range(128))
def seal(key, sid, ctr, pkt):
    body = struct.pack('<IQQ', 0xC5115E01, sid, ctr) + pkt
    return body + hmac.new(key, body, hashlib.sha256).digest()[:16]
out["no_token"], _ = session(4, "wrong-token")
status, grant = session(4, token)
out["granted"] = status
out["key"] = grant.get("key")
sid, key = int(grant["session_id"], 16), bytes.fromhex(grant["key"])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(10)
sent = {}
for c in [1, 2, 3, 4, 5, 6, 7, 8, 10, 9]:
    sent[c] = seal(key, sid, c, packet(4, c))
    s.sendto(sent[c], addr)
for c in [3, 4, 5, 6, 7]:
    s.sendto(sent[c], addr)
for c in [11, 12, 13]:
    s.sendto(seal(bytes(32), sid, c, packet(4, c)), addr)
for c in [14, 15]:
    s.sendto(seal(key, sid, c, packet(5, c)), addr)
s.sendto(seal(key, sid ^ 0xFFFF, 1, packet(4, 1)), addr)
notice, _ = s.recvfrom(64)
magic, named = struct.unpack('<IQ', notice)
out["rekey"] = magic == 0xC5115E02 and named == sid ^ 0xFFFF
print(json.dumps(out))
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_datagrams_forged_replayed_or_for_another_node_are_dropped_and_counted() {
    let rig = Rig::start(RigOptions {
        token: Some("node-token"),
        engine: false,
        ..RigOptions::default()
    })
    .await;
    let ns = Netns::create();
    let hub = format!("http://{}:{}", ns.host_ip, rig.hub.local_addr().port());
    let port = rig.hub.udp_addr().port().to_string();
    let out = block(|| {
        ns.exec(
            "python3",
            &["-c", NODE, &hub, &ns.host_ip, &port, "node-token"],
        )
    });
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(result["no_token"], 401, "{result}");
    assert_eq!(result["granted"], 201, "{result}");
    assert_eq!(result["rekey"], true, "{result}");
    let health = wait_for("all datagrams handled", Duration::from_secs(10), || async {
        let h = rig.json("/health").await;
        (counter(&h, "replayed") + counter(&h, "unauthenticated") >= 11).then_some(h)
    })
    .await;
    assert_eq!(counter(&health, "replayed"), 5, "{health}");
    // Three bad tags, two packets for node 5 under node 4's session, one unknown session.
    assert_eq!(counter(&health, "unauthenticated"), 6, "{health}");
    let node = rig.node("node-4").await.expect("node-4");
    assert_eq!(
        node["frames"], 10,
        "reordered but fresh datagrams all count once: {node}"
    );
    assert_eq!(node["addr"], ns.ns_ip);
    assert!(rig.node("node-5").await.is_none());
    rig.stop().await;
}

/// The hub's secrets never reach its log, even at `trace`: the token (sent right, wrong and in a
/// query string) and a node session's key (granted, then used to tag datagrams). Runs the real
/// binary and reads everything it wrote.
#[test]
fn the_log_never_shows_the_token_or_a_session_key() {
    let token = "tok-never-logged-5f2a9c71";
    let dir = std::env::temp_dir().join(format!("hub-log-secrets-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let log_path = dir.join("agent.log");
    let log = std::fs::File::create(&log_path).expect("log file");
    let mut child = hub_support_agent(token, &log);
    let read = || std::fs::read_to_string(&log_path).unwrap_or_default();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let (hub_port, udp_port) = loop {
        let text = read();
        let hub = text
            .lines()
            .find_map(|l| l.strip_prefix("local-agent hub on http://"))
            .and_then(|rest| rest.split(['/', ' ']).next())
            .and_then(|a| a.rsplit_once(':'))
            .map(|(_, p)| p.to_string());
        let udp = text
            .split("UDP ingest on ")
            .nth(1)
            .and_then(|rest| rest.split(')').next())
            .and_then(|a| a.rsplit_once(':'))
            .map(|(_, p)| p.to_string());
        if let (Some(h), Some(u)) = (hub, udp) {
            break (h, u);
        }
        assert!(
            std::time::Instant::now() < deadline && child.try_wait().ok().flatten().is_none(),
            "the agent did not start:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let hub = format!("http://127.0.0.1:{hub_port}");
    // The token percent-encoded in a URL (each '-' as %2D, and every byte as %XX in lower case):
    // clients and proxies spell paths differently, and each spelling is the token.
    let dashes = token.replace('-', "%2D");
    let every: String = token.bytes().map(|b| format!("%{b:02x}")).collect();
    for (header, path) in [
        ("X-Other: 1".to_string(), format!("/no-such-route/{dashes}")),
        ("X-Other: 1".to_string(), format!("/nodes/{every}/x")),
        (format!("X-Service-Token: {token}"), "/nodes".to_string()),
        (
            format!("X-Service-Token: wrong-{token}"),
            "/alerts".to_string(),
        ),
        ("X-Other: 1".to_string(), format!("/nodes?token={token}")),
        (
            format!("X-Service-Token: {token}"),
            format!("/no-such-route/{token}"),
        ),
    ] {
        let out = Command::new("curl")
            .args([
                "-s",
                "-o",
                "/dev/null",
                "-H",
                &header,
                &format!("{hub}{path}"),
            ])
            .output()
            .expect("curl runs");
        assert!(out.status.success(), "curl {path}");
    }
    let out = Command::new("python3")
        .args(["-c", NODE, &hub, "127.0.0.1", &udp_port, token])
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let key = result["key"].as_str().expect("a session key").to_string();
    assert_eq!(key.len(), 64, "{result}");
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let _ = child.wait();
    let text = read();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(text.contains("local-agent hub on"), "{text}");
    assert!(
        text.lines().count() > 5,
        "trace logging produced almost nothing, so this test would prove nothing:\n{text}"
    );
    assert!(!text.contains(token), "the token is in the log:\n{text}");
    for spelled in [&dashes, &every] {
        assert!(
            !text.contains(spelled.as_str()),
            "the percent-encoded token is in the log:\n{text}"
        );
    }
    assert!(!text.contains(&key), "a session key is in the log:\n{text}");
}

fn hub_support_agent(token: &str, log: &std::fs::File) -> Child {
    Command::new(BIN)
        .args(["run", "--port", "0", "--hub-port", "0", "--csi-port", "0"])
        .env("SERVICE_SENTINEL_TOKEN", token)
        .env(
            "SERVICE_DATA_DIR",
            std::env::temp_dir().join(format!("hub-log-data-{}", std::process::id())),
        )
        .env("RUST_LOG", "trace")
        .stdout(log.try_clone().expect("log handle"))
        .stderr(log.try_clone().expect("log handle"))
        .spawn()
        .expect("the agent starts")
}
