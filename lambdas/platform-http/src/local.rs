//! The local server: the same router over hyper on a loopback socket, for development and for
//! tests that speak real HTTP (`api --local ADDR`).

use std::convert::Infallible;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use http::{Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use crate::app::App;
use crate::extract::declared_length;
use crate::guard::ClientAddr;

/// The largest body any route takes (custom connectors' OpenAPI documents); the router applies
/// each route's own limit.
const MAX_BODY: usize = platform_domain::custom::MAX_REQUEST_BODY;

/// Reads at most `MAX_BODY + 1` bytes: enough for the router to see that a body is too large
/// without buffering all of it.
async fn read_capped(body: Incoming) -> Result<Bytes, hyper::Error> {
    let mut body = body;
    let mut buf = BytesMut::new();
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame?.into_data() {
            let room = (MAX_BODY + 1).saturating_sub(buf.len());
            buf.extend_from_slice(&data[..data.len().min(room)]);
            if buf.len() > MAX_BODY {
                break;
            }
        }
    }
    Ok(buf.freeze())
}

async fn serve_one(
    app: Arc<App>,
    peer: String,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (mut parts, body) = req.into_parts();
    let declared_too_large = declared_length(&parts.headers) > MAX_BODY as u64;
    // A declared oversize body is not read at all; the router answers 413 from the header.
    let bytes = if declared_too_large {
        Bytes::new()
    } else {
        match read_capped(body).await {
            Ok(b) => b,
            Err(e) => {
                tracing::debug!(error = %e, "client body read failed");
                Bytes::new()
            }
        }
    };
    parts.extensions.insert(ClientAddr(peer));
    let resp = app.handle(Request::from_parts(parts, bytes)).await;
    Ok(resp.map(Full::new))
}

/// Serves `app` on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, app: Arc<App>) -> std::io::Result<()> {
    loop {
        let (stream, peer) = listener.accept().await?;
        let app = app.clone();
        tokio::spawn(async move {
            let peer = peer.ip().to_string();
            let svc = service_fn(move |req| serve_one(app.clone(), peer.clone(), req));
            if let Err(e) = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), svc)
                .await
            {
                tracing::debug!(error = %e, "connection ended with an error");
            }
        });
    }
}
