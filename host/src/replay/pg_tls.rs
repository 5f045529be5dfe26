//! How the PostgreSQL store connects: the URL's TLS parameters, read the
//! way libpq names them, and the rustls connector they ask for.
//!
//! wrepl always verifies a server certificate it is shown, so the modes
//! differ from libpq's only in being stricter:
//! - `sslmode=disable`: no TLS.
//! - no `sslmode`, or `prefer`: TLS when the server offers it (verified as
//!   with `verify-full`), else none.
//! - `require` and `verify-full`: TLS or no connection; the certificate
//!   must chain to a trusted root and name the host.
//! - `verify-ca`: TLS or no connection; the certificate must chain to a
//!   trusted root (its names are not checked).
//!
//! The trusted roots are the certificates in `sslrootcert=FILE` (PEM), or
//! the system's store (also `sslrootcert=system`). Unix sockets never use
//! TLS (PostgreSQL does not offer it there). Client certificates (`sslcert`,
//! `sslkey`) are not supported and are refused, as is any TLS parameter
//! wrepl does not understand.

use std::sync::Arc;

use postgres::config::{Host, SslMode};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::store::StoreError;

/// What the URL asks of TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

/// A parsed store URL: the driver's configuration and, when TLS may be
/// used, the connector.
pub(super) struct Target {
    /// The connection settings, TLS mode included.
    pub(super) config: postgres::Config,
    /// The connector, `None` when no TLS is used.
    pub(super) tls: Option<MakeRustlsConnect>,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target").field("tls", &self.tls.is_some()).finish_non_exhaustive()
    }
}

impl Target {
    /// Connect, with TLS when the URL asked for it.
    pub(super) fn connect(&self) -> Result<postgres::Client, postgres::Error> {
        let mut client = match &self.tls {
            Some(tls) => self.config.connect(tls.clone())?,
            None => self.config.connect(postgres::NoTls)?,
        };
        // The store's one-statement reads after a lock (the head after
        // taking a lease) rely on each statement seeing what committed
        // before it: whatever the server's default isolation level.
        client.batch_execute("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED")?;
        Ok(client)
    }
}

/// An error and its causes, one after the other (the driver's own text
/// names only the kind of error).
pub(super) fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(&format!(": {s}"));
        source = s.source();
    }
    text
}

fn bad(shown: &str, m: impl std::fmt::Display) -> StoreError {
    StoreError::Postgres(format!("{shown}: {m}"))
}

/// Read `url` (`postgres://…` or `postgresql://…`); `shown` is the URL as
/// messages show it (no password).
pub(super) fn parse(url: &str, shown: &str) -> Result<Target, StoreError> {
    let lower = url.to_ascii_lowercase();
    if !(lower.starts_with("postgres://") || lower.starts_with("postgresql://")) {
        return Err(bad(shown, "expected a postgres:// or postgresql:// URL"));
    }
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, q),
        None => (url, ""),
    };
    let (mut mode, mut rootcert) = (None, None);
    let mut kept = Vec::new();
    // Only the TLS parameters are taken out; every other one is passed on
    // to the driver byte for byte (it decodes them itself).
    for raw in query.split('&').filter(|p| !p.is_empty()) {
        let (raw_key, value) = raw.split_once('=').unwrap_or((raw, ""));
        // The driver decodes keys too: `%73slmode` must not slip past.
        let key = percent_encoding::percent_decode_str(raw_key).decode_utf8_lossy().into_owned();
        let key = key.as_str();
        let value = || {
            percent_encoding::percent_decode_str(value)
                .decode_utf8()
                .map(|v| v.into_owned())
                .map_err(|_| bad(shown, format!("the value of {key} is not UTF-8")))
        };
        match key {
            "sslmode" => {
                let v = value()?;
                mode = Some(match v.as_str() {
                    "disable" => Mode::Disable,
                    "prefer" => Mode::Prefer,
                    "require" => Mode::Require,
                    "verify-ca" => Mode::VerifyCa,
                    "verify-full" => Mode::VerifyFull,
                    // `allow` would fall back to no TLS after a refusal,
                    // which wrepl does not do silently.
                    other => {
                        return Err(bad(
                            shown,
                            format!("sslmode={other} is not supported: use disable, prefer, require, verify-ca or verify-full"),
                        ))
                    }
                });
            }
            "sslrootcert" => rootcert = Some(value()?),
            "sslcert" | "sslkey" | "sslpassword" | "sslcrl" | "sslcrldir" | "sslcertmode" => {
                return Err(bad(
                    shown,
                    format!("{key} is not supported: wrepl authenticates to PostgreSQL with a password or peer, not a client certificate"),
                ))
            }
            k if k.starts_with("ssl") && k != "sslnegotiation" => {
                return Err(bad(shown, format!("the TLS parameter {k} is not supported")));
            }
            _ => kept.push(raw),
        }
    }
    let rest = if kept.is_empty() { base.to_string() } else { format!("{base}?{}", kept.join("&")) };
    let mut config: postgres::Config = rest.parse().map_err(|e: postgres::Error| bad(shown, chain(&e)))?;
    let mode = mode.unwrap_or(Mode::Prefer);
    // PostgreSQL offers no TLS on unix sockets, so a URL naming only
    // sockets needs no connector; one asking for TLS there is an error.
    let tcp = config.get_hosts().iter().any(|h| matches!(h, Host::Tcp(_)));
    if mode == Mode::Disable || (!tcp && mode == Mode::Prefer) {
        config.ssl_mode(SslMode::Disable);
        return Ok(Target { config, tls: None });
    }
    if !tcp {
        return Err(bad(shown, "TLS was asked for, but the URL names only unix sockets, which never use TLS"));
    }
    config.ssl_mode(if mode == Mode::Prefer { SslMode::Prefer } else { SslMode::Require });
    let roots = roots(rootcert.as_deref(), shown)?;
    let provider = Arc::new(ring_provider());
    let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|e| bad(shown, format!("TLS: {e}")))?;
    let verifier: Arc<dyn ServerCertVerifier> = if mode == Mode::VerifyCa { Arc::new(AnyName(webpki)) } else { webpki };
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad(shown, format!("TLS: {e}")))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(Target { config, tls: Some(MakeRustlsConnect::new(tls)) })
}

/// The roots a server certificate must chain to.
fn roots(rootcert: Option<&str>, shown: &str) -> Result<RootCertStore, StoreError> {
    let mut roots = RootCertStore::empty();
    match rootcert {
        Some(path) if path != "system" => {
            let certs = CertificateDer::pem_file_iter(path)
                .and_then(|it| it.collect::<Result<Vec<_>, _>>())
                .map_err(|e| bad(shown, format!("sslrootcert {path}: {e}")))?;
            for cert in certs {
                roots.add(cert).map_err(|e| bad(shown, format!("sslrootcert {path}: {e}")))?;
            }
            if roots.is_empty() {
                return Err(bad(shown, format!("sslrootcert {path} holds no certificate")));
            }
        }
        _ => {
            let found = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(found.certs);
            if roots.is_empty() {
                let why = found.errors.first().map(|e| format!(" ({e})")).unwrap_or_default();
                return Err(bad(
                    shown,
                    format!(
                        "TLS needs trusted roots and the system has none{why}: name the server's CA with \
                         sslrootcert=FILE"
                    ),
                ));
            }
        }
    }
    Ok(roots)
}

/// `verify-ca`: the chain is verified, the names in the certificate are not.
#[derive(Debug)]
struct AnyName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        // The name is checked last, after the chain: a name error means
        // the chain was good.
        match self.0.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// rustls' `ring` crypto provider. rustls 0.23.48 deprecates it because
/// ring offers no post-quantum key exchange. Moving to the provider that
/// has one (aws-lc-rs, a large C library to build) is a change of its own;
/// until then wrepl negotiates the classical key exchanges ring provides.
#[allow(deprecated)]
pub(crate) fn ring_provider() -> rustls::crypto::CryptoProvider {
    rustls::crypto::ring::default_provider()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(url: &str) -> String {
        parse(url, "U").unwrap_err().to_string()
    }

    #[test]
    fn modes_and_refusals() {
        let t = parse("postgres://u@/db?host=/tmp", "U").unwrap();
        assert!(t.tls.is_none(), "a unix socket needs no TLS");
        let t = parse("postgres://u@127.0.0.1/db?sslmode=disable&application_name=a%20b", "U").unwrap();
        assert!(t.tls.is_none());
        assert_eq!(t.config.get_application_name(), Some("a b"));
        assert!(err("postgres://u@/db?host=/tmp&sslmode=require").contains("only unix sockets"));
        assert!(err("postgres://u@h/db?sslmode=allow").contains("sslmode=allow is not supported"));
        assert!(err("postgres://u@h/db?sslkey=/k").contains("client certificate"));
        assert!(err("postgres://u@h/db?sslsni=0").contains("sslsni is not supported"));
        assert!(
            err("postgres://u@h/db?sslmode=require&sslrootcert=/nonexistent/ca.pem").contains("/nonexistent/ca.pem")
        );
        assert!(err("mysql://u@h/db").contains("postgres://"));
        assert!(err("postgres://u@h/db?bogus=1").contains("bogus"));
        assert!(err("postgres://u@h/db?%73slmode=allow").contains("sslmode=allow is not supported"));
    }
}
