//! [`CachedVerifier`]: verified tokens remembered until they expire, so that a repeated
//! token costs a lookup.

use std::{
    fmt,
    sync::Arc,
    time::{Duration, SystemTime},
};

use sha2::{Digest, Sha256};
use tokio::time::Instant;

use super::{AuthConfigError, TokenVerifier, Verified, VerifyError};

/// The bounds of a [`CachedVerifier`].
///
/// ```
/// use std::time::Duration;
/// use ferrymcp_core::auth::verify::CacheLimits;
/// let limits = CacheLimits::default()
///     .max_entries(1_000)
///     .max_ttl(Duration::from_secs(60))
///     .invalid_ttl(Duration::ZERO);
/// assert_eq!(CacheLimits::DEFAULT_MAX_ENTRIES, 10_000);
/// # let _ = limits;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub struct CacheLimits {
    max_entries: usize,
    max_ttl: Duration,
    invalid_ttl: Duration,
}

impl CacheLimits {
    /// The default [`max_entries`](Self::max_entries): 10 000 tokens.
    ///
    /// ```
    /// assert_eq!(ferrymcp_core::auth::verify::CacheLimits::DEFAULT_MAX_ENTRIES, 10_000);
    /// ```
    pub const DEFAULT_MAX_ENTRIES: usize = 10_000;
    /// The default [`max_ttl`](Self::max_ttl): 5 minutes.
    ///
    /// ```
    /// assert_eq!(ferrymcp_core::auth::verify::CacheLimits::DEFAULT_MAX_TTL.as_secs(), 300);
    /// ```
    pub const DEFAULT_MAX_TTL: Duration = Duration::from_secs(300);
    /// The default [`invalid_ttl`](Self::invalid_ttl): 5 s.
    ///
    /// ```
    /// assert_eq!(ferrymcp_core::auth::verify::CacheLimits::DEFAULT_INVALID_TTL.as_secs(), 5);
    /// ```
    pub const DEFAULT_INVALID_TTL: Duration = Duration::from_secs(5);

    /// At most this many tokens are remembered (default 10 000); past it the least useful
    /// entries make room (tokens seen once go before tokens seen again).
    ///
    /// ```
    /// let _ = ferrymcp_core::auth::verify::CacheLimits::default().max_entries(100);
    /// ```
    pub fn max_entries(mut self, max_entries: usize) -> Self {
        self.max_entries = max_entries;
        self
    }

    /// A valid token is remembered until it expires, but at most this long (default 5
    /// minutes): a token revoked at the authorization server is still accepted for at most
    /// this long, since introspection is not asked again meanwhile.
    ///
    /// ```
    /// # use std::time::Duration;
    /// let _ = ferrymcp_core::auth::verify::CacheLimits::default().max_ttl(Duration::from_secs(30));
    /// ```
    pub fn max_ttl(mut self, max_ttl: Duration) -> Self {
        self.max_ttl = max_ttl;
        self
    }

    /// A token found invalid is refused from memory this long (default 5 s), so a flood of
    /// the same bad token does not reach the authorization server; zero does not remember
    /// invalid tokens. Tokens that could not be checked (unavailable) are never remembered.
    ///
    /// ```
    /// # use std::time::Duration;
    /// let _ = ferrymcp_core::auth::verify::CacheLimits::default().invalid_ttl(Duration::ZERO);
    /// ```
    pub fn invalid_ttl(mut self, invalid_ttl: Duration) -> Self {
        self.invalid_ttl = invalid_ttl;
        self
    }
}

impl Default for CacheLimits {
    fn default() -> Self {
        Self {
            max_entries: Self::DEFAULT_MAX_ENTRIES,
            max_ttl: Self::DEFAULT_MAX_TTL,
            invalid_ttl: Self::DEFAULT_INVALID_TTL,
        }
    }
}

/// Wraps a [`TokenVerifier`] and remembers its answers, keyed by the SHA-256 of the token
/// (the token itself is never stored): a valid token until its `exp` (never past it) and
/// at most [`max_ttl`](CacheLimits::max_ttl), an invalid one for
/// [`invalid_ttl`](CacheLimits::invalid_ttl). A repeated token costs a hash and a lookup;
/// concurrent requests with the same new token ask the wrapped verifier once.
///
/// ```no_run
/// use ferrymcp_core::auth::verify::{CachedVerifier, JwtVerifier, TokenVerifier};
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let verifier = CachedVerifier::new(
///     JwtVerifier::builder("https://auth.example.com").audience("https://mcp.example.com/mcp").build()?,
/// );
/// let first = verifier.verify("eyJ...").await;   // verified
/// let again = verifier.verify("eyJ...").await;   // remembered
/// # let _ = (first, again); Ok(()) }
/// ```
pub struct CachedVerifier<V> {
    inner: V,
    limits: CacheLimits,
    cache: quick_cache::sync::Cache<[u8; 32], Arc<Entry>>,
}

/// One remembered answer.
struct Entry {
    outcome: Result<Verified, VerifyError>,
    /// When the entry stops being used (the earlier of `exp` and the ttl), on tokio's clock.
    until: Instant,
    /// The token's `exp` on the wall clock: also checked, so an entry never outlives it.
    expires_at: Option<SystemTime>,
}

impl Entry {
    fn fresh(&self) -> bool {
        Instant::now() < self.until && self.expires_at.is_none_or(|exp| SystemTime::now() < exp)
    }
}

impl<V: TokenVerifier> CachedVerifier<V> {
    /// Wraps `inner` with the default [`CacheLimits`].
    ///
    /// ```
    /// use ferrymcp_core::auth::verify::{CachedVerifier, JwtVerifier};
    /// let jwt = JwtVerifier::builder("https://as").audience("urn:me").build().unwrap();
    /// let cached = CachedVerifier::new(jwt);
    /// assert!(cached.is_empty());
    /// ```
    pub fn new(inner: V) -> Self {
        Self::build(inner, CacheLimits::default())
    }

    /// Wraps `inner` with `limits`; a zero `max_entries` or `max_ttl` is refused.
    ///
    /// ```
    /// use ferrymcp_core::auth::verify::{AuthConfigError, CacheLimits, CachedVerifier, JwtVerifier};
    /// let jwt = JwtVerifier::builder("https://as").audience("urn:me").build().unwrap();
    /// let refused = CachedVerifier::with_limits(jwt, CacheLimits::default().max_entries(0));
    /// assert_eq!(refused.err(), Some(AuthConfigError::Zero("max_entries")));
    /// ```
    pub fn with_limits(inner: V, limits: CacheLimits) -> Result<Self, AuthConfigError> {
        if limits.max_entries == 0 {
            return Err(AuthConfigError::Zero("max_entries"));
        }
        if limits.max_ttl.is_zero() {
            return Err(AuthConfigError::Zero("max_ttl"));
        }
        Ok(Self::build(inner, limits))
    }

    fn build(inner: V, limits: CacheLimits) -> Self {
        Self {
            inner,
            limits,
            cache: quick_cache::sync::Cache::new(limits.max_entries),
        }
    }

    /// The wrapped verifier.
    ///
    /// ```
    /// use ferrymcp_core::auth::verify::{CachedVerifier, JwtVerifier};
    /// let cached = CachedVerifier::new(JwtVerifier::builder("https://as").audience("urn:me").build().unwrap());
    /// assert_eq!(cached.inner().issuer(), "https://as");
    /// ```
    pub fn inner(&self) -> &V {
        &self.inner
    }

    /// How many answers are remembered now (expired ones included until they are looked up
    /// or evicted).
    ///
    /// ```
    /// use ferrymcp_core::auth::verify::{CachedVerifier, JwtVerifier};
    /// let cached = CachedVerifier::new(JwtVerifier::builder("https://as").audience("urn:me").build().unwrap());
    /// assert_eq!(cached.len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.cache.len()
    }

    /// Whether nothing is remembered.
    ///
    /// ```
    /// use ferrymcp_core::auth::verify::{CachedVerifier, JwtVerifier};
    /// let cached = CachedVerifier::new(JwtVerifier::builder("https://as").audience("urn:me").build().unwrap());
    /// assert!(cached.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.cache.is_empty()
    }

    /// The entry to remember for `outcome`, if any.
    fn entry_for(&self, outcome: &Result<Verified, VerifyError>) -> Option<Entry> {
        let (ttl, expires_at) = match outcome {
            Ok(verified) => match verified.expires_at {
                None => (self.limits.max_ttl, None),
                Some(exp) => {
                    let left = exp.duration_since(SystemTime::now()).ok()?;
                    (left.min(self.limits.max_ttl), Some(exp))
                }
            },
            Err(VerifyError::Invalid(_)) => (self.limits.invalid_ttl, None),
            Err(VerifyError::Unavailable(_)) => return None,
        };
        if ttl.is_zero() {
            return None;
        }
        // A ttl too large for the clock (a huge max_ttl): a century is forever enough.
        let now = Instant::now();
        let until = now
            .checked_add(ttl)
            .or_else(|| now.checked_add(Duration::from_secs(100 * 365 * 86_400)))?;
        Some(Entry {
            outcome: outcome.clone(),
            until,
            expires_at,
        })
    }
}

impl<V> fmt::Debug for CachedVerifier<V>
where
    V: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CachedVerifier")
            .field("inner", &self.inner)
            .field("limits", &self.limits)
            .field("entries", &self.cache.len())
            .finish()
    }
}

#[async_trait::async_trait]
impl<V: TokenVerifier> TokenVerifier for CachedVerifier<V> {
    async fn verify(&self, token: &str) -> Result<Verified, VerifyError> {
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        // Twice at most: a stale entry is dropped, then the second lookup loads.
        for _ in 0..2 {
            match self.cache.get_value_or_guard_async(&key).await {
                Ok(entry) if entry.fresh() => return entry.outcome.clone(),
                Ok(_) => {
                    self.cache.remove_if(&key, |entry| !entry.fresh());
                }
                Err(guard) => {
                    let outcome = self.inner.verify(token).await;
                    if let Some(entry) = self.entry_for(&outcome) {
                        let _ = guard.insert(Arc::new(entry));
                    }
                    return outcome;
                }
            }
        }
        self.inner.verify(token).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::auth::Principal;

    /// Counts calls; `valid-*` tokens are valid until `expires_in` from now, others invalid,
    /// `down` unavailable.
    struct Counting {
        calls: AtomicUsize,
        expires_in: Option<Duration>,
    }

    impl Counting {
        fn new(expires_in: Option<Duration>) -> Self {
            Self {
                calls: AtomicUsize::new(0),
                expires_in,
            }
        }
    }

    #[async_trait::async_trait]
    impl TokenVerifier for Counting {
        async fn verify(&self, token: &str) -> Result<Verified, VerifyError> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            tokio::task::yield_now().await;
            match token {
                "down" => Err(VerifyError::Unavailable("down".into())),
                t if t.starts_with("valid") => Ok(Verified {
                    principal: Principal::new(t),
                    expires_at: self.expires_in.map(|d| SystemTime::now() + d),
                }),
                _ => Err(VerifyError::Invalid("bad".into())),
            }
        }
    }

    fn calls(cached: &CachedVerifier<Arc<Counting>>) -> usize {
        cached.inner().calls.load(Ordering::SeqCst)
    }

    fn cached(expires_in: Option<Duration>, limits: CacheLimits) -> CachedVerifier<Arc<Counting>> {
        CachedVerifier::with_limits(Arc::new(Counting::new(expires_in)), limits).unwrap()
    }

    const HOUR: Duration = Duration::from_secs(3600);

    #[tokio::test(start_paused = true)]
    async fn au15_a_repeated_valid_token_is_verified_once() {
        let cache = cached(Some(HOUR), CacheLimits::default());
        for _ in 0..5 {
            assert_eq!(
                cache.verify("valid-a").await.unwrap().principal.client_id,
                "valid-a"
            );
        }
        assert_eq!(calls(&cache), 1);
        cache.verify("valid-b").await.unwrap();
        assert_eq!(calls(&cache), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn au15_concurrent_requests_with_one_new_token_verify_it_once() {
        let cache = Arc::new(cached(Some(HOUR), CacheLimits::default()));
        let all = (0..20).map(|_| {
            let cache = Arc::clone(&cache);
            tokio::spawn(async move { cache.verify("valid-a").await })
        });
        for outcome in futures::future::join_all(all).await {
            assert!(outcome.unwrap().is_ok());
        }
        assert_eq!(calls(&cache), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn au15_an_entry_is_dropped_at_max_ttl() {
        let cache = cached(
            Some(HOUR),
            CacheLimits::default().max_ttl(Duration::from_secs(60)),
        );
        cache.verify("valid-a").await.unwrap();
        tokio::time::advance(Duration::from_secs(59)).await;
        cache.verify("valid-a").await.unwrap();
        assert_eq!(calls(&cache), 1);
        tokio::time::advance(Duration::from_secs(2)).await;
        cache.verify("valid-a").await.unwrap();
        assert_eq!(calls(&cache), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn au15_an_entry_never_outlives_the_token_expiry() {
        let cache = cached(Some(Duration::from_secs(10)), CacheLimits::default());
        cache.verify("valid-a").await.unwrap();
        tokio::time::advance(Duration::from_secs(9)).await;
        cache.verify("valid-a").await.unwrap();
        assert_eq!(calls(&cache), 1);
        tokio::time::advance(Duration::from_secs(2)).await;
        cache.verify("valid-a").await.unwrap();
        assert_eq!(calls(&cache), 2);

        // A verifier answering with an expiry already past: nothing is remembered.
        let past = cached(Some(Duration::ZERO), CacheLimits::default());
        past.verify("valid-a").await.unwrap();
        past.verify("valid-a").await.unwrap();
        assert_eq!(calls(&past), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn au15_invalid_tokens_are_remembered_briefly_and_unavailable_never() {
        let cache = cached(None, CacheLimits::default());
        for _ in 0..3 {
            assert!(matches!(
                cache.verify("garbage").await,
                Err(VerifyError::Invalid(_))
            ));
        }
        assert_eq!(calls(&cache), 1);
        tokio::time::advance(CacheLimits::DEFAULT_INVALID_TTL).await;
        cache.verify("garbage").await.unwrap_err();
        assert_eq!(calls(&cache), 2);
        for _ in 0..3 {
            assert!(matches!(
                cache.verify("down").await,
                Err(VerifyError::Unavailable(_))
            ));
        }
        assert_eq!(calls(&cache), 5);

        let forgetful = cached(None, CacheLimits::default().invalid_ttl(Duration::ZERO));
        forgetful.verify("garbage").await.unwrap_err();
        forgetful.verify("garbage").await.unwrap_err();
        assert_eq!(calls(&forgetful), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn au15_a_max_ttl_past_what_the_clock_holds_does_not_panic() {
        let cache = cached(None, CacheLimits::default().max_ttl(Duration::MAX));
        cache.verify("valid-a").await.unwrap();
        cache.verify("valid-a").await.unwrap();
        assert_eq!(calls(&cache), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn au15_the_cache_holds_at_most_max_entries() {
        let cache = cached(None, CacheLimits::default().max_entries(50));
        for i in 0..1_000 {
            cache.verify(&format!("valid-{i}")).await.unwrap();
        }
        assert!(cache.len() <= 50, "{} entries", cache.len());
        assert!(!cache.is_empty());
    }
}
