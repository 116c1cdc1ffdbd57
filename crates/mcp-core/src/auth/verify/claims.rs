//! From a token's claims (a JWT's payload, or an introspection answer) to a [`Principal`]:
//! who issued it, which client, which user, which scopes; and the audience check.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ferrymcp_types::JsonObject;
use serde_json::Value;

use super::VerifyError;
use crate::auth::Principal;

/// The caller a claim set stands for:
///
/// - `issuer`: `iss`;
/// - `client_id`: the `client_id` claim (RFC 9068, RFC 7662), else `azp`, else `cid` (Okta),
///   else `sub` (a client acting for itself);
/// - `subject`: `sub` (an empty one is none);
/// - `scopes`: `scope` (a space-separated string), else `scp` (a space-separated string or an
///   array of strings);
/// - `claims`: the whole claim set.
///
/// For a [`TokenVerifier`](super::TokenVerifier) of your own that gets claims some other way.
///
/// ```
/// use ferrymcp_core::auth::verify::principal_from_claims;
/// let claims = serde_json::json!({
///     "iss": "https://as.example", "sub": "alice", "azp": "web-app",
///     "scp": ["files:read", "files:write"],
/// });
/// let serde_json::Value::Object(claims) = claims else { unreachable!() };
/// let alice = principal_from_claims(claims);
/// assert_eq!(alice.issuer.as_deref(), Some("https://as.example"));
/// assert_eq!(alice.client_id, "web-app");
/// assert_eq!(alice.subject.as_deref(), Some("alice"));
/// assert_eq!(alice.scopes, ["files:read", "files:write"]);
/// ```
pub fn principal_from_claims(claims: JsonObject) -> Principal {
    let text = |name: &str| {
        claims
            .get(name)
            .and_then(Value::as_str)
            .filter(|value| !value.is_empty())
    };
    let client_id = ["client_id", "azp", "cid", "sub"]
        .into_iter()
        .find_map(text)
        .unwrap_or_default()
        .to_owned();
    let mut principal = Principal::new(client_id).with_scopes(scopes_of(&claims));
    if let Some(issuer) = text("iss") {
        principal = principal.with_issuer(issuer);
    }
    if let Some(subject) = text("sub") {
        principal = principal.with_subject(subject);
    }
    principal.with_claims(claims)
}

/// The scopes of a claim set: `scope` if present, else `scp`; each a space-separated string
/// or an array of strings. Empty entries and repeats are dropped, the order kept.
fn scopes_of(claims: &JsonObject) -> Vec<String> {
    let granted = claims.get("scope").or_else(|| claims.get("scp"));
    let mut scopes: Vec<String> = Vec::new();
    let mut add = |scope: &str| {
        if !scope.is_empty() && !scopes.iter().any(|known| known == scope) {
            scopes.push(scope.to_owned());
        }
    };
    match granted {
        Some(Value::String(list)) => list.split_ascii_whitespace().for_each(&mut add),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .flat_map(str::split_ascii_whitespace)
            .for_each(&mut add),
        _ => {}
    }
    scopes
}

/// Whether the claim set's `aud` (a string or an array of strings) names one of `accepted`.
/// Strings are compared exactly. A claim set without `aud` is not accepted.
///
/// ```
/// use ferrymcp_core::auth::verify::audience_accepted;
/// let accepted = ["https://mcp.example/mcp".to_owned()];
/// let serde_json::Value::Object(one) = serde_json::json!({"aud": "https://mcp.example/mcp"}) else { unreachable!() };
/// let serde_json::Value::Object(many) = serde_json::json!({"aud": ["other", "https://mcp.example/mcp"]}) else { unreachable!() };
/// let serde_json::Value::Object(other) = serde_json::json!({"aud": "https://other.example"}) else { unreachable!() };
/// assert!(audience_accepted(&one, &accepted));
/// assert!(audience_accepted(&many, &accepted));
/// assert!(!audience_accepted(&other, &accepted));
/// ```
pub fn audience_accepted(claims: &JsonObject, accepted: &[String]) -> bool {
    let fits = |aud: &str| accepted.iter().any(|mine| mine == aud);
    match claims.get("aud") {
        Some(Value::String(aud)) => fits(aud),
        Some(Value::Array(auds)) => auds.iter().filter_map(Value::as_str).any(fits),
        _ => false,
    }
}

/// The audience check with the message a client gets: no `aud`, or another one.
/// A token must name whom it is for: a subject (`sub`) or a client (`client_id`, `azp` or
/// `cid`). One naming neither would make every such token the same caller (one owner of
/// tasks).
pub(crate) fn check_identity(claims: &JsonObject) -> Result<(), VerifyError> {
    let named = ["sub", "client_id", "azp", "cid"].into_iter().any(|name| {
        claims
            .get(name)
            .and_then(Value::as_str)
            .is_some_and(|value| !value.is_empty())
    });
    if named {
        Ok(())
    } else {
        Err(VerifyError::Invalid(
            "the token names neither a subject (sub) nor a client (client_id)".into(),
        ))
    }
}

pub(crate) fn check_audience(claims: &JsonObject, accepted: &[String]) -> Result<(), VerifyError> {
    if !claims.contains_key("aud") {
        return Err(VerifyError::Invalid(
            "the token has no audience (aud)".into(),
        ));
    }
    if audience_accepted(claims, accepted) {
        Ok(())
    } else {
        Err(VerifyError::Invalid(
            "the token is for another audience".into(),
        ))
    }
}

/// A NumericDate claim (`exp`, `nbf`, `iat`) as a time: `None` when absent, an error when it
/// is not a number.
pub(crate) fn numeric_date(
    claims: &JsonObject,
    name: &str,
) -> Result<Option<SystemTime>, VerifyError> {
    let Some(value) = claims.get(name) else {
        return Ok(None);
    };
    let not_a_date = || {
        VerifyError::Invalid(format!(
            "the {name} claim is not a time (seconds since 1970)"
        ))
    };
    let seconds = value.as_f64().ok_or_else(not_a_date)?;
    if seconds < 0.0 {
        return Err(not_a_date());
    }
    let offset = Duration::try_from_secs_f64(seconds).map_err(|_| not_a_date())?;
    UNIX_EPOCH
        .checked_add(offset)
        .map(Some)
        .ok_or_else(not_a_date)
}

/// The time checks shared by JWTs and introspection answers: `exp` (required when
/// `require_exp`) in the future, `nbf` and `iat` not in the future, each with `leeway`.
/// Returns the expiry.
pub(crate) fn check_times(
    claims: &JsonObject,
    now: SystemTime,
    leeway: Duration,
    require_exp: bool,
) -> Result<Option<SystemTime>, VerifyError> {
    let expires_at = numeric_date(claims, "exp")?;
    match expires_at {
        None if require_exp => {
            return Err(VerifyError::Invalid("the token has no expiry (exp)".into()));
        }
        Some(exp) if exp.checked_add(leeway).is_some_and(|end| end <= now) => {
            return Err(VerifyError::Invalid("the token has expired".into()));
        }
        _ => {}
    }
    // A leeway too large for the clock accepts any time.
    let ahead = now.checked_add(leeway);
    let early =
        |time: Option<SystemTime>| time.zip(ahead).is_some_and(|(time, ahead)| time > ahead);
    if early(numeric_date(claims, "nbf")?) {
        return Err(VerifyError::Invalid(
            "the token is not valid yet (nbf)".into(),
        ));
    }
    if early(numeric_date(claims, "iat")?) {
        return Err(VerifyError::Invalid(
            "the token was issued in the future (iat)".into(),
        ));
    }
    Ok(expires_at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> JsonObject {
        match value {
            Value::Object(map) => map,
            _ => JsonObject::new(),
        }
    }

    fn seconds(t: SystemTime) -> u64 {
        t.duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0)
    }

    #[test]
    fn au13_scopes_from_a_space_separated_scope_claim() {
        let p = principal_from_claims(object(
            json!({"scope": "read  write read", "scp": "ignored"}),
        ));
        assert_eq!(p.scopes, ["read", "write"]);
    }

    #[test]
    fn au13_scopes_from_an_scp_string_or_array() {
        let p = principal_from_claims(object(json!({"scp": "a b"})));
        assert_eq!(p.scopes, ["a", "b"]);
        let p = principal_from_claims(object(json!({"scp": ["a", "b", 3, ""]})));
        assert_eq!(p.scopes, ["a", "b"]);
        let p = principal_from_claims(object(json!({"scp": 7})));
        assert!(p.scopes.is_empty());
        assert!(principal_from_claims(JsonObject::new()).scopes.is_empty());
    }

    #[test]
    fn au16_client_id_falls_back_from_client_id_to_azp_cid_and_sub() {
        let all = json!({"client_id": "c1", "azp": "c2", "cid": "c3", "sub": "s"});
        assert_eq!(principal_from_claims(object(all)).client_id, "c1");
        let azp = json!({"client_id": "", "azp": "c2", "cid": "c3", "sub": "s"});
        assert_eq!(principal_from_claims(object(azp)).client_id, "c2");
        let cid = json!({"client_id": 5, "cid": "c3", "sub": "s"});
        assert_eq!(principal_from_claims(object(cid)).client_id, "c3");
        let sub = principal_from_claims(object(json!({"sub": "svc"})));
        assert_eq!(
            (sub.client_id.as_str(), sub.subject.as_deref()),
            ("svc", Some("svc"))
        );
        assert_eq!(principal_from_claims(JsonObject::new()).client_id, "");
    }

    #[test]
    fn au16_issuer_subject_and_claims_are_kept() {
        let claims =
            object(json!({"iss": "https://as", "sub": "", "client_id": "app", "tenant": "acme"}));
        let p = principal_from_claims(claims.clone());
        assert_eq!(p.issuer.as_deref(), Some("https://as"));
        assert_eq!(p.subject, None);
        assert_eq!(*p.claims, claims);
    }

    #[test]
    fn au5_audience_as_a_string_or_an_array() {
        let mine = ["https://mcp/mcp".to_owned(), "urn:mine".to_owned()];
        assert!(audience_accepted(
            &object(json!({"aud": "urn:mine"})),
            &mine
        ));
        assert!(audience_accepted(
            &object(json!({"aud": ["x", "https://mcp/mcp"]})),
            &mine
        ));
        assert!(!audience_accepted(
            &object(json!({"aud": ["x", "y"]})),
            &mine
        ));
        assert!(!audience_accepted(
            &object(json!({"aud": "https://mcp/mcp/"})),
            &mine
        ));
        assert!(!audience_accepted(&object(json!({"aud": 1})), &mine));
        let missing = check_audience(&JsonObject::new(), &mine).unwrap_err();
        assert_eq!(
            missing,
            VerifyError::Invalid("the token has no audience (aud)".into())
        );
        let other = check_audience(&object(json!({"aud": "x"})), &mine).unwrap_err();
        assert_eq!(
            other,
            VerifyError::Invalid("the token is for another audience".into())
        );
    }

    #[test]
    fn au10_times_are_checked_with_the_leeway() {
        let now = SystemTime::now();
        let at = |t: SystemTime| json!(seconds(t));
        let leeway = Duration::from_secs(60);
        let hour = Duration::from_secs(3600);
        let fine = object(
            json!({"exp": at(now + hour), "nbf": at(now + Duration::from_secs(30)), "iat": at(now)}),
        );
        assert!(check_times(&fine, now, leeway, true).unwrap().is_some());
        let expired = object(json!({"exp": at(now - Duration::from_secs(120))}));
        assert_eq!(
            check_times(&expired, now, leeway, true).unwrap_err(),
            VerifyError::Invalid("the token has expired".into())
        );
        let just_expired = object(json!({"exp": at(now - Duration::from_secs(10))}));
        assert!(check_times(&just_expired, now, leeway, true).is_ok());
        let early =
            object(json!({"exp": at(now + hour), "nbf": at(now + Duration::from_secs(600))}));
        assert_eq!(
            check_times(&early, now, leeway, true).unwrap_err(),
            VerifyError::Invalid("the token is not valid yet (nbf)".into())
        );
        let future =
            object(json!({"exp": at(now + hour), "iat": at(now + Duration::from_secs(600))}));
        assert!(check_times(&future, now, leeway, true).is_err());
        assert_eq!(
            check_times(&JsonObject::new(), now, leeway, true).unwrap_err(),
            VerifyError::Invalid("the token has no expiry (exp)".into())
        );
        assert_eq!(
            check_times(&JsonObject::new(), now, leeway, false),
            Ok(None)
        );
        let text = object(json!({"exp": "tomorrow"}));
        assert!(check_times(&text, now, leeway, true).is_err());
        let huge = object(json!({"exp": 1e300}));
        assert!(check_times(&huge, now, leeway, true).is_err());
        // A leeway past what the clock can hold does not panic.
        let far = object(json!({"exp": at(now + hour), "nbf": at(now + hour)}));
        assert!(check_times(&far, now, Duration::MAX, true).is_ok());
    }
}
