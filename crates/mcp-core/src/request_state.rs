//! Sealing of `requestState` (input rounds, SEP-2322) with XChaCha20-Poly1305.
//!
//! A sealed value is `mrs1.` followed by base64url (no padding) of one key-id byte, a
//! random 192-bit nonce and the ciphertext with its tag. The plaintext holds the handler's
//! state and the instant it expires; the associated data binds the value to the caller
//! (its principal key, or anonymous), the method, the target (tool name, resource URI or
//! prompt name) and a SHA-256 digest of the request's arguments in canonical JSON. So the
//! client can neither read the state nor replay it for another caller, method, target or
//! arguments, nor past its expiry.
//!
//! The keyring seals with its first key and opens with any of its keys; the key id (the
//! first byte of a SHA-256 of the key) selects which ones to try, so rotating keys (new
//! first, the old ones after) keeps rounds in flight working.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use chacha20poly1305::{
    Key, KeyInit, XChaCha20Poly1305, XNonce,
    aead::{Aead, Payload},
};
use ferrymcp_types::{ErrorData, JsonObject};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// How long a sealed `requestState` stays valid unless the server sets another TTL.
pub(crate) const DEFAULT_TTL: Duration = Duration::from_secs(15 * 60);

/// The length of every key in the ring.
pub(crate) const KEY_LEN: usize = 32;

/// What every sealed value starts with (the format's version).
const PREFIX: &str = "mrs1.";
const NONCE_LEN: usize = 24;
/// Key id, nonce and the 16-byte tag: the shortest value that can open.
const MIN_LEN: usize = 1 + NONCE_LEN + 16;

/// Why a keyring could not be built.
#[derive(Debug, thiserror::Error)]
pub(crate) enum KeyError {
    /// No key at all.
    #[error("at least one key is needed")]
    Empty,
    /// A key of the wrong length (the key itself is never shown).
    #[error("key {index} is {len} bytes; every key must be exactly {KEY_LEN} bytes")]
    Length {
        /// Its position in the ring (0 is the current key).
        index: usize,
        /// Its length.
        len: usize,
    },
}

struct RingKey {
    id: u8,
    cipher: XChaCha20Poly1305,
}

/// Seals and opens `requestState` values: a keyring (current key first) and a TTL.
pub(crate) struct StateSeal {
    keys: Vec<RingKey>,
    ttl: Duration,
}

/// What a sealed state is bound to: who asked, what, of what, with which arguments.
#[derive(Clone)]
pub(crate) struct Binding {
    aad: Vec<u8>,
}

impl StateSeal {
    /// A seal with one fresh random key and the default TTL.
    pub(crate) fn random() -> Self {
        let mut key = [0u8; KEY_LEN];
        if let Err(error) = getrandom::fill(&mut key) {
            // A guessable key would let clients forge state: refuse to run instead.
            panic!("the operating system's random number generator failed: {error}");
        }
        Self {
            keys: vec![ring_key(&key)],
            ttl: DEFAULT_TTL,
        }
    }

    /// A seal with `keys` (the first seals, all open) and `ttl`.
    pub(crate) fn with_keys<K: AsRef<[u8]>>(
        keys: impl IntoIterator<Item = K>,
        ttl: Duration,
    ) -> Result<Self, KeyError> {
        let keys = keys
            .into_iter()
            .enumerate()
            .map(|(index, key)| {
                let key = key.as_ref();
                if key.len() == KEY_LEN {
                    Ok(ring_key(key))
                } else {
                    Err(KeyError::Length {
                        index,
                        len: key.len(),
                    })
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        if keys.is_empty() {
            return Err(KeyError::Empty);
        }
        Ok(Self { keys, ttl })
    }

    /// The same keys with another TTL.
    pub(crate) fn with_ttl(&self, ttl: Duration) -> Self {
        Self {
            keys: self
                .keys
                .iter()
                .map(|k| RingKey {
                    id: k.id,
                    cipher: k.cipher.clone(),
                })
                .collect(),
            ttl,
        }
    }

    /// The TTL of values sealed from now on.
    pub(crate) fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Seals the handler's `state` (possibly none) for `binding`, with the current key.
    pub(crate) fn seal(&self, binding: &Binding, state: Option<&str>) -> String {
        let expires =
            now_ms().saturating_add(u64::try_from(self.ttl.as_millis()).unwrap_or(u64::MAX));
        let plaintext = serde_json::json!({ "e": expires, "s": state }).to_string();
        let mut nonce = [0u8; NONCE_LEN];
        if let Err(error) = getrandom::fill(&mut nonce) {
            panic!("the operating system's random number generator failed: {error}");
        }
        let key = &self.keys[0];
        let payload = Payload {
            msg: plaintext.as_bytes(),
            aad: &binding.aad,
        };
        // Encryption fails only for messages beyond XChaCha20's 256 GiB limit.
        let sealed = key
            .cipher
            .encrypt(XNonce::from_slice(&nonce), payload)
            .unwrap_or_default();
        let mut bytes = Vec::with_capacity(1 + NONCE_LEN + sealed.len());
        bytes.push(key.id);
        bytes.extend_from_slice(&nonce);
        bytes.extend_from_slice(&sealed);
        format!(
            "{PREFIX}{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
        )
    }

    /// Opens a sealed value for `binding`, giving back the handler's own state. Every
    /// rejection is `-32602` saying why.
    pub(crate) fn open(
        &self,
        binding: &Binding,
        sealed: &str,
    ) -> Result<Option<String>, ErrorData> {
        let rejected = |why: &str| {
            ErrorData::invalid_params(format!("requestState was rejected: {why}"), None)
        };
        let unreadable = || rejected("it is not readable (not a value this server issued)");
        let bytes = sealed
            .strip_prefix(PREFIX)
            .and_then(|body| {
                base64::engine::general_purpose::URL_SAFE_NO_PAD
                    .decode(body)
                    .ok()
            })
            .filter(|bytes| bytes.len() >= MIN_LEN)
            .ok_or_else(unreadable)?;
        let (id, rest) = (bytes[0], &bytes[1..]);
        let (nonce, ciphertext) = rest.split_at(NONCE_LEN);
        let mut candidates = self.keys.iter().filter(|k| k.id == id).peekable();
        if candidates.peek().is_none() {
            return Err(rejected(
                "it was sealed with a key this server no longer accepts; start the request again without requestState",
            ));
        }
        let plaintext = candidates
            .find_map(|key| {
                key.cipher
                    .decrypt(
                        XNonce::from_slice(nonce),
                        Payload {
                            msg: ciphertext,
                            aad: &binding.aad,
                        },
                    )
                    .ok()
            })
            .ok_or_else(|| {
                rejected(
                    "it is not for this request (it was altered, or issued for another caller, method, target or arguments)",
                )
            })?;
        let value: Value = serde_json::from_slice(&plaintext).map_err(|_| unreadable())?;
        let expires = value
            .get("e")
            .and_then(Value::as_u64)
            .ok_or_else(unreadable)?;
        if now_ms() >= expires {
            return Err(rejected(
                "it expired; start the request again without requestState",
            ));
        }
        Ok(value.get("s").and_then(Value::as_str).map(str::to_owned))
    }
}

/// The binding of a request by `principal` (`None`: anonymous) to `method` on `target`
/// with `arguments` (absent arguments are the empty object).
pub(crate) fn binding(
    principal: Option<&crate::auth::Principal>,
    method: &str,
    target: &str,
    arguments: Option<&JsonObject>,
) -> Binding {
    let who = principal.map_or_else(|| "anon".to_owned(), |p| format!("auth:{}", p.scope_key()));
    let mut digest = Sha256::new();
    match arguments {
        Some(arguments) => canonical_object(&mut digest, arguments),
        None => canonical_object(&mut digest, &JsonObject::new()),
    }
    let digest = digest.finalize();
    let mut aad = Vec::with_capacity(64 + who.len() + method.len() + target.len());
    for part in [
        b"mcpkit requestState v1".as_slice(),
        who.as_bytes(),
        method.as_bytes(),
        target.as_bytes(),
        digest.as_slice(),
    ] {
        push_part(&mut aad, part);
    }
    Binding { aad }
}

/// A length-prefixed part, so no two different lists of parts give the same bytes.
fn push_part(into: &mut Vec<u8>, part: &[u8]) {
    into.extend_from_slice(&(part.len() as u64).to_be_bytes());
    into.extend_from_slice(part);
}

/// Feeds `value` to `digest` in a canonical form: object members sorted by key, every
/// string and container length-prefixed, so equal JSON values digest equally whatever the
/// order the client wrote their members in.
fn canonical(digest: &mut Sha256, value: &Value) {
    match value {
        Value::Null => digest.update(b"n"),
        Value::Bool(true) => digest.update(b"t"),
        Value::Bool(false) => digest.update(b"f"),
        Value::Number(n) => {
            digest.update(b"#");
            canonical_str(digest, &n.to_string());
        }
        Value::String(s) => {
            digest.update(b"s");
            canonical_str(digest, s);
        }
        Value::Array(items) => {
            digest.update(b"[");
            digest.update((items.len() as u64).to_be_bytes());
            for item in items {
                canonical(digest, item);
            }
        }
        Value::Object(members) => canonical_object(digest, members),
    }
}

fn canonical_object(digest: &mut Sha256, members: &JsonObject) {
    let mut sorted: Vec<(&String, &Value)> = members.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(b.0));
    digest.update(b"{");
    digest.update((sorted.len() as u64).to_be_bytes());
    for (key, value) in sorted {
        canonical_str(digest, key);
        canonical(digest, value);
    }
}

fn canonical_str(digest: &mut Sha256, s: &str) {
    digest.update((s.len() as u64).to_be_bytes());
    digest.update(s.as_bytes());
}

fn ring_key(key: &[u8]) -> RingKey {
    let id = Sha256::new()
        .chain_update(b"mcpkit requestState key id\0")
        .chain_update(key)
        .finalize()[0];
    RingKey {
        id,
        cipher: XChaCha20Poly1305::new(Key::from_slice(key)),
    }
}

/// Milliseconds since the Unix epoch (wall clock: replicas sharing keys share it).
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(value: Value) -> JsonObject {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn the_digest_ignores_member_order_but_not_values() {
        let a = binding(
            None,
            "tools/call",
            "t",
            Some(&args(json!({"x": 1, "y": [1, {"b": 2, "a": 1}]}))),
        );
        let b = binding(
            None,
            "tools/call",
            "t",
            Some(&args(json!({"y": [1, {"a": 1, "b": 2}], "x": 1}))),
        );
        let c = binding(
            None,
            "tools/call",
            "t",
            Some(&args(json!({"x": 2, "y": [1, {"a": 1, "b": 2}]}))),
        );
        assert_eq!(a.aad, b.aad);
        assert_ne!(a.aad, c.aad);
        assert_eq!(
            binding(None, "m", "t", None).aad,
            binding(None, "m", "t", Some(&JsonObject::new())).aad,
            "absent arguments are the empty object"
        );
    }

    #[test]
    fn keys_must_be_32_bytes_and_the_ring_not_empty() {
        assert!(matches!(
            StateSeal::with_keys(Vec::<[u8; 32]>::new(), DEFAULT_TTL),
            Err(KeyError::Empty)
        ));
        let error = StateSeal::with_keys([vec![1u8; 32], vec![2u8; 31]], DEFAULT_TTL)
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            error.as_deref(),
            Some("key 1 is 31 bytes; every key must be exactly 32 bytes")
        );
    }

    #[test]
    fn a_rotated_ring_opens_values_of_its_previous_keys() {
        let here = binding(None, "tools/call", "t", None);
        let old = StateSeal::with_keys([[1u8; 32]], DEFAULT_TTL).unwrap();
        let rotated = StateSeal::with_keys([[2u8; 32], [1u8; 32]], DEFAULT_TTL).unwrap();
        let sealed = old.seal(&here, Some("s"));
        assert_eq!(rotated.open(&here, &sealed).unwrap().as_deref(), Some("s"));
        let dropped = StateSeal::with_keys([[2u8; 32]], DEFAULT_TTL).unwrap();
        let error = dropped.open(&here, &sealed).unwrap_err();
        assert!(
            error.message.contains("no longer accepts"),
            "{}",
            error.message
        );
    }
}
