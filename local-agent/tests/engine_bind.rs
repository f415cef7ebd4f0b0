//! The engine listens on 127.0.0.1 only: the machine's other addresses must not reach it.

mod engine_support;

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::time::Duration;

use engine_support::{get, start_simulated};

/// Non-loopback addresses of this machine: the source address the kernel would use to reach a
/// documentation-range peer (no packet is sent), plus whatever `hostname -I` lists.
fn non_loopback_addresses() -> Vec<IpAddr> {
    let mut found = Vec::new();
    for (bind, peer) in [("0.0.0.0:0", "192.0.2.1:9"), ("[::]:0", "[2001:db8::1]:9")] {
        if let Ok(sock) = UdpSocket::bind(bind)
            && sock.connect(peer).is_ok()
            && let Ok(local) = sock.local_addr()
        {
            found.push(local.ip());
        }
    }
    if let Ok(out) = std::process::Command::new("hostname").arg("-I").output() {
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        found.extend(
            text.split_whitespace()
                .filter_map(|s| s.parse::<IpAddr>().ok()),
        );
    }
    found.retain(|ip| !ip.is_loopback() && !ip.is_unspecified());
    found.sort();
    found.dedup();
    found
}

#[tokio::test]
async fn listens_on_loopback_only() {
    let engine = start_simulated(1.0).await;
    let addr = engine.local_addr();
    assert_eq!(addr.ip(), IpAddr::from([127, 0, 0, 1]));
    assert_eq!(get(addr, "/health").await.status, 200);

    let others = non_loopback_addresses();
    eprintln!("non-loopback addresses tried: {others:?}");
    for ip in others {
        // Control: a wildcard listener is reachable on this address, so a refusal below is the
        // engine's loopback binding and not a firewall.
        let wildcard = if ip.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" };
        let control = tokio::net::TcpListener::bind(wildcard)
            .await
            .expect("bind control");
        let control_port = control.local_addr().expect("addr").port();
        let reachable = tokio::time::timeout(
            Duration::from_secs(3),
            tokio::net::TcpStream::connect(SocketAddr::new(ip, control_port)),
        )
        .await;
        if !matches!(reachable, Ok(Ok(_))) {
            eprintln!("{ip} is not reachable even for a wildcard listener; skipped");
            continue;
        }
        let target = SocketAddr::new(ip, addr.port());
        let attempt = tokio::time::timeout(
            Duration::from_secs(3),
            tokio::net::TcpStream::connect(target),
        )
        .await;
        assert!(
            !matches!(attempt, Ok(Ok(_))),
            "the engine accepted a connection on {target}"
        );
    }
    engine.shutdown().await;
}
