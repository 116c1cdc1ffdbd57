//! Proxy task ids: signed, encrypted, opaque handles on an upstream's task.
//!
//! A proxy task id names the upstream, the upstream's task id and the caller, and shows none of
//! them: the upstream name and task id are encrypted (an HMAC-SHA256 keystream with a random
//! nonce), and the whole id, caller included, is authenticated with HMAC-SHA256
//! (encrypt-then-MAC, 128-bit tag). A forged, altered or foreign id (another caller's, or
//! another proxy key's) does not open. The key is configured ([`TaskIdSigner::new`], the same
//! on every replica behind one endpoint) or random per process ([`TaskIdSigner::random`]).
//!
//! Layout: `mcpx1.` + base64url(nonce[16] ‖ ciphertext ‖ tag[16]), where the plaintext is
//! `len(upstream) as u16 ‖ upstream ‖ upstream task id`.

use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use hmac::{Hmac, Mac as _};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// The prefix of every proxy task id.
pub const PREFIX: &str = "mcpx1.";
const NONCE: usize = 16;
const TAG: usize = 16;

/// Mints and opens proxy task ids.
///
/// ```
/// use mcp_proxy::task_ids::TaskIdSigner;
/// let signer = TaskIdSigner::new(b"a key shared by the gateway replicas").unwrap();
/// let id = signer.mint("github", "task-42", "alice");
/// assert!(!id.contains("github") && !id.contains("task-42") && !id.contains("alice"));
/// assert_eq!(signer.open(&id, "alice"), Some(("github".to_owned(), "task-42".to_owned())));
/// assert_eq!(signer.open(&id, "mallory"), None);
/// ```
#[derive(Clone)]
pub struct TaskIdSigner {
    enc: [u8; 32],
    mac: [u8; 32],
}

impl std::fmt::Debug for TaskIdSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TaskIdSigner(<key>)")
    }
}

/// Errors of [`TaskIdSigner`] construction.
///
/// ```
/// assert!(mcp_proxy::task_ids::TaskIdSigner::new(b"short").is_err());
/// ```
#[derive(Debug, thiserror::Error)]
pub enum TaskIdError {
    /// The key is shorter than 16 bytes.
    #[error("a task id key needs at least 16 bytes, got {0}")]
    ShortKey(usize),
    /// The system random source failed.
    #[error("no random bytes for the task id key: {0}")]
    Random(String),
}

fn hmac(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    // HMAC accepts keys of any length; this cannot fail.
    let mut mac = <HmacSha256 as hmac::KeyInit>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

impl TaskIdSigner {
    /// A signer with a configured key (at least 16 bytes; replicas share it).
    ///
    /// ```
    /// let _ = mcp_proxy::task_ids::TaskIdSigner::new(b"0123456789abcdef").unwrap();
    /// ```
    pub fn new(key: &[u8]) -> Result<Self, TaskIdError> {
        if key.len() < 16 {
            return Err(TaskIdError::ShortKey(key.len()));
        }
        Ok(Self {
            enc: hmac(key, &[b"mcpkit proxy task id: encryption"]),
            mac: hmac(key, &[b"mcpkit proxy task id: authentication"]),
        })
    }

    /// A signer with a random key: ids stay valid for this process only.
    ///
    /// ```
    /// let a = mcp_proxy::task_ids::TaskIdSigner::random().unwrap();
    /// let b = mcp_proxy::task_ids::TaskIdSigner::random().unwrap();
    /// assert_eq!(b.open(&a.mint("u", "t", ""), ""), None);
    /// ```
    pub fn random() -> Result<Self, TaskIdError> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).map_err(|e| TaskIdError::Random(e.to_string()))?;
        Self::new(&key)
    }

    fn keystream_xor(&self, nonce: &[u8], data: &mut [u8]) {
        for (block, chunk) in data.chunks_mut(32).enumerate() {
            let counter = u64::try_from(block).unwrap_or(u64::MAX).to_be_bytes();
            let stream = hmac(&self.enc, &[nonce, &counter]);
            for (byte, key) in chunk.iter_mut().zip(stream) {
                *byte ^= key;
            }
        }
    }

    fn tag(&self, nonce: &[u8], ciphertext: &[u8], caller: &str) -> [u8; 32] {
        let caller_len = u64::try_from(caller.len())
            .unwrap_or(u64::MAX)
            .to_be_bytes();
        hmac(
            &self.mac,
            &[
                PREFIX.as_bytes(),
                nonce,
                ciphertext,
                &caller_len,
                caller.as_bytes(),
            ],
        )
    }

    /// The proxy id of `upstream`'s task `task_id`, for `caller` (a principal's scope key;
    /// empty for anonymous callers).
    ///
    /// ```
    /// let signer = mcp_proxy::task_ids::TaskIdSigner::random().unwrap();
    /// assert!(signer.mint("u", "t", "").starts_with(mcp_proxy::task_ids::PREFIX));
    /// ```
    pub fn mint(&self, upstream: &str, task_id: &str, caller: &str) -> String {
        let mut nonce = [0u8; NONCE];
        if getrandom::fill(&mut nonce).is_err() {
            // Without randomness the nonce is derived from the content: ids are then
            // deterministic per (upstream, task), which leaks equality but stays sound.
            nonce.copy_from_slice(
                &hmac(&self.mac, &[upstream.as_bytes(), task_id.as_bytes()])[..NONCE],
            );
        }
        let upstream_len = u16::try_from(upstream.len()).unwrap_or(u16::MAX);
        let upstream = &upstream.as_bytes()[..usize::from(upstream_len)];
        let mut body = Vec::with_capacity(2 + upstream.len() + task_id.len());
        body.extend_from_slice(&upstream_len.to_be_bytes());
        body.extend_from_slice(upstream);
        body.extend_from_slice(task_id.as_bytes());
        self.keystream_xor(&nonce, &mut body);
        let tag = self.tag(&nonce, &body, caller);
        let mut raw = Vec::with_capacity(NONCE + body.len() + TAG);
        raw.extend_from_slice(&nonce);
        raw.extend_from_slice(&body);
        raw.extend_from_slice(&tag[..TAG]);
        format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(raw))
    }

    /// Whether `id` has the shape of a proxy task id (says nothing about its validity).
    ///
    /// ```
    /// assert!(!mcp_proxy::task_ids::TaskIdSigner::looks_like("local-task-1"));
    /// ```
    pub fn looks_like(id: &str) -> bool {
        id.starts_with(PREFIX)
    }

    /// The upstream and upstream task id behind `id`, if this signer minted it for `caller`.
    ///
    /// ```
    /// let signer = mcp_proxy::task_ids::TaskIdSigner::random().unwrap();
    /// assert_eq!(signer.open("mcpx1.AAAA", ""), None);
    /// ```
    pub fn open(&self, id: &str, caller: &str) -> Option<(String, String)> {
        let raw = URL_SAFE_NO_PAD.decode(id.strip_prefix(PREFIX)?).ok()?;
        if raw.len() < NONCE + 2 + TAG {
            return None;
        }
        let (nonce, rest) = raw.split_at(NONCE);
        let (body, tag) = rest.split_at(rest.len() - TAG);
        let caller_len = u64::try_from(caller.len())
            .unwrap_or(u64::MAX)
            .to_be_bytes();
        let mut mac = <HmacSha256 as hmac::KeyInit>::new_from_slice(&self.mac).ok()?;
        for part in [
            PREFIX.as_bytes(),
            nonce,
            body,
            &caller_len,
            caller.as_bytes(),
        ] {
            mac.update(part);
        }
        mac.verify_truncated_left(tag).ok()?;
        let mut body = body.to_vec();
        self.keystream_xor(nonce, &mut body);
        let (len, rest) = body.split_at(2);
        let len = usize::from(u16::from_be_bytes([len[0], len[1]]));
        if rest.len() < len {
            return None;
        }
        let (upstream, task) = rest.split_at(len);
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
        let id = signer.mint(
            "upstream",
            "a-long-upstream-task-id-that-spans-two-blocks-of-keystream",
            "c",
        );
        let raw = URL_SAFE_NO_PAD.decode(&id[PREFIX.len()..]).unwrap();
        for i in 0..raw.len() {
            let mut forged = raw.clone();
            forged[i] ^= 1;
            let forged = format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(forged));
            assert_eq!(signer.open(&forged, "c"), None, "byte {i}");
        }
        assert_eq!(
            signer.open(&id, "c").unwrap().1,
            "a-long-upstream-task-id-that-spans-two-blocks-of-keystream"
        );
    }

    #[test]
    fn ids_are_not_repeated_and_need_the_same_key() {
        let a = TaskIdSigner::new(b"0123456789abcdef").unwrap();
        let b = TaskIdSigner::new(b"0123456789abcdeF").unwrap();
        let one = a.mint("u", "t", "");
        assert_ne!(one, a.mint("u", "t", ""));
        assert_eq!(b.open(&one, ""), None);
        assert_eq!(a.open("not-a-proxy-id", ""), None);
        assert_eq!(a.open("mcpx1.!!!", ""), None);
    }
}
