//! [`Sealer`]: encryption at rest of what a task keeps of its caller (the principal in its
//! [`TaskSnapshot`](crate::TaskSnapshot)), and keyed tags naming owners at rest.
//!
//! A sealed value is `sealed:v2:<key id>:` followed by base64url of a random 192-bit nonce
//! and the XChaCha20-Poly1305 ciphertext with its tag. The associated data binds the value
//! to its task, the task's stored owner, tool, version and a SHA-256 digest of its stored
//! arguments (a [`Binding`]): a sealed context copied onto another task, or left under a
//! task whose tool or arguments were swapped, does not open. A worker that cannot open a
//! task's context fails the task; it never runs it without its caller. With a key
//! configured, a context that is not sealed at all fails the same way.
//!
//! A sealer holds a current key and any number of older ones (a rotation: configure
//! `MCP_TASKS_CREDENTIALS_KEY=new,old`). The current key seals and tags; every key opens,
//! and [`Sealer::tags`] lists an owner's tag under each key, so tasks created before the
//! rotation stay readable and findable until they expire. Each key is used only through
//! subkeys derived from it with HMAC-SHA-256 under distinct labels: one encrypts, one tags,
//! one names the key (the key id in sealed values and tags, which reveals nothing of it).

use std::sync::Arc;

use base64::Engine as _;
use chacha20poly1305::{
    Key, KeyInit, XChaCha20Poly1305, XNonce,
    aead::{Aead, Payload},
};

/// What every sealed value starts with (the current format).
///
/// ```
/// use ferrymcp_tasks::sealing::{Binding, SEALED_PREFIX, Sealer};
/// let binding = Binding { task: "t", owner: "o", tool: "echo", version: None, arguments: "{}" };
/// let sealed = Sealer::new(&[0; 32]).seal(b"{}", &binding);
/// assert!(sealed.starts_with(SEALED_PREFIX));
/// ```
pub const SEALED_PREFIX: &str = "sealed:v2:";

/// What marks a value as sealed, in any format.
const SEALED_MARK: &str = "sealed:";

/// The length of a nonce, in bytes (192 bits: random nonces never collide in practice).
pub const NONCE_LEN: usize = 24;

/// How many hex digits of a key id there are.
const KEY_ID_LEN: usize = 8;

const ENCRYPTION_LABEL: &[u8] = b"mcpkit tasks sealing v2: context encryption key";
const TAG_LABEL: &[u8] = b"mcpkit tasks sealing v2: owner tag key";
const KEY_ID_LABEL: &[u8] = b"mcpkit tasks sealing v2: key id";
const AAD_LABEL: &[u8] = b"mcpkit tasks sealed context v2";

/// Why a key could not be read or a value could not be opened.
///
/// ```
/// use ferrymcp_tasks::sealing::{Binding, SealError, open_stored};
/// let binding = Binding { task: "t", owner: "o", tool: "echo", version: None, arguments: "{}" };
/// assert!(matches!(open_stored(None, "sealed:v2:00000000:AAAA", &binding), Err(SealError::NoKey)));
/// ```
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    /// A configured key is not 32 bytes of base64 (what is wrong, never the key).
    #[error("the credentials key must be 32 bytes, base64-encoded: {0}")]
    BadKey(String),
    /// The value was sealed, but no key is configured here.
    #[error(
        "the task's stored credentials are encrypted and this process has no key (set MCP_TASKS_CREDENTIALS_KEY)"
    )]
    NoKey,
    /// A key is configured, but the stored value is not sealed: it was not written by a
    /// process with the key, so it is not trusted.
    #[error(
        "the task's stored credentials are not encrypted, but this process requires them to be (MCP_TASKS_CREDENTIALS_KEY is set)"
    )]
    Unsealed,
    /// The value is sealed in a format this version does not read.
    #[error("the task's stored credentials are sealed in a format this process does not read")]
    UnknownFormat,
    /// The value was sealed under a key this process does not have.
    #[error(
        "the task's stored credentials were sealed under a key this process does not have (key id {0})"
    )]
    UnknownKey(String),
    /// The value does not open under its key and binding (altered, moved, or its task's
    /// tool, arguments or owner changed).
    #[error("the task's stored credentials could not be decrypted with this process's key")]
    Undecryptable,
}

/// What a sealed context is bound to: its task and the task's stored fields. Opening
/// succeeds only with the binding it was sealed with.
///
/// ```
/// use ferrymcp_tasks::sealing::{Binding, Sealer};
/// let sealer = Sealer::new(&[1; 32]);
/// let binding = Binding { task: "t", owner: "o", tool: "echo", version: Some("1.0"), arguments: "{\"a\":1}" };
/// let sealed = sealer.seal(b"{}", &binding);
/// let swapped = Binding { arguments: "{\"a\":2}", ..binding };
/// assert!(sealer.open(&sealed, &swapped).is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Binding<'a> {
    /// The task id.
    pub task: &'a str,
    /// The owner as stored (its tag).
    pub owner: &'a str,
    /// The tool's name.
    pub tool: &'a str,
    /// The tool's version, if the task names one.
    pub version: Option<&'a str>,
    /// The arguments as stored (JSON text); the binding holds its SHA-256 digest.
    pub arguments: &'a str,
}

impl Binding<'_> {
    /// The associated data: every field length-prefixed, so no two bindings encode alike.
    fn associated_data(&self) -> Vec<u8> {
        use sha2::Digest as _;
        let mut out = Vec::with_capacity(128);
        out.extend_from_slice(AAD_LABEL);
        for part in [self.task, self.owner, self.tool] {
            push_field(&mut out, part.as_bytes());
        }
        match self.version {
            None => out.push(0),
            Some(version) => {
                out.push(1);
                push_field(&mut out, version.as_bytes());
            }
        }
        out.extend_from_slice(&sha2::Sha256::digest(self.arguments.as_bytes()));
        out
    }
}

fn push_field(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u64).to_be_bytes());
    out.extend_from_slice(bytes);
}

/// HMAC-SHA-256 of `message` under `key`.
fn hmac(key: &[u8], message: &[u8]) -> [u8; 32] {
    use hmac::{KeyInit as _, Mac as _};
    let mut mac = <hmac::Hmac<sha2::Sha256>>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
    mac.update(message);
    mac.finalize().into_bytes().into()
}

/// One configured key, as the subkeys derived from it.
#[derive(Clone)]
struct SealKey {
    id: String,
    cipher: XChaCha20Poly1305,
    tag_key: [u8; 32],
}

impl SealKey {
    fn derive(key: &[u8; 32]) -> Self {
        let encryption = hmac(key, ENCRYPTION_LABEL);
        let mut id = hex(&hmac(key, KEY_ID_LABEL));
        id.truncate(KEY_ID_LEN);
        Self {
            id,
            cipher: XChaCha20Poly1305::new(Key::from_slice(&encryption)),
            tag_key: hmac(key, TAG_LABEL),
        }
    }

    fn tag(&self, text: &str) -> String {
        format!("{}.{}", self.id, hex(&hmac(&self.tag_key, text.as_bytes())))
    }
}

/// The keys sealing stored request contexts and tagging owners: a current key, which seals
/// and tags, and older keys, which still open and find what they sealed. Cheap to clone.
///
/// ```
/// use ferrymcp_tasks::sealing::{Binding, Sealer};
/// let sealer = Sealer::new(&[42; 32]);
/// let binding = Binding { task: "task-1", owner: "o", tool: "echo", version: None, arguments: "{}" };
/// let sealed = sealer.seal(b"{\"principal\":\"alice\"}", &binding);
/// assert!(sealed.starts_with(&format!("sealed:v2:{}:", sealer.key_id())));
/// assert_eq!(sealer.open(&sealed, &binding).unwrap(), b"{\"principal\":\"alice\"}");
/// let elsewhere = Binding { task: "task-2", ..binding };
/// assert!(sealer.open(&sealed, &elsewhere).is_err(), "bound to its task");
/// assert!(Sealer::new(&[1; 32]).open(&sealed, &binding).is_err(), "and to its key");
/// ```
#[derive(Clone)]
pub struct Sealer {
    /// The current key first, then older keys, newest first.
    keys: Arc<[SealKey]>,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Key ids reveal nothing of the keys.
        let ids: Vec<&str> = self.keys.iter().map(|key| key.id.as_str()).collect();
        f.debug_struct("Sealer").field("key_ids", &ids).finish()
    }
}

impl Sealer {
    /// A sealer with one 256-bit key.
    ///
    /// ```
    /// let _ = ferrymcp_tasks::sealing::Sealer::new(&[0; 32]);
    /// ```
    pub fn new(key: &[u8; 32]) -> Self {
        Self {
            keys: Arc::from(vec![SealKey::derive(key)]),
        }
    }

    /// Adds an older key: it no longer seals or tags, but still opens what it sealed and
    /// finds the tasks it tagged. Keys added later are tried later.
    ///
    /// ```
    /// use ferrymcp_tasks::sealing::{Binding, Sealer};
    /// let binding = Binding { task: "t", owner: "o", tool: "echo", version: None, arguments: "{}" };
    /// let before = Sealer::new(&[1; 32]).seal(b"x", &binding);
    /// let rotated = Sealer::new(&[2; 32]).with_older_key(&[1; 32]);
    /// assert_eq!(rotated.open(&before, &binding).unwrap(), b"x");
    /// assert_eq!(rotated.key_id(), Sealer::new(&[2; 32]).key_id(), "the new key seals");
    /// ```
    pub fn with_older_key(self, key: &[u8; 32]) -> Self {
        let mut keys = self.keys.to_vec();
        keys.push(SealKey::derive(key));
        Self {
            keys: Arc::from(keys),
        }
    }

    /// A sealer from a comma-separated list of base64 (standard or URL-safe, padded or not)
    /// 32-byte keys, as `MCP_TASKS_CREDENTIALS_KEY` holds it: the first key is current, the
    /// others are older keys still accepted.
    ///
    /// ```
    /// use ferrymcp_tasks::sealing::Sealer;
    /// let zero = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
    /// let one = "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE";
    /// assert!(Sealer::from_base64(zero).is_ok());
    /// let rotated = Sealer::from_base64(&format!("{one}, {zero}")).unwrap();
    /// assert_eq!(rotated.key_id(), Sealer::new(&[1; 32]).key_id());
    /// assert!(Sealer::from_base64("too short").is_err());
    /// assert!(Sealer::from_base64("").is_err());
    /// ```
    pub fn from_base64(encoded: &str) -> Result<Self, SealError> {
        let parts: Vec<&str> = encoded.split(',').map(str::trim).collect();
        let count = parts.len();
        let mut keys = Vec::with_capacity(count);
        for (at, part) in parts.into_iter().enumerate() {
            let key = decode_key(part).map_err(|why| {
                SealError::BadKey(if count > 1 {
                    format!("key {} of {count}: {why}", at + 1)
                } else {
                    why
                })
            })?;
            keys.push(SealKey::derive(&key));
        }
        Ok(Self {
            keys: Arc::from(keys),
        })
    }

    /// The id of the current key, as sealed values and tags name it (derived from the key
    /// by HMAC; it reveals nothing of it).
    ///
    /// ```
    /// use ferrymcp_tasks::sealing::Sealer;
    /// assert_eq!(Sealer::new(&[0; 32]).key_id().len(), 8);
    /// assert_ne!(Sealer::new(&[0; 32]).key_id(), Sealer::new(&[1; 32]).key_id());
    /// ```
    pub fn key_id(&self) -> &str {
        &self.current().id
    }

    fn current(&self) -> &SealKey {
        // Every constructor makes at least one key.
        &self.keys[0]
    }

    /// Seals `plaintext` under the current key for `binding` (a fresh random nonce each
    /// time).
    ///
    /// ```
    /// use ferrymcp_tasks::sealing::{Binding, Sealer};
    /// let sealer = Sealer::new(&[0; 32]);
    /// let binding = Binding { task: "t", owner: "o", tool: "echo", version: None, arguments: "{}" };
    /// assert_ne!(sealer.seal(b"x", &binding), sealer.seal(b"x", &binding));
    /// ```
    pub fn seal(&self, plaintext: &[u8], binding: &Binding<'_>) -> String {
        let key = self.current();
        let mut nonce = [0u8; NONCE_LEN];
        if let Err(error) = getrandom::fill(&mut nonce) {
            panic!("the operating system's random number generator failed: {error}");
        }
        let aad = binding.associated_data();
        let payload = Payload {
            msg: plaintext,
            aad: &aad,
        };
        // Encryption fails only for messages beyond ChaCha20's 256 GiB limit.
        let sealed = key
            .cipher
            .encrypt(XNonce::from_slice(&nonce), payload)
            .unwrap_or_default();
        let mut bytes = Vec::with_capacity(NONCE_LEN + sealed.len());
        bytes.extend_from_slice(&nonce);
        bytes.extend_from_slice(&sealed);
        format!(
            "{SEALED_PREFIX}{}:{}",
            key.id,
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
        )
    }

    /// Opens a value [`seal`](Self::seal)ed for `binding`, under whichever of this
    /// sealer's keys sealed it.
    ///
    /// ```
    /// use ferrymcp_tasks::sealing::{Binding, Sealer};
    /// let sealer = Sealer::new(&[0; 32]);
    /// let binding = Binding { task: "t", owner: "o", tool: "echo", version: None, arguments: "{}" };
    /// let sealed = sealer.seal(b"x", &binding);
    /// assert_eq!(sealer.open(&sealed, &binding).unwrap(), b"x");
    /// assert!(sealer.open("sealed:v2:00000000:AAAA", &binding).is_err());
    /// ```
    pub fn open(&self, sealed: &str, binding: &Binding<'_>) -> Result<Vec<u8>, SealError> {
        let rest = sealed
            .strip_prefix(SEALED_MARK)
            .ok_or(SealError::Unsealed)?;
        let rest = rest
            .strip_prefix(&SEALED_PREFIX[SEALED_MARK.len()..])
            .ok_or(SealError::UnknownFormat)?;
        let (id, body) = rest.split_once(':').ok_or(SealError::Undecryptable)?;
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|_| SealError::Undecryptable)?;
        if bytes.len() < NONCE_LEN {
            return Err(SealError::Undecryptable);
        }
        let (nonce, ciphertext) = bytes.split_at(NONCE_LEN);
        let aad = binding.associated_data();
        let mut known = false;
        // Two keys may share an id (it is short): try each that has it.
        for key in self.keys.iter().filter(|key| key.id == id) {
            known = true;
            let payload = Payload {
                msg: ciphertext,
                aad: &aad,
            };
            if let Ok(plain) = key.cipher.decrypt(XNonce::from_slice(nonce), payload) {
                return Ok(plain);
            }
        }
        if known {
            Err(SealError::Undecryptable)
        } else {
            // A key id is at most a short run of hex digits; anything else is shown cut.
            let shown: String = id.chars().take(KEY_ID_LEN).collect();
            Err(SealError::UnknownKey(shown))
        }
    }

    /// A keyed tag of `text` under the current key: `<key id>.<hex HMAC-SHA-256>`. How an
    /// owner or caller is named at rest when a key is configured, so the store never holds
    /// it in plaintext. Tags are made of `0-9`, `a-f` and `.` only.
    ///
    /// ```
    /// use ferrymcp_tasks::sealing::Sealer;
    /// let sealer = Sealer::new(&[0; 32]);
    /// assert_eq!(sealer.tag("auth:app"), sealer.tag("auth:app"));
    /// assert!(sealer.tag("auth:app").starts_with(&format!("{}.", sealer.key_id())));
    /// assert_ne!(sealer.tag("auth:app"), Sealer::new(&[1; 32]).tag("auth:app"));
    /// ```
    pub fn tag(&self, text: &str) -> String {
        self.current().tag(text)
    }

    /// The tags of `text` under every key, the current key's first: what a lookup matches
    /// so that tasks tagged before a rotation are still found.
    ///
    /// ```
    /// use ferrymcp_tasks::sealing::Sealer;
    /// let old = Sealer::new(&[1; 32]);
    /// let rotated = Sealer::new(&[2; 32]).with_older_key(&[1; 32]);
    /// let tags = rotated.tags("anon");
    /// assert_eq!(tags, vec![rotated.tag("anon"), old.tag("anon")]);
    /// ```
    pub fn tags(&self, text: &str) -> Vec<String> {
        self.keys.iter().map(|key| key.tag(text)).collect()
    }
}

/// One base64 key of 32 bytes; what is wrong with it otherwise (never the key itself).
fn decode_key(encoded: &str) -> Result<[u8; 32], String> {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    if encoded.is_empty() {
        return Err("empty".to_owned());
    }
    let bytes = [STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD]
        .iter()
        .find_map(|engine| engine.decode(encoded).ok())
        .ok_or_else(|| "not base64".to_owned())?;
    bytes
        .try_into()
        .map_err(|bytes: Vec<u8>| format!("{} bytes", bytes.len()))
}

/// An unkeyed tag of `text` (SHA-256, hex): how an owner or caller is named at rest when no
/// key is configured.
///
/// ```
/// assert_eq!(ferrymcp_tasks::sealing::plain_tag("anon").len(), 64);
/// ```
pub fn plain_tag(text: &str) -> String {
    use sha2::Digest as _;
    hex(&sha2::Sha256::digest(text.as_bytes()))
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

/// Opens a stored context. With a `sealer`, only a value it sealed for `binding` opens; a
/// plain one is refused (it was not written by a process with the key). Without one, a
/// plain value is returned as it is and a sealed one is refused.
///
/// ```
/// use ferrymcp_tasks::sealing::{Binding, SealError, Sealer, open_stored};
/// let binding = Binding { task: "t", owner: "o", tool: "echo", version: None, arguments: "{}" };
/// assert_eq!(open_stored(None, "{}", &binding).unwrap(), "{}");
/// let sealer = Sealer::new(&[3; 32]);
/// let sealed = sealer.seal(b"{}", &binding);
/// assert_eq!(open_stored(Some(&sealer), &sealed, &binding).unwrap(), "{}");
/// assert!(matches!(open_stored(None, &sealed, &binding), Err(SealError::NoKey)), "never run anonymously");
/// assert!(matches!(open_stored(Some(&sealer), "{}", &binding), Err(SealError::Unsealed)));
/// ```
pub fn open_stored(
    sealer: Option<&Sealer>,
    stored: &str,
    binding: &Binding<'_>,
) -> Result<String, SealError> {
    let Some(sealer) = sealer else {
        if stored.starts_with(SEALED_MARK) {
            return Err(SealError::NoKey);
        }
        return Ok(stored.to_owned());
    };
    let plain = sealer.open(stored, binding)?;
    String::from_utf8(plain).map_err(|_| SealError::Undecryptable)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ARGS: &str = "{\"a\":6,\"b\":7}";

    #[test]
    fn a_plain_tag_is_the_lowercase_hex_sha256() {
        assert_eq!(
            plain_tag("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    fn binding() -> Binding<'static> {
        Binding {
            task: "task-1",
            owner: "0a1b2c3d.ff",
            tool: "multiply",
            version: Some("1.0.0"),
            arguments: ARGS,
        }
    }

    fn body(sealed: &str) -> Vec<u8> {
        let (_, body) = sealed
            .strip_prefix(SEALED_PREFIX)
            .and_then(|rest| rest.split_once(':'))
            .unwrap_or_else(|| panic!("not a v2 sealed value: {sealed}"));
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(body)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_sealed_value_opens_to_its_plaintext_with_a_24_byte_nonce() {
        let sealer = Sealer::new(&[5; 32]);
        let sealed = sealer.seal(b"hello", &binding());
        assert_eq!(
            sealer.open(&sealed, &binding()).unwrap_or_default(),
            b"hello"
        );
        // nonce, ciphertext (as long as the plaintext), Poly1305 tag.
        assert_eq!(body(&sealed).len(), NONCE_LEN + 5 + 16);
        assert_eq!(NONCE_LEN, 24);
        assert!(sealed.starts_with(&format!("sealed:v2:{}:", sealer.key_id())));
    }

    #[test]
    fn every_bound_field_changes_what_opens() {
        let sealer = Sealer::new(&[5; 32]);
        let sealed = sealer.seal(b"ctx", &binding());
        let others = [
            Binding {
                task: "task-2",
                ..binding()
            },
            Binding {
                owner: "0a1b2c3d.fe",
                ..binding()
            },
            Binding {
                tool: "delete_everything",
                ..binding()
            },
            Binding {
                version: Some("2.0.0"),
                ..binding()
            },
            Binding {
                version: None,
                ..binding()
            },
            Binding {
                arguments: "{\"a\":6,\"b\":8}",
                ..binding()
            },
        ];
        for other in others {
            assert!(
                matches!(sealer.open(&sealed, &other), Err(SealError::Undecryptable)),
                "{other:?}"
            );
        }
    }

    #[test]
    fn fields_are_length_prefixed_so_shifting_bytes_between_them_does_not_open() {
        let sealer = Sealer::new(&[5; 32]);
        let one = Binding {
            task: "ab",
            owner: "c",
            ..binding()
        };
        let shifted = Binding {
            task: "a",
            owner: "bc",
            ..binding()
        };
        assert_ne!(one.associated_data(), shifted.associated_data());
        let sealed = sealer.seal(b"ctx", &one);
        assert!(sealer.open(&sealed, &shifted).is_err());
        let none = Binding {
            version: None,
            ..binding()
        };
        let empty = Binding {
            version: Some(""),
            ..binding()
        };
        assert_ne!(none.associated_data(), empty.associated_data());
    }

    #[test]
    fn an_altered_byte_anywhere_in_the_body_does_not_open() {
        let sealer = Sealer::new(&[5; 32]);
        let sealed = sealer.seal(b"ctx", &binding());
        let (head, _) = sealed.rsplit_once(':').unwrap_or_default();
        let bytes = body(&sealed);
        for at in 0..bytes.len() {
            let mut altered = bytes.clone();
            altered[at] ^= 1;
            let altered = format!(
                "{head}:{}",
                base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(altered)
            );
            assert!(sealer.open(&altered, &binding()).is_err(), "byte {at}");
        }
        assert!(
            sealer.open(&format!("{head}:AAAA"), &binding()).is_err(),
            "too short for a nonce"
        );
    }

    #[test]
    fn after_a_rotation_old_values_open_and_new_ones_carry_the_new_key_id() {
        let old = Sealer::new(&[1; 32]);
        let before = old.seal(b"ctx", &binding());
        let rotated = Sealer::new(&[2; 32]).with_older_key(&[1; 32]);
        assert_eq!(
            rotated.open(&before, &binding()).unwrap_or_default(),
            b"ctx"
        );
        let after = rotated.seal(b"ctx", &binding());
        let new_id = Sealer::new(&[2; 32]).key_id().to_owned();
        assert_ne!(new_id, old.key_id());
        assert!(
            after.starts_with(&format!("sealed:v2:{new_id}:")),
            "{after}"
        );
        assert!(old.open(&after, &binding()).is_err());
        // Once the old key is dropped, its values name the key that is missing.
        let dropped = Sealer::new(&[2; 32]);
        match dropped.open(&before, &binding()) {
            Err(SealError::UnknownKey(id)) => assert_eq!(id, old.key_id()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_raw_key_neither_encrypts_nor_tags() {
        let key = [9; 32];
        let sealer = Sealer::new(&key);
        let sealed = sealer.seal(b"ctx", &binding());
        let bytes = body(&sealed);
        let (nonce, ciphertext) = bytes.split_at(NONCE_LEN);
        let raw = XChaCha20Poly1305::new(Key::from_slice(&key));
        let aad = binding().associated_data();
        let payload = Payload {
            msg: ciphertext,
            aad: &aad,
        };
        assert!(raw.decrypt(XNonce::from_slice(nonce), payload).is_err());
        let tag = sealer.tag("auth:app|alice");
        let (id, mac) = tag.split_once('.').unwrap_or_default();
        assert_eq!(id, sealer.key_id());
        assert_ne!(mac, hex(&hmac(&key, b"auth:app|alice")));
        // The encryption and tag subkeys differ from each other.
        let derived = SealKey::derive(&key);
        assert_ne!(derived.tag_key, hmac(&key, ENCRYPTION_LABEL));
        assert!(!hex(&key).contains(&derived.id));
    }

    #[test]
    fn tags_name_the_current_key_first_and_are_safe_to_pass_as_words() {
        let rotated = Sealer::new(&[2; 32]).with_older_key(&[1; 32]);
        let tags = rotated.tags("auth:app|alice");
        assert_eq!(tags.len(), 2);
        assert_eq!(tags[0], rotated.tag("auth:app|alice"));
        assert_eq!(tags[1], Sealer::new(&[1; 32]).tag("auth:app|alice"));
        for tag in tags.iter().chain([&plain_tag("auth:app|alice")]) {
            assert!(
                tag.chars()
                    .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c) || c == '.'),
                "{tag}"
            );
            assert!(!tag.contains("alice"));
        }
        assert_ne!(rotated.tag("anon"), rotated.tag("auth:anon"));
    }

    #[test]
    fn with_a_key_a_plain_or_old_format_value_is_refused() {
        let sealer = Sealer::new(&[5; 32]);
        assert!(matches!(
            open_stored(Some(&sealer), "{\"principal\":null}", &binding()),
            Err(SealError::Unsealed)
        ));
        assert!(matches!(
            open_stored(Some(&sealer), "sealed:v1:AAAA", &binding()),
            Err(SealError::UnknownFormat)
        ));
        assert!(matches!(
            open_stored(None, "sealed:v1:AAAA", &binding()),
            Err(SealError::NoKey)
        ));
    }

    #[test]
    fn a_key_list_reads_in_order_and_its_errors_never_show_a_key() {
        let one = base64::engine::general_purpose::STANDARD.encode([1u8; 32]);
        let two = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode([2u8; 32]);
        let sealer =
            Sealer::from_base64(&format!(" {two} ,{one}")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(sealer.key_id(), Sealer::new(&[2; 32]).key_id());
        assert_eq!(sealer.tags("x")[1], Sealer::new(&[1; 32]).tag("x"));
        let short = base64::engine::general_purpose::STANDARD.encode([3u8; 31]);
        let error = Sealer::from_base64(&format!("{one},{short}"))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(error.contains("key 2 of 2: 31 bytes"), "{error}");
        assert!(!error.contains(&short) && !error.contains(&one), "{error}");
        assert!(
            Sealer::from_base64(&format!("{one},")).is_err(),
            "an empty entry"
        );
        let shown = format!("{sealer:?}");
        assert!(!shown.contains(&one) && !shown.contains(&two), "{shown}");
        assert!(shown.contains(sealer.key_id()), "{shown}");
    }
}
