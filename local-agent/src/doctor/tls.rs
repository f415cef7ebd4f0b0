//! The alert address's reachability without sending an alert: a TCP connection and, for
//! `https://`, a TLS handshake with the same trust as the sender (the bundled Mozilla roots plus
//! the optional extra CA). The connection closes after the handshake; no HTTP request is made.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::{ClientConfig, RootCertStore};

use crate::alerts::config::WebhookAddress;

/// Connect plus handshake must finish within this.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// How the address answered, or why it did not.
pub async fn probe(address: &WebhookAddress, extra_ca: Option<&Path>) -> Result<String, String> {
    let url = address.url();
    let host = url.host_str().ok_or("the address has no host")?.to_string();
    let port = url
        .port_or_known_default()
        .ok_or("the address has no port")?;
    // `[::1]` in a URL is `::1` to a resolver.
    let connect_host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let attempt = async {
        let tcp = TcpStream::connect((connect_host.as_str(), port))
            .await
            .map_err(|e| format!("cannot connect to {host}:{port} ({e})"))?;
        if url.scheme() != "https" {
            return Ok(format!("connected to {host}:{port}"));
        }
        let config = client_config(extra_ca)?;
        let name = ServerName::try_from(connect_host.clone())
            .map_err(|e| format!("{host} is not a valid TLS server name ({e})"))?;
        let tls = TlsConnector::from(Arc::new(config))
            .connect(name, tcp)
            .await
            .map_err(|e| format!("TLS handshake with {host}:{port} failed ({e})"))?;
        let (_, session) = tls.get_ref();
        let version = session
            .protocol_version()
            .map(|v| format!("{v:?}"))
            .unwrap_or_else(|| "TLS".into());
        Ok(format!("{version} handshake with {host}:{port} succeeded"))
    };
    tokio::time::timeout(PROBE_TIMEOUT, attempt)
        .await
        .map_err(|_| format!("no answer from {host}:{port} within {PROBE_TIMEOUT:?}"))?
}

fn client_config(extra_ca: Option<&Path>) -> Result<ClientConfig, String> {
    let mut roots = RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(path) = extra_ca {
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
            .map_err(|e| format!("the extra CA file {} cannot be read ({e})", path.display()))?
            .collect::<Result<_, _>>()
            .map_err(|e| format!("the extra CA file {} is not PEM ({e})", path.display()))?;
        for cert in certs {
            roots.add(cert).map_err(|e| {
                format!(
                    "the extra CA file {} holds a bad certificate ({e})",
                    path.display()
                )
            })?;
        }
    }
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    Ok(ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth())
}
