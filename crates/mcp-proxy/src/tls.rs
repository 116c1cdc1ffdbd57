//! The HTTP client of an HTTP upstream: rustls (aws-lc-rs) with the webpki roots or a
//! configured CA file, and no redirects.
//!
//! reqwest's own rustls verifier would read the operating system's certificate store; the
//! proxy hands it a finished rustls config instead, so the trusted roots are exactly the
//! built-in Mozilla set (or the CA file), on every machine.

use std::{path::Path, sync::Arc};

use rmcp::transport::streamable_http_client::StreamableHttpError;
use rustls::{ClientConfig, RootCertStore};
use rustls_pki_types::{CertificateDer, pem::PemObject as _};

use crate::{HttpTarget, ProxyError};

/// The CA certificates in the PEM file at `path`: at least one, each parsed.
pub(crate) fn read_ca_file(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let pem =
        std::fs::read(path).map_err(|e| format!("reading the CA file {}: {e}", path.display()))?;
    let mut certs = Vec::new();
    for cert in CertificateDer::pem_slice_iter(&pem) {
        certs.push(
            cert.map_err(|e| format!("the CA file {} is not valid PEM: {e}", path.display()))?,
        );
    }
    if certs.is_empty() {
        return Err(format!(
            "the CA file {} holds no PEM CERTIFICATE block",
            path.display()
        ));
    }
    Ok(certs)
}

/// The roots `target` trusts: its CA file's certificates, or the webpki roots.
fn roots(target: &HttpTarget) -> Result<RootCertStore, String> {
    let Some(path) = &target.ca_file else {
        return Ok(RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        });
    };
    let mut store = RootCertStore::empty();
    for cert in read_ca_file(path)? {
        store
            .add(cert)
            .map_err(|e| format!("a certificate of the CA file {}: {e}", path.display()))?;
    }
    Ok(store)
}

/// The TLS configuration of every connection to `target`: its roots, HTTP/1.1 only.
pub(crate) fn tls_config(target: &HttpTarget) -> Result<ClientConfig, ProxyError> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut tls = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ProxyError::Config(format!("TLS versions: {e}")))?
        .with_root_certificates(roots(target).map_err(ProxyError::Config)?)
        .with_no_client_auth();
    // Both clients speak HTTP/1 only.
    tls.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tls)
}

/// The reqwest client of the session's transport and the token fetches, with `tls`.
pub(crate) fn http_client(tls: ClientConfig) -> Result<reqwest::Client, ProxyError> {
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        // A redirect would re-send the body and headers (a bearer included) to an address
        // nobody configured; the 3xx answer fails the request instead.
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| ProxyError::Config(format!("building the HTTP client: {}", chain(&e))))
}

/// `error` and its causes, `: `-separated: reqwest and rustls put the reason (an unknown
/// certificate issuer, a refused connection) in the causes, which rmcp's HTTP client error
/// does not link as its source.
pub(crate) fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut cause = cause_of(error);
    while let Some(error) = cause {
        let more = error.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        cause = cause_of(error);
    }
    text
}

fn cause_of<'a>(
    error: &'a (dyn std::error::Error + 'static),
) -> Option<&'a (dyn std::error::Error + 'static)> {
    match error.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
        Some(StreamableHttpError::Client(client)) => Some(client),
        _ => error.source(),
    }
}
