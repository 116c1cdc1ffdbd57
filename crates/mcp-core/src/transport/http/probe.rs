//! One pass over a POST body that checks it is JSON and notes its `id`, its `method` and the
//! `params.name`/`params.uri` it targets, without building a `serde_json::Value` of it: rmcp
//! parses the body into a message next, and a tree of a 4 MiB body costs many times its
//! size.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::transport::request_id::echoable;

/// What the edge needs to know of a body before rmcp reads it.
#[derive(Debug, Default)]
pub(super) struct Probe {
    /// The `id` member, if it is a string or an integer.
    pub(super) id: Option<serde_json::Value>,
    /// `"method": "initialize"`.
    pub(super) initialize: bool,
    /// The `method` member, if it is a (short) string.
    pub(super) method: Option<String>,
    /// `params.name`, if it is a (short) string: the tool or prompt a request targets.
    pub(super) name: Option<String>,
    /// `params.uri`, if it is a (short) string: the resource a request reads.
    pub(super) uri: Option<String>,
}

impl Probe {
    /// Scans `body`; the error is serde_json's, for a `-32700` answer.
    pub(super) fn scan(body: &[u8]) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(body)
    }
}

impl<'de> de::Deserialize<'de> for Probe {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ProbeVisitor)
    }
}

struct ProbeVisitor;

impl<'de> Visitor<'de> for ProbeVisitor {
    type Value = Probe;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Probe, A::Error> {
        let mut probe = Probe::default();
        while let Some(key) = map.next_key::<Key>()? {
            if let Key::Params = key {
                let Params { name, uri } = map.next_value()?;
                probe.name = name;
                probe.uri = uri;
                continue;
            }
            let Scalar(value) = map.next_value()?;
            match key {
                Key::Id => probe.id = value.filter(echoable),
                Key::Method => {
                    let method = value.and_then(|m| match m {
                        serde_json::Value::String(method) => Some(method),
                        _ => None,
                    });
                    probe.initialize = method.as_deref() == Some("initialize");
                    probe.method = method;
                }
                Key::Params | Key::Other => {}
            }
        }
        Ok(probe)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Probe, A::Error> {
        drain_seq(seq).map(|()| Probe::default())
    }

    fn visit_bool<E>(self, _: bool) -> Result<Probe, E> {
        Ok(Probe::default())
    }
    fn visit_i64<E>(self, _: i64) -> Result<Probe, E> {
        Ok(Probe::default())
    }
    fn visit_u64<E>(self, _: u64) -> Result<Probe, E> {
        Ok(Probe::default())
    }
    fn visit_f64<E>(self, _: f64) -> Result<Probe, E> {
        Ok(Probe::default())
    }
    fn visit_str<E>(self, _: &str) -> Result<Probe, E> {
        Ok(Probe::default())
    }
    fn visit_unit<E>(self) -> Result<Probe, E> {
        Ok(Probe::default())
    }
}

/// A top-level member name: only three matter.
enum Key {
    Id,
    Method,
    Params,
    Other,
}

impl<'de> de::Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E>(self, key: &str) -> Result<Key, E> {
                Ok(match key {
                    "id" => Key::Id,
                    "method" => Key::Method,
                    "params" => Key::Params,
                    _ => Key::Other,
                })
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// The `name` and `uri` members of `params`, if they are short strings; everything else in
/// it only checked.
#[derive(Default)]
struct Params {
    name: Option<String>,
    uri: Option<String>,
}

impl<'de> de::Deserialize<'de> for Params {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ParamsVisitor)
    }
}

struct ParamsVisitor;

impl<'de> Visitor<'de> for ParamsVisitor {
    type Value = Params;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Params, A::Error> {
        let mut params = Params::default();
        while let Some(Scalar(key)) = map.next_key::<Scalar>()? {
            let Scalar(value) = map.next_value()?;
            let text = match value {
                Some(serde_json::Value::String(text)) => Some(text),
                _ => None,
            };
            match key.as_ref().and_then(serde_json::Value::as_str) {
                Some("name") => params.name = text,
                Some("uri") => params.uri = text,
                _ => {}
            }
        }
        Ok(params)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Params, A::Error> {
        drain_seq(seq).map(|()| Params::default())
    }
    fn visit_bool<E>(self, _: bool) -> Result<Params, E> {
        Ok(Params::default())
    }
    fn visit_i64<E>(self, _: i64) -> Result<Params, E> {
        Ok(Params::default())
    }
    fn visit_u64<E>(self, _: u64) -> Result<Params, E> {
        Ok(Params::default())
    }
    fn visit_f64<E>(self, _: f64) -> Result<Params, E> {
        Ok(Params::default())
    }
    fn visit_str<E>(self, _: &str) -> Result<Params, E> {
        Ok(Params::default())
    }
    fn visit_unit<E>(self) -> Result<Params, E> {
        Ok(Params::default())
    }
}

/// A value kept if it is a string or a number, and otherwise only checked: numbers are
/// parsed (so `1e400` fails as it does for a full parse), strings unescaped, arrays and
/// objects walked, nothing retained.
struct Scalar(Option<serde_json::Value>);

impl<'de> de::Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ScalarVisitor)
    }
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Scalar, E> {
        Ok(Scalar(None))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Scalar, E> {
        Ok(Scalar(Some(v.into())))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Scalar, E> {
        Ok(Scalar(Some(v.into())))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Scalar, E> {
        Ok(Scalar(serde_json::Number::from_f64(v).map(Into::into)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Scalar, E> {
        // Short strings only: a long one is never an id or method worth keeping.
        Ok(Scalar((v.len() <= 256).then(|| v.into())))
    }
    fn visit_unit<E>(self) -> Result<Scalar, E> {
        Ok(Scalar(None))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Scalar, A::Error> {
        drain_seq(seq).map(|()| Scalar(None))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Scalar, A::Error> {
        while let Some((Scalar(_), Scalar(_))) = map.next_entry()? {}
        Ok(Scalar(None))
    }
}

fn drain_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while let Some(Scalar(_)) = seq.next_element()? {}
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_finds_id_and_initialize_and_fails_like_a_full_parse() {
        let probe = Probe::scan(
            br#"{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"a":[1,{"b":null}]}}"#,
        )
        .unwrap();
        assert_eq!(probe.id, Some(7.into()));
        assert!(probe.initialize);
        let probe = Probe::scan(br#"{"id":{"x":1},"method":"tools/call"}"#).unwrap();
        assert_eq!(probe.id, None);
        assert!(!probe.initialize);
        assert_eq!(probe.method.as_deref(), Some("tools/call"));
        let probe = Probe::scan(
            br#"{"params":{"arguments":{"name":"inner"},"name":"child_multiply","uri":7},"method":"tools/call"}"#,
        )
        .unwrap();
        assert_eq!(probe.name.as_deref(), Some("child_multiply"));
        assert_eq!(probe.uri, None);
        let probe = Probe::scan(br#"{"params":{"uri":"data://ns/users"}}"#).unwrap();
        assert_eq!(probe.uri.as_deref(), Some("data://ns/users"));
        assert!(Probe::scan(br#"{"params":{"name":1e400}}"#).is_err());
        assert!(Probe::scan(b"not json").is_err());
        assert!(Probe::scan(br#"{"a":1e400}"#).is_err());
        assert!(Probe::scan(br#"{"a":1} x"#).is_err());
        assert!(Probe::scan(br#""abc""#).is_ok());
    }
}
