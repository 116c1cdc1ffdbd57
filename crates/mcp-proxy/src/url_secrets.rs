//! Keeping the secrets of an upstream's URL out of errors, logs and `Debug`: the password of
//! its user info, and the values of query parameters whose names say they hold one
//! (`?api_key=…`, `?token=…`), as [`ferrymcp_core::secrets::redacted_url`] shows them.

use ferrymcp_core::secrets::redacted_url;

/// The password in `url`'s user info (`https://user:password@host/`), if it has one.
fn password(url: &str) -> Option<&str> {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let (userinfo, _host) = authority.rsplit_once('@')?;
    let (_user, password) = userinfo.split_once(':')?;
    (!password.is_empty()).then_some(password)
}

/// `text` with the secrets of `url` replaced: its password by `<redacted>`, and each query
/// parameter that holds a secret (`token=…`) by its redacted form (`token=***`), wherever
/// they appear (a URL quoted in full, or only its query).
pub(crate) fn redact(text: String, url: &str) -> String {
    let mut text = match password(url) {
        Some(password) => text.replace(password, "<redacted>"),
        None => text,
    };
    let shown = redacted_url(url);
    let query = |url: &str| {
        let query = url.split_once('?').map(|(_, query)| query)?;
        Some(query.split('#').next().unwrap_or(query).to_owned())
    };
    if let (Some(query), Some(shown)) = (query(url), query(&shown)) {
        for (pair, shown_pair) in query.split('&').zip(shown.split('&')) {
            if pair != shown_pair {
                text = text.replace(pair, shown_pair);
            }
        }
    }
    text
}

/// `text` with every URL in it shown as [`redacted_url`] shows it, for a text that may quote
/// URLs no one named to us: a config file's line in its parse error.
#[cfg(any(feature = "gateway", test))]
pub(crate) fn redact_urls(text: &str) -> String {
    let ends = |c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '<' | '>' | '(' | ')');
    let mut shown = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let start = rest[..at]
            .char_indices()
            .rev()
            .find(|&(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .map_or(0, |(before, c)| before + c.len_utf8());
        let end = rest[at + 3..]
            .find(ends)
            .map_or(rest.len(), |len| at + 3 + len);
        shown.push_str(&rest[..start]);
        shown.push_str(&redacted_url(&rest[start..end]));
        rest = &rest[end..];
    }
    shown.push_str(rest);
    shown
}

/// `error` naming its URL with the secrets in it redacted: rmcp logs the errors of its HTTP
/// client, and reqwest's quote the URL they were for.
pub(crate) fn redact_error(error: reqwest::Error) -> reqwest::Error {
    let Some(url) = error.url() else {
        return error;
    };
    let shown = redacted_url(url.as_str());
    if shown == url.as_str() {
        return error;
    }
    match reqwest::Url::parse(&shown) {
        Ok(shown) => error.with_url(shown),
        Err(_) => error.without_url(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_and_secret_query_values_are_found_and_redacted() {
        assert_eq!(password("https://u:p%40ss@h:1/mcp?x=@"), Some("p%40ss"));
        assert_eq!(password("https://u@h/mcp"), None);
        assert_eq!(password("https://h/a@b"), None);
        let url = "https://u:hunter2@h/mcp?region=eu&api_key=k3y#top";
        let text =
            "error sending request for url (https://u:hunter2@h/mcp?region=eu&api_key=k3y), \
                    then for https://h/mcp?region=eu&api_key=k3y"
                .to_owned();
        assert_eq!(
            redact(text, url),
            "error sending request for url (https://u:<redacted>@h/mcp?region=eu&api_key=***), \
             then for https://h/mcp?region=eu&api_key=***"
        );
        let plain = "nothing to hide in https://h/mcp?region=eu".to_owned();
        assert_eq!(redact(plain.clone(), "https://h/mcp?region=eu"), plain);
    }

    #[test]
    fn every_url_in_a_text_is_shown_redacted() {
        let line = r#"5 | url = "http://u:hunter2@h:9/mcp?token=k3y" extra, or (https://h/x?a=1)"#;
        assert_eq!(
            redact_urls(line),
            r#"5 | url = "http://u:***@h:9/mcp?token=***" extra, or (https://h/x?a=1)"#
        );
        assert_eq!(redact_urls("no url here: a://"), "no url here: a://");
        assert_eq!(redact_urls("://x:y@h"), "://x:***@h");
        // Whatever precedes a URL, a character of several bytes included.
        assert_eq!(
            redact_urls("é://u:p@h ü«http://u:p@h»"),
            "é://u:***@h ü«http://u:***@h»"
        );
    }
}
