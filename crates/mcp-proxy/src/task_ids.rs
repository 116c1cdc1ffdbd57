//! Proxy task ids: signed, encrypted, opaque handles on an upstream's task.
//!
//! A proxy task id names the upstream, the upstream's task id and the caller, and shows none of
//! them: the upstream name and task id are sealed with XChaCha20-Poly1305 (an AEAD, from the
//! RustCrypto `chacha20poly1305` crate) under a random 192-bit nonce, with the caller as
//! associated data. A forged, altered or foreign id (another caller's, or another proxy key's)
//! does not open. The key is configured ([`TaskIdSigner::new`], the same on every replica
//! behind one endpoint) or random per process ([`TaskIdSigner::random`]); the AEAD key is
//! HMAC-SHA256 of it under a fixed label, so any key length of 16 bytes or more works.
//!
//! Layout: `mcpx2.` + base64url(nonce (24 bytes) ‖ ciphertext ‖ tag (16 bytes)), where the
//! plaintext is `len(upstream) as u16 ‖ upstream ‖ upstream task id`.

use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use chacha20poly1305::{
    KeyInit as _, XChaCha20Poly1305, XNonce,
    aead::{Aead as _, Payload},
};
use hmac::{Hmac, Mac as _};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// The prefix of every proxy task id.
pub const PREFIX: &str = "mcpx2.";
const NONCE: usize = 24;
const TAG: usize = 16;

/// Mints and opens proxy task ids.
///
/// ```
/// use ferrymcp_proxy::task_ids::TaskIdSigner;
/// let signer = TaskIdSigner::new(b"a key shared by the gateway replicas").unwrap();
/// let id = signer.mint("github", "task-42", "alice").unwrap();
/// assert!(!id.contains("github") && !id.contains("task-42") && !id.contains("alice"));
/// assert_eq!(signer.open(&id, "alice"), Some(("github".to_owned(), "task-42".to_owned())));
/// assert_eq!(signer.open(&id, "mallory"), None);
/// ```
#[derive(Clone)]
pub struct TaskIdSigner {
    cipher: XChaCha20Poly1305,
}

impl std::fmt::Debug for TaskIdSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TaskIdSigner(<key>)")
    }
}

/// Errors of [`TaskIdSigner`].
///
/// ```
/// assert!(ferrymcp_proxy::task_ids::TaskIdSigner::new(b"short").is_err());
/// ```
#[derive(Debug, thiserror::Error)]
pub enum TaskIdError {
    /// The key is shorter than 16 bytes.
    #[error("a task id key needs at least 16 bytes, got {0}")]
    ShortKey(usize),
    /// The system random source failed.
    #[error("no random bytes for the task id: {0}")]
    Random(String),
    /// The upstream name is longer than 65535 bytes.
    #[error("the upstream name is too long for a task id ({0} bytes)")]
    LongUpstream(usize),
}

/// The associated data of an id: what it is, and for whom.
fn associated_data(caller: &str) -> Vec<u8> {
    let mut aad = Vec::with_capacity(PREFIX.len() + caller.len());
    aad.extend_from_slice(PREFIX.as_bytes());
    aad.extend_from_slice(caller.as_bytes());
    aad
}

impl TaskIdSigner {
    /// A signer with a configured key (at least 16 bytes; replicas share it).
    ///
    /// ```
    /// let _ = ferrymcp_proxy::task_ids::TaskIdSigner::new(b"0123456789abcdef").unwrap();
    /// ```
    pub fn new(key: &[u8]) -> Result<Self, TaskIdError> {
        if key.len() < 16 {
            return Err(TaskIdError::ShortKey(key.len()));
        }
        let mut kdf = <HmacSha256 as hmac::KeyInit>::new_from_slice(key)
            .map_err(|_| TaskIdError::ShortKey(key.len()))?;
        kdf.update(b"mcpkit proxy task id: xchacha20poly1305 key");
        let derived: [u8; 32] = kdf.finalize().into_bytes().into();
        Ok(Self {
            cipher: XChaCha20Poly1305::new((&derived).into()),
        })
    }

    /// A signer with a random key: ids stay valid for this process only.
    ///
    /// ```
    /// let a = ferrymcp_proxy::task_ids::TaskIdSigner::random().unwrap();
    /// let b = ferrymcp_proxy::task_ids::TaskIdSigner::random().unwrap();
    /// assert_eq!(b.open(&a.mint("u", "t", "").unwrap(), ""), None);
    /// ```
    pub fn random() -> Result<Self, TaskIdError> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).map_err(|e| TaskIdError::Random(e.to_string()))?;
        Self::new(&key)
    }

    /// The proxy id of `upstream`'s task `task_id`, for `caller` (a principal's scope key;
    /// empty for anonymous callers).
    ///
    /// ```
    /// let signer = ferrymcp_proxy::task_ids::TaskIdSigner::random().unwrap();
    /// assert!(signer.mint("u", "t", "").unwrap().starts_with(ferrymcp_proxy::task_ids::PREFIX));
    /// ```
    pub fn mint(&self, upstream: &str, task_id: &str, caller: &str) -> Result<String, TaskIdError> {
        let upstream_len =
            u16::try_from(upstream.len()).map_err(|_| TaskIdError::LongUpstream(upstream.len()))?;
        let mut nonce = [0u8; NONCE];
        getrandom::fill(&mut nonce).map_err(|e| TaskIdError::Random(e.to_string()))?;
        let mut body = Vec::with_capacity(2 + upstream.len() + task_id.len());
        body.extend_from_slice(&upstream_len.to_be_bytes());
        body.extend_from_slice(upstream.as_bytes());
        body.extend_from_slice(task_id.as_bytes());
        let aad = associated_data(caller);
        let sealed = self
            .cipher
            .encrypt(
                XNonce::from_slice(&nonce),
                Payload {
                    msg: &body,
                    aad: &aad,
                },
            )
            .map_err(|_| TaskIdError::Random("the AEAD refused the plaintext".to_owned()))?;
        let mut raw = Vec::with_capacity(NONCE + sealed.len());
        raw.extend_from_slice(&nonce);
        raw.extend_from_slice(&sealed);
        Ok(format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(raw)))
    }

    /// Whether `id` has the shape of a proxy task id (says nothing about its validity).
    ///
    /// ```
    /// assert!(!ferrymcp_proxy::task_ids::TaskIdSigner::looks_like("local-task-1"));
    /// ```
    pub fn looks_like(id: &str) -> bool {
        id.starts_with(PREFIX)
    }

    /// The upstream and upstream task id behind `id`, if this signer minted it for `caller`.
    ///
    /// ```
    /// let signer = ferrymcp_proxy::task_ids::TaskIdSigner::random().unwrap();
    /// assert_eq!(signer.open("mcpx2.AAAA", ""), None);
    /// ```
    pub fn open(&self, id: &str, caller: &str) -> Option<(String, String)> {
        let raw = URL_SAFE_NO_PAD.decode(id.strip_prefix(PREFIX)?).ok()?;
        if raw.len() < NONCE + 2 + TAG {
            return None;
        }
        let (nonce, sealed) = raw.split_at(NONCE);
        let aad = associated_data(caller);
        let body = self
            .cipher
            .decrypt(
                XNonce::from_slice(nonce),
                Payload {
                    msg: sealed,
                    aad: &aad,
                },
            )
            .ok()?;
        let (len, rest) = body.split_at_checked(2)?;
        let len = usize::from(u16::from_be_bytes([len[0], len[1]]));
        let (upstream, task) = rest.split_at_checked(len)?;
        Some((
            String::from_utf8(upstream.to_vec()).ok()?,
            String::from_utf8(task.to_vec()).ok()?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_altered_byte_is_refused() {
        let signer = TaskIdSigner::new(b"0123456789abcdef0123").unwrap();
        let id = signer
            .mint(
                "upstream",
                "a-long-upstream-task-id-spanning-several-cipher-blocks-of-chacha",
                "c",
            )
            .unwrap();
        let raw = URL_SAFE_NO_PAD.decode(&id[PREFIX.len()..]).unwrap();
        for i in 0..raw.len() {
            let mut forged = raw.clone();
            forged[i] ^= 1;
            let forged = format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(forged));
            assert_eq!(signer.open(&forged, "c"), None, "byte {i}");
        }
        assert_eq!(
            signer.open(&id, "c").unwrap().1,
            "a-long-upstream-task-id-spanning-several-cipher-blocks-of-chacha"
        );
    }

    #[test]
    fn ids_are_not_repeated_and_need_the_same_key() {
        let a = TaskIdSigner::new(b"0123456789abcdef").unwrap();
        let b = TaskIdSigner::new(b"0123456789abcdeF").unwrap();
        let one = a.mint("u", "t", "").unwrap();
        assert_ne!(one, a.mint("u", "t", "").unwrap());
        assert_eq!(b.open(&one, ""), None);
        assert_eq!(a.open("not-a-proxy-id", ""), None);
        assert_eq!(a.open("mcpx2.!!!", ""), None);
    }
}
