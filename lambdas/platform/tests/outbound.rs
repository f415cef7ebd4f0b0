//! The outbound guard against real loopback servers: what it lets through, what it refuses at the
//! URL, at name resolution and at a redirect, and the size cap and timeout.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use platform::exec::outbound::{Outbound, OutboundError, OutboundPolicy};

/// A loopback HTTP server answering every request with `respond(path)`.
async fn serve(
    ip: &str,
    respond: fn(&str) -> Response<Full<Bytes>>,
) -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind((ip, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let svc = service_fn(move |req: Request<Incoming>| async move {
                    Ok::<_, Infallible>(respond(req.uri().path()))
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    (addr, task)
}

fn ok(_: &str) -> Response<Full<Bytes>> {
    Response::new(Full::new(Bytes::from_static(b"hello")))
}

fn big(_: &str) -> Response<Full<Bytes>> {
    Response::new(Full::new(Bytes::from(vec![b'x'; 4096])))
}

fn outbound(allow: &str) -> Outbound {
    Outbound::new(OutboundPolicy::default().with_allow_list(allow).unwrap()).unwrap()
}

async fn get(
    out: &Outbound,
    url: &str,
) -> Result<platform::exec::outbound::OutboundResponse, OutboundError> {
    out.send(out.client().get(url)).await
}

fn refused(r: Result<platform::exec::outbound::OutboundResponse, OutboundError>) -> String {
    match r {
        Err(OutboundError::Refused { reason, .. }) => reason,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn loopback_is_refused_unless_allow_listed() {
    let (addr, task) = serve("127.0.0.1", ok).await;
    let prod = outbound("");
    refused(get(&prod, &format!("http://{addr}/")).await);
    refused(get(&prod, &format!("https://{addr}/")).await);
    // A name that resolves to loopback is caught at resolution, not only literal IPs.
    let reason = refused(get(&prod, &format!("https://localhost:{}/", addr.port())).await);
    assert!(reason.contains("resolves to"), "{reason}");
    refused(get(&prod, "https://169.254.169.254/latest/meta-data/").await);

    let dev = outbound("127.0.0.1");
    let resp = get(&dev, &format!("http://{addr}/x?secret=1"))
        .await
        .unwrap();
    assert_eq!(resp.status, 200);
    assert_eq!(&resp.body[..], b"hello");
    assert_eq!(resp.final_url, format!("http://{addr}/x"));
    task.abort();
}

fn to_metadata(_: &str) -> Response<Full<Bytes>> {
    Response::builder()
        .status(StatusCode::FOUND)
        .header("location", "http://169.254.169.254/latest/meta-data/")
        .body(Full::new(Bytes::new()))
        .unwrap()
}

fn to_other_loopback(path: &str) -> Response<Full<Bytes>> {
    // 127.0.0.2 is loopback too but not on the allow list of the test.
    Response::builder()
        .status(StatusCode::TEMPORARY_REDIRECT)
        .header("location", format!("http://127.0.0.2:9{path}"))
        .body(Full::new(Bytes::new()))
        .unwrap()
}

fn looping(path: &str) -> Response<Full<Bytes>> {
    let n: u32 = path.trim_start_matches('/').parse().unwrap_or(0);
    Response::builder()
        .status(StatusCode::FOUND)
        .header("location", format!("/{}", n + 1))
        .body(Full::new(Bytes::new()))
        .unwrap()
}

#[tokio::test]
async fn every_redirect_hop_is_checked() {
    let dev = outbound("127.0.0.1");
    let (a, ta) = serve("127.0.0.1", to_metadata).await;
    let reason = refused(get(&dev, &format!("http://{a}/")).await);
    assert!(reason.contains("redirect refused"), "{reason}");
    let (b, tb) = serve("127.0.0.1", to_other_loopback).await;
    refused(get(&dev, &format!("http://{b}/x")).await);
    let (c, tc) = serve("127.0.0.1", looping).await;
    let reason = refused(get(&dev, &format!("http://{c}/0")).await);
    assert!(reason.contains("redirects"), "{reason}");
    ta.abort();
    tb.abort();
    tc.abort();
}

#[tokio::test]
async fn responses_over_the_cap_are_refused_and_silence_times_out() {
    let (addr, task) = serve("127.0.0.1", big).await;
    let mut policy = OutboundPolicy::default()
        .with_allow_list("127.0.0.1")
        .unwrap();
    policy.max_response_bytes = 1024;
    let capped = Outbound::new(policy).unwrap();
    assert!(matches!(
        get(&capped, &format!("http://{addr}/")).await,
        Err(OutboundError::TooLarge { limit: 1024 })
    ));
    task.abort();

    // A peer that accepts and never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent = listener.local_addr().unwrap();
    let hold = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = listener.accept().await {
            held.push(s);
        }
    });
    let mut policy = OutboundPolicy::default()
        .with_allow_list("127.0.0.1")
        .unwrap();
    policy.timeout = Duration::from_millis(300);
    let quick = Outbound::new(policy).unwrap();
    assert!(matches!(
        get(&quick, &format!("http://{silent}/")).await,
        Err(OutboundError::Timeout)
    ));
    hold.abort();
}
