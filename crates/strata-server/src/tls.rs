//! HTTPS for `strata serve` (issue 15 item 2; InfluxDB 1.x's
//! `https-enabled`, `https-certificate`, `https-private-key`): the
//! certificate chain and key are read from PEM files once at startup into a
//! rustls server configuration (ring provider, TLS 1.2 and 1.3, HTTP/1.1
//! offered by ALPN); the accept loop (`conn.rs`) runs each connection's
//! handshake before serving it.

use std::sync::Arc;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{self, ServerConfig as RustlsConfig};
use tokio_rustls::TlsAcceptor;

use crate::config::TlsFiles;
use crate::ServerError;

/// The acceptor for `files`; a file that cannot be read or used is an error
/// naming it.
pub(crate) fn acceptor(files: &TlsFiles) -> Result<TlsAcceptor, ServerError> {
    let cert_error = |reason: String| ServerError::Tls { path: files.certificate.clone(), reason };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&files.certificate)
        .and_then(|certs| certs.collect::<Result<_, _>>())
        .map_err(|e| cert_error(e.to_string()))?;
    if certs.is_empty() {
        return Err(cert_error("no certificate in the file".to_string()));
    }
    let key = PrivateKeyDer::from_pem_file(&files.private_key)
        .map_err(|e| ServerError::Tls { path: files.private_key.clone(), reason: e.to_string() })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = RustlsConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| cert_error(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| cert_error(format!("the certificate and key do not make a usable pair: {e}")))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}
