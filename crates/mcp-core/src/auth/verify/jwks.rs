//! The authorization server's signing keys (a JWKS), fetched from a configured `jwks_uri` or
//! through the issuer's discovery document, cached, and refetched at most once per interval
//! however many requests ask at the same time.

use std::{str::FromStr, sync::Arc, time::Duration};

use arc_swap::ArcSwapOption;
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, jwk::Jwk};
use serde_json::Value;
use tokio::time::Instant;
use url::Url;

use super::{
    VerifyError,
    fetch::{FetchError, Fetcher, parse_http_url, redacted},
};

/// The default [`refetch_interval`](super::JwtVerifierBuilder::refetch_interval): 30 s.
pub(crate) const DEFAULT_REFETCH_INTERVAL: Duration = Duration::from_secs(30);
/// The default [`key_max_age`](super::JwtVerifierBuilder::key_max_age): 10 min.
pub(crate) const DEFAULT_MAX_AGE: Duration = Duration::from_secs(600);

/// Where the keys come from.
#[derive(Debug, Clone)]
pub(crate) enum KeySource {
    /// A configured `jwks_uri`.
    Jwks(Url),
    /// The issuer's discovery document (RFC 8414, then OpenID Connect Discovery), whose
    /// `issuer` must be `issuer`.
    Discovery { issuer: String, documents: Vec<Url> },
}

impl KeySource {
    /// The discovery documents of `issuer`, in the order tried: RFC 8414's
    /// `/.well-known/oauth-authorization-server` (inserted before the issuer's path), then
    /// OpenID Connect's `{issuer}/.well-known/openid-configuration`.
    pub(crate) fn discovery(issuer: &str) -> Result<Self, super::AuthConfigError> {
        let base = parse_http_url(issuer, "issuer")?;
        let path = base.path().trim_end_matches('/').to_owned();
        let mut rfc8414 = base.clone();
        rfc8414.set_path(&format!("/.well-known/oauth-authorization-server{path}"));
        let mut openid = base;
        openid.set_path(&format!("{path}/.well-known/openid-configuration"));
        Ok(Self::Discovery {
            issuer: issuer.to_owned(),
            documents: vec![rfc8414, openid],
        })
    }
}

/// One verification key.
pub(crate) struct Key {
    pub(crate) kid: Option<String>,
    /// The key's `alg`, when the JWKS names one.
    pub(crate) alg: Option<Algorithm>,
    pub(crate) key: DecodingKey,
}

impl Key {
    /// Whether the key can check a signature made with `alg`.
    pub(crate) fn fits(&self, alg: Algorithm) -> bool {
        self.key.family() == alg.family() && self.alg.is_none_or(|own| own == alg)
    }
}

/// The keys of one fetch.
pub(crate) struct KeySet {
    pub(crate) keys: Vec<Key>,
    fetched_at: Instant,
}

impl KeySet {
    fn has_kid(&self, kid: &str) -> bool {
        self.keys.iter().any(|key| key.kid.as_deref() == Some(kid))
    }
}

/// What the single fetcher remembers between fetches.
#[derive(Default)]
struct FetchState {
    last_attempt: Option<Instant>,
    last_error: Option<String>,
    /// The `jwks_uri` found through discovery.
    discovered: Option<Url>,
}

/// The cache of an issuer's keys.
pub(crate) struct Jwks {
    source: KeySource,
    fetcher: Fetcher,
    refetch_interval: Duration,
    max_age: Duration,
    keys: ArcSwapOption<KeySet>,
    fetch: tokio::sync::Mutex<FetchState>,
}

impl Jwks {
    pub(crate) fn new(
        source: KeySource,
        fetcher: Fetcher,
        refetch_interval: Duration,
        max_age: Duration,
    ) -> Self {
        Self {
            source,
            fetcher,
            refetch_interval,
            max_age,
            keys: ArcSwapOption::empty(),
            fetch: tokio::sync::Mutex::new(FetchState::default()),
        }
    }

    pub(crate) fn source(&self) -> &KeySource {
        &self.source
    }

    /// The keys to check a token whose header names `kid` (or none). Fetches when nothing is
    /// cached, when the cached keys are older than the max age, or when `kid` is unknown;
    /// but at most once per refetch interval, with one fetch serving every request waiting
    /// for it. When a fetch fails, keys cached before are used; with none, the token cannot
    /// be checked (`Unavailable`).
    pub(crate) async fn keys_for(&self, kid: Option<&str>) -> Result<Arc<KeySet>, VerifyError> {
        let usable = |set: &KeySet| {
            Instant::now().duration_since(set.fetched_at) < self.max_age
                && kid.is_none_or(|kid| set.has_kid(kid))
        };
        if let Some(set) = self.keys.load_full().filter(|set| usable(set)) {
            return Ok(set);
        }
        let mut state = self.fetch.lock().await;
        let current = self.keys.load_full();
        if let Some(set) = current.as_ref().filter(|set| usable(set)) {
            return Ok(Arc::clone(set));
        }
        let now = Instant::now();
        let cooling = state
            .last_attempt
            .is_some_and(|last| now.duration_since(last) < self.refetch_interval);
        if cooling {
            return current.ok_or_else(|| {
                VerifyError::Unavailable(state.last_error.clone().unwrap_or_else(|| {
                    "the authorization server's keys could not be fetched".into()
                }))
            });
        }
        state.last_attempt = Some(now);
        match self.fetch_keys(&mut state).await {
            Ok(keys) => {
                let set = Arc::new(KeySet {
                    keys,
                    fetched_at: Instant::now(),
                });
                self.keys.store(Some(Arc::clone(&set)));
                state.last_error = None;
                Ok(set)
            }
            Err(message) => {
                tracing::warn!(error = %message, "fetching the authorization server's keys failed");
                state.last_error = Some(message.clone());
                current.ok_or(VerifyError::Unavailable(message))
            }
        }
    }

    async fn fetch_keys(&self, state: &mut FetchState) -> Result<Vec<Key>, String> {
        let uri = match &self.source {
            KeySource::Jwks(uri) => uri.clone(),
            KeySource::Discovery { issuer, documents } => match &state.discovered {
                Some(uri) => uri.clone(),
                None => {
                    let uri = self.discover(issuer, documents).await?;
                    state.discovered = Some(uri.clone());
                    uri
                }
            },
        };
        let fetched = self.fetch_jwks(&uri).await;
        if fetched.is_err() {
            // The document may have moved the keys: discover again next time.
            state.discovered = None;
        }
        fetched
    }

    /// The `jwks_uri` of the first discovery document found.
    async fn discover(&self, issuer: &str, documents: &[Url]) -> Result<Url, String> {
        let mut missing = Vec::new();
        for document in documents {
            let (status, body) = self
                .fetcher
                .get(document)
                .await
                .map_err(|e| e.message().to_owned())?;
            if status == reqwest::StatusCode::NOT_FOUND {
                missing.push(redacted(document));
                continue;
            }
            let shown = redacted(document);
            if !status.is_success() {
                return Err(format!("{shown} answered {status}"));
            }
            let document: Value = serde_json::from_slice(&body)
                .map_err(|_| format!("{shown} is not a JSON document"))?;
            let named = document.get("issuer").and_then(Value::as_str);
            if named != Some(issuer) {
                return Err(format!(
                    "the discovery document {shown} is for issuer {named:?}, not {issuer:?}"
                ));
            }
            let jwks_uri = document
                .get("jwks_uri")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("the discovery document {shown} has no jwks_uri"))?;
            return parse_http_url(jwks_uri, "jwks_uri").map_err(|e| e.to_string());
        }
        Err(format!(
            "no discovery document for issuer {issuer:?} (tried {})",
            missing.join(", ")
        ))
    }

    async fn fetch_jwks(&self, uri: &Url) -> Result<Vec<Key>, String> {
        let shown = redacted(uri);
        let (status, body) = self
            .fetcher
            .get(uri)
            .await
            .map_err(|e: FetchError| e.message().to_owned())?;
        if !status.is_success() {
            return Err(format!("{shown} answered {status}"));
        }
        let set: Value =
            serde_json::from_slice(&body).map_err(|_| format!("{shown} is not a JSON document"))?;
        let keys = set
            .get("keys")
            .and_then(Value::as_array)
            .ok_or_else(|| format!("{shown} is not a JWKS (no keys array)"))?;
        Ok(keys.iter().filter_map(signing_key).collect())
    }
}

/// A JWKS entry as a verification key; `None` for keys that cannot verify access tokens
/// (encryption keys, symmetric keys, unknown types or algorithms).
fn signing_key(entry: &Value) -> Option<Key> {
    if entry
        .get("use")
        .and_then(Value::as_str)
        .is_some_and(|u| u != "sig")
    {
        return None;
    }
    let alg = match entry.get("alg").and_then(Value::as_str) {
        Some(name) => Some(Algorithm::from_str(name).ok()?),
        None => None,
    };
    let jwk: Jwk = serde_json::from_value(entry.clone()).ok()?;
    let key = DecodingKey::from_jwk(&jwk).ok()?;
    if key.family() == AlgorithmFamily::Hmac
        || alg.is_some_and(|alg| alg.family() == AlgorithmFamily::Hmac)
    {
        return None;
    }
    let kid = entry.get("kid").and_then(Value::as_str).map(str::to_owned);
    Some(Key { kid, alg, key })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn au11_discovery_documents_of_an_issuer_with_and_without_a_path() {
        let KeySource::Discovery { documents, .. } =
            KeySource::discovery("https://as.example").unwrap()
        else {
            panic!("not discovery")
        };
        let urls: Vec<_> = documents.iter().map(Url::as_str).collect();
        assert_eq!(
            urls,
            [
                "https://as.example/.well-known/oauth-authorization-server",
                "https://as.example/.well-known/openid-configuration"
            ]
        );
        let KeySource::Discovery { documents, .. } =
            KeySource::discovery("https://as.example/tenant/").unwrap()
        else {
            panic!("not discovery")
        };
        let urls: Vec<_> = documents.iter().map(Url::as_str).collect();
        assert_eq!(
            urls,
            [
                "https://as.example/.well-known/oauth-authorization-server/tenant",
                "https://as.example/tenant/.well-known/openid-configuration"
            ]
        );
    }

    #[test]
    fn au10_symmetric_and_encryption_keys_are_never_used() {
        let rsa = json!({"kty": "RSA", "kid": "r", "alg": "RS256", "use": "sig",
            "n": "sXchDaQebHnPiGvyDOAT4saGEUetSyo9MKLOoWFsueri23bOdgWp4Dy1WlUzewbgBHod5pcM9H95GQRV3JDXboIRROSBigeC5yjU1hGzHHyXss8UDprecbAYxknTcQkhslANGRUZmdTOQ5qTRsLAt6BTYuyvVRdhS8exSZEy_c4gs_7svlJJQ4H9_NxsiIoLwAEk7-Q3UXERGYw_75IDrGA84-lA_-Ct4eTlXHBIY2EaV7t7LjJaynVJCpkv4LKjTTAumiGUIuQhrNhZLuF_RJLqHpM2kgWFLU7-VTdL1VbC2tejvcI2BlMkEpk1BzBZI0KQB0GaDWFLN-aEAw3vRw",
            "e": "AQAB"});
        assert!(
            signing_key(&rsa)
                .is_some_and(|k| k.fits(Algorithm::RS256) && !k.fits(Algorithm::PS256))
        );
        let oct = json!({"kty": "oct", "kid": "h", "k": "c2VjcmV0"});
        assert!(signing_key(&oct).is_none());
        let mut enc = rsa.clone();
        enc["use"] = json!("enc");
        assert!(signing_key(&enc).is_none());
        let mut hs = rsa.clone();
        hs["alg"] = json!("HS256");
        assert!(signing_key(&hs).is_none());
        let mut unknown = rsa;
        unknown["alg"] = json!("RSA-OAEP");
        assert!(signing_key(&unknown).is_none());
        assert!(signing_key(&json!({"kty": "RSA"})).is_none());
    }
}
