//! [`Sealer`]: encryption at rest of what a task keeps of its caller (the principal in its
//! [`TaskSnapshot`](crate::TaskSnapshot)), with ChaCha20-Poly1305 (an AEAD: a ciphertext
//! that was altered, moved to another task or sealed under another key does not open).
//!
//! A sealed value is `sealed:v1:` followed by base64url of a random 96-bit nonce and the
//! ciphertext with its tag. The task id is the associated data, so a sealed context copied
//! onto another task does not open there. A worker that cannot open a task's context fails
//! the task; it never runs it without its caller (R55).

use base64::Engine as _;
use chacha20poly1305::{
    ChaCha20Poly1305, Key, KeyInit, Nonce,
    aead::{Aead, Payload},
};

/// What every sealed value starts with.
///
/// ```
/// let sealed = mcp_tasks::sealing::Sealer::new(&[0; 32]).seal(b"{}", "t");
/// assert!(sealed.starts_with(mcp_tasks::sealing::SEALED_PREFIX));
/// ```
pub const SEALED_PREFIX: &str = "sealed:v1:";

const NONCE_LEN: usize = 12;

/// Why a key could not be read or a value could not be opened.
///
/// ```
/// use mcp_tasks::sealing::{SealError, open_stored};
/// assert!(matches!(open_stored(None, "sealed:v1:AAAA", "t"), Err(SealError::NoKey)));
/// ```
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    /// The configured key is not 32 bytes of base64.
    #[error("the credentials key must be 32 bytes, base64-encoded: {0}")]
    BadKey(String),
    /// The value was sealed, but no key is configured here.
    #[error(
        "the task's stored credentials are encrypted and this process has no key (set MCP_TASKS_CREDENTIALS_KEY)"
    )]
    NoKey,
    /// The value does not open under this key and task (wrong key, altered or moved).
    #[error("the task's stored credentials could not be decrypted with this process's key")]
    Undecryptable,
}

/// A ChaCha20-Poly1305 key for sealing stored request contexts. Cheap to clone.
///
/// ```
/// use mcp_tasks::sealing::Sealer;
/// let sealer = Sealer::new(&[42; 32]);
/// let sealed = sealer.seal(b"{\"principal\":\"alice\"}", "task-1");
/// assert!(sealed.starts_with("sealed:v1:"));
/// assert_eq!(sealer.open(&sealed, "task-1").unwrap(), b"{\"principal\":\"alice\"}");
/// assert!(sealer.open(&sealed, "task-2").is_err(), "bound to its task");
/// assert!(Sealer::new(&[1; 32]).open(&sealed, "task-1").is_err(), "and to its key");
/// ```
#[derive(Clone)]
pub struct Sealer {
    cipher: ChaCha20Poly1305,
    tag_key: [u8; 32],
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealer(..)")
    }
}

impl Sealer {
    /// A sealer with a 256-bit key.
    ///
    /// ```
    /// let _ = mcp_tasks::sealing::Sealer::new(&[0; 32]);
    /// ```
    pub fn new(key: &[u8; 32]) -> Self {
        Self {
            cipher: ChaCha20Poly1305::new(Key::from_slice(key)),
            tag_key: *key,
        }
    }

    /// A sealer from a base64 (standard or URL-safe, padded or not) 32-byte key, as
    /// `MCP_TASKS_CREDENTIALS_KEY` holds it.
    ///
    /// ```
    /// use mcp_tasks::sealing::Sealer;
    /// assert!(Sealer::from_base64("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=").is_ok());
    /// assert!(Sealer::from_base64("too short").is_err());
    /// ```
    pub fn from_base64(encoded: &str) -> Result<Self, SealError> {
        use base64::engine::general_purpose::{
            STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD,
        };
        let encoded = encoded.trim();
        let bytes = [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD]
            .iter()
            .find_map(|engine| engine.decode(encoded).ok())
            .ok_or_else(|| SealError::BadKey("not base64".to_owned()))?;
        let key: [u8; 32] = bytes
            .try_into()
            .map_err(|bytes: Vec<u8>| SealError::BadKey(format!("{} bytes", bytes.len())))?;
        Ok(Self::new(&key))
    }

    /// Seals `plaintext` for task `task` (a fresh random nonce each time).
    ///
    /// ```
    /// let sealer = mcp_tasks::sealing::Sealer::new(&[0; 32]);
    /// assert_ne!(sealer.seal(b"x", "t"), sealer.seal(b"x", "t"));
    /// ```
    pub fn seal(&self, plaintext: &[u8], task: &str) -> String {
        let mut nonce = [0u8; NONCE_LEN];
        if let Err(error) = getrandom::fill(&mut nonce) {
            panic!("the operating system's random number generator failed: {error}");
        }
        let payload = Payload {
            msg: plaintext,
            aad: task.as_bytes(),
        };
        // Encryption fails only for messages beyond ChaCha20's 256 GiB limit.
        let sealed = self
            .cipher
            .encrypt(Nonce::from_slice(&nonce), payload)
            .unwrap_or_default();
        let mut bytes = Vec::with_capacity(NONCE_LEN + sealed.len());
        bytes.extend_from_slice(&nonce);
        bytes.extend_from_slice(&sealed);
        format!(
            "{SEALED_PREFIX}{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
        )
    }

    /// Opens a value [`seal`](Self::seal)ed for task `task`.
    ///
    /// ```
    /// let sealer = mcp_tasks::sealing::Sealer::new(&[0; 32]);
    /// let sealed = sealer.seal(b"x", "t");
    /// assert_eq!(sealer.open(&sealed, "t").unwrap(), b"x");
    /// assert!(sealer.open("sealed:v1:AAAA", "t").is_err());
    /// ```
    pub fn open(&self, sealed: &str, task: &str) -> Result<Vec<u8>, SealError> {
        let body = sealed
            .strip_prefix(SEALED_PREFIX)
            .ok_or(SealError::Undecryptable)?;
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|_| SealError::Undecryptable)?;
        if bytes.len() < NONCE_LEN {
            return Err(SealError::Undecryptable);
        }
        let (nonce, ciphertext) = bytes.split_at(NONCE_LEN);
        let payload = Payload {
            msg: ciphertext,
            aad: task.as_bytes(),
        };
        self.cipher
            .decrypt(Nonce::from_slice(nonce), payload)
            .map_err(|_| SealError::Undecryptable)
    }
}

impl Sealer {
    /// A keyed tag of `text` (HMAC-SHA-256 under this sealer's current key, hex): how an
    /// owner or caller is named at rest when a key is configured, so Redis never holds it
    /// in plaintext.
    ///
    /// ```
    /// let sealer = mcp_tasks::sealing::Sealer::new(&[0; 32]);
    /// assert_eq!(sealer.tag("auth:app"), sealer.tag("auth:app"));
    /// assert_ne!(sealer.tag("auth:app"), mcp_tasks::sealing::Sealer::new(&[1; 32]).tag("auth:app"));
    /// ```
    pub fn tag(&self, text: &str) -> String {
        use hmac::{KeyInit as _, Mac as _};
        let mut mac = <hmac::Hmac<sha2::Sha256>>::new_from_slice(&self.tag_key)
            .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
        mac.update(text.as_bytes());
        hex(&mac.finalize().into_bytes())
    }
}

/// An unkeyed tag of `text` (SHA-256, hex): how an owner or caller is named at rest when no
/// key is configured.
///
/// ```
/// assert_eq!(mcp_tasks::sealing::plain_tag("anon").len(), 64);
/// ```
pub fn plain_tag(text: &str) -> String {
    use sha2::Digest as _;
    hex(&sha2::Sha256::digest(text.as_bytes()))
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut out, b| {
            let _ = write!(out, "{b:02x}");
            out
        })
}

/// Opens a stored context: sealed values need `sealer`; plain ones are returned as they are.
///
/// ```
/// use mcp_tasks::sealing::{Sealer, open_stored};
/// assert_eq!(open_stored(None, "{}", "t").unwrap(), "{}");
/// let sealed = Sealer::new(&[3; 32]).seal(b"{}", "t");
/// assert!(open_stored(None, &sealed, "t").is_err(), "no key: refuse, never run anonymously");
/// ```
pub fn open_stored(sealer: Option<&Sealer>, stored: &str, task: &str) -> Result<String, SealError> {
    if !stored.starts_with(SEALED_PREFIX) {
        return Ok(stored.to_owned());
    }
    let sealer = sealer.ok_or(SealError::NoKey)?;
    let plain = sealer.open(stored, task)?;
    String::from_utf8(plain).map_err(|_| SealError::Undecryptable)
}
