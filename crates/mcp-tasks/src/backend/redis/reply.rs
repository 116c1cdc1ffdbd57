//! Reading the scripts' replies: every script answers with flat arrays of strings, integers
//! and nils, which these helpers take apart without trusting their shape.

use redis::Value;

use crate::backend::BackendError;

/// A reply that does not have the shape the script returns.
pub(super) fn corrupt(what: &str, value: &Value) -> BackendError {
    BackendError::Corrupt(format!("unexpected reply to {what}: {value:?}"))
}

/// A string (bulk or simple) or an integer, as text; `None` for nil.
pub(super) fn text(value: &Value) -> Option<String> {
    match value {
        Value::BulkString(bytes) => Some(String::from_utf8_lossy(bytes).into_owned()),
        Value::SimpleString(text) => Some(text.clone()),
        Value::Int(n) => Some(n.to_string()),
        Value::Okay => Some("OK".to_owned()),
        _ => None,
    }
}

/// Like [`text`], but takes a bulk string's bytes out of `value` instead of copying them
/// (what is left is an empty string). For replies read field by field once.
pub(super) fn take_text(value: &mut Value) -> Option<String> {
    match value {
        Value::BulkString(bytes) => {
            let bytes = std::mem::take(bytes);
            Some(
                String::from_utf8(bytes).unwrap_or_else(|invalid| {
                    String::from_utf8_lossy(invalid.as_bytes()).into_owned()
                }),
            )
        }
        other => text(other),
    }
}

/// An integer, or a string holding one.
pub(super) fn int(value: &Value) -> Option<i64> {
    match value {
        Value::Int(n) => Some(*n),
        Value::BulkString(bytes) => std::str::from_utf8(bytes).ok()?.parse().ok(),
        Value::SimpleString(text) => text.parse().ok(),
        _ => None,
    }
}

/// A non-negative integer.
pub(super) fn uint(value: &Value) -> Option<u64> {
    int(value).and_then(|n| u64::try_from(n).ok())
}

/// The elements of an array reply (nil is empty).
pub(super) fn items(value: Value, what: &str) -> Result<Vec<Value>, BackendError> {
    match value {
        Value::Array(items) | Value::Set(items) => Ok(items),
        Value::Nil => Ok(Vec::new()),
        other => Err(corrupt(what, &other)),
    }
}

/// A flat `field, value, ...` array (what `HGETALL` answers inside a script), as pairs.
pub(super) fn pairs(value: Value, what: &str) -> Result<Vec<(String, String)>, BackendError> {
    let flat = items(value, what)?;
    let mut out = Vec::with_capacity(flat.len() / 2);
    let mut iter = flat.iter();
    while let Some(field) = iter.next() {
        let (Some(field), Some(value)) = (text(field), iter.next().and_then(text)) else {
            return Err(BackendError::Corrupt(format!(
                "an odd or non-text field list in the reply to {what}"
            )));
        };
        out.push((field, value));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_are_read_in_order_and_odd_lists_refused() {
        let flat = Value::Array(vec![
            Value::BulkString(b"a".to_vec()),
            Value::BulkString(b"1".to_vec()),
            Value::BulkString(b"b".to_vec()),
            Value::Int(2),
        ]);
        assert_eq!(
            pairs(flat, "t").ok(),
            Some(vec![("a".into(), "1".into()), ("b".into(), "2".into())])
        );
        let odd = Value::Array(vec![Value::BulkString(b"a".to_vec())]);
        assert!(pairs(odd, "t").is_err());
        assert_eq!(uint(&Value::BulkString(b"42".to_vec())), Some(42));
        assert_eq!(int(&Value::SimpleString("-7".into())), Some(-7));
        assert_eq!(int(&Value::BulkString(b"x".to_vec())), None);
        let mut taken = Value::BulkString(b"abc".to_vec());
        assert_eq!(take_text(&mut taken).as_deref(), Some("abc"));
        assert_eq!(take_text(&mut Value::Nil), None);
        assert_eq!(
            take_text(&mut Value::BulkString(vec![b'a', 0xff])).as_deref(),
            Some("a\u{fffd}")
        );
        assert_eq!(text(&Value::Nil), None);
    }
}
