//! Showing values that may hold secrets: [`redacted_url`] for URLs with a password or a
//! token in them, for `Debug` output, logs and error messages.

/// `url` as it may be shown (in `Debug`, logs and errors): the password of its user
/// information replaced by `***` (a user without a password, which Redis URLs may use for
/// a bare password, becomes `***` too), and the values of query parameters whose names say
/// they may hold a secret (names containing `pass`, `token`, `secret`, `key` or `auth`, in
/// any case) replaced as well. The rest of the URL is kept, so it still says where.
///
/// ```
/// use ferrymcp_core::secrets::redacted_url;
/// assert_eq!(redacted_url("redis://:hunter2@db:6379/0"), "redis://:***@db:6379/0");
/// assert_eq!(redacted_url("redis://app:hunter2@db/0?queue=q"), "redis://app:***@db/0?queue=q");
/// assert_eq!(redacted_url("redis://hunter2@db/0"), "redis://***@db/0");
/// assert_eq!(redacted_url("nats://db/q?token=hunter2&x=1"), "nats://db/q?token=***&x=1");
/// assert_eq!(redacted_url("redis://:a/b@db/0"), "redis://:***@db/0");
/// assert_eq!(redacted_url("memory://"), "memory://");
/// ```
pub fn redacted_url(url: &str) -> String {
    let (scheme, rest) = match url.find("://") {
        Some(at) => url.split_at(at + 3),
        None => ("", url),
    };
    // The user information ends at the last `@` before the query: a password holding an
    // unescaped `/` is still hidden.
    let before_query = rest.find(['?', '#']).unwrap_or(rest.len());
    let mut shown = String::with_capacity(url.len());
    shown.push_str(scheme);
    let tail = match rest[..before_query].rfind('@') {
        Some(at) => {
            match rest[..at].split_once(':') {
                Some((user, _password)) => {
                    shown.push_str(user);
                    shown.push_str(":***@");
                }
                None => shown.push_str("***@"),
            }
            &rest[at + 1..]
        }
        None => rest,
    };
    let (path, query_and_fragment) = match tail.find('?') {
        Some(at) => tail.split_at(at),
        None => (tail, ""),
    };
    shown.push_str(path);
    if let Some(query) = query_and_fragment.strip_prefix('?') {
        let (query, fragment) = match query.find('#') {
            Some(at) => query.split_at(at),
            None => (query, ""),
        };
        shown.push('?');
        let pairs: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((name, _)) if is_secret_name(name) => format!("{name}=***"),
                _ => pair.to_owned(),
            })
            .collect();
        shown.push_str(&pairs.join("&"));
        shown.push_str(fragment);
    }
    shown
}

fn is_secret_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    ["pass", "token", "secret", "key", "auth"]
        .iter()
        .any(|secret| name.contains(secret))
}
