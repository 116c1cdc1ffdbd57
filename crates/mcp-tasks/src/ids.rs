//! Identifiers minted from the operating system's CSPRNG.

use base64::Engine as _;

/// `bytes` random bytes, URL-safe base64 without padding.
pub(crate) fn random_token(bytes: usize) -> String {
    let mut buffer = vec![0u8; bytes];
    // The OS RNG failing is not something a server can recover from sensibly; an all-zero
    // id would be guessable, so refuse loudly instead.
    if let Err(error) = getrandom::fill(&mut buffer) {
        panic!("the operating system's random number generator failed: {error}");
    }
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&buffer)
}

/// A task id: 32 random bytes (256 bits), 43 URL-safe characters.
///
/// ```
/// let id = ferrymcp_tasks::new_task_id();
/// assert_eq!(id.len(), 43);
/// assert!(id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
/// ```
pub fn new_task_id() -> String {
    random_token(32)
}

/// A client-facing input key, `{taskId}:{16 hex}`, never reused within a task.
pub(crate) fn new_input_key(task_id: &str) -> String {
    let mut buffer = [0u8; 8];
    if let Err(error) = getrandom::fill(&mut buffer) {
        panic!("the operating system's random number generator failed: {error}");
    }
    let hex: String = buffer.iter().map(|b| format!("{b:02x}")).collect();
    format!("{task_id}:{hex}")
}
