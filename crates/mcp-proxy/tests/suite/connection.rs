//! Connection failures: clear errors, and backoff between reconnect attempts.

use std::time::Duration;

use ferrymcp_proxy::{CommandTarget, HttpTarget, ProxyError, Upstream, UpstreamOptions};

#[tokio::test]
async fn a_failed_connect_backs_off_with_a_clear_error() {
    let upstream = Upstream::command("ghost", CommandTarget::new("/nonexistent/mcp-server"))
        .with_options(
            UpstreamOptions::default().backoff(Duration::from_secs(30), Duration::from_secs(60)),
        );
    let first = upstream.list_tools().await.expect_err("cannot spawn");
    assert!(
        matches!(&first, ProxyError::Connect { upstream, .. } if upstream == "ghost"),
        "{first:?}"
    );
    // The next attempt is not due: answered at once, naming the wait and the last error.
    let second = upstream.list_tools().await.expect_err("backing off");
    let ProxyError::Down { retry_in, last, .. } = &second else {
        panic!("{second:?}")
    };
    assert!(*retry_in > Duration::from_secs(20), "{retry_in:?}");
    assert!(last.contains("/nonexistent/mcp-server"), "{last}");
    assert_eq!(second.into_error_data().code.0, -32603);
}

#[tokio::test]
async fn an_unreachable_url_is_a_connect_error_within_the_connect_timeout() {
    // Port 9 (discard) on loopback: nothing listens there in the test environment.
    let upstream = Upstream::http("nowhere", HttpTarget::new("http://127.0.0.1:9/mcp"))
        .with_options(UpstreamOptions::default().connect_timeout(Duration::from_secs(5)));
    let started = std::time::Instant::now();
    let error = upstream.list_tools().await.expect_err("nothing listens");
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
    assert!(error.to_string().contains("upstream 'nowhere'"), "{error}");
}

#[tokio::test]
async fn a_password_or_token_in_the_url_never_shows_in_connect_errors_or_debug() {
    // issue 12 (secrets): user info in an upstream URL is a credential, and so is a query
    // parameter named for one.
    let target = HttpTarget::new("http://svc:hunter2@127.0.0.1:9/mcp?access_token=t0ken-5ecret");
    let shown = format!("{target:?}");
    assert!(
        !shown.contains("hunter2") && !shown.contains("5ecret"),
        "{shown}"
    );
    let upstream = Upstream::http("nowhere", target)
        .with_options(UpstreamOptions::default().connect_timeout(Duration::from_secs(5)));
    let error = upstream.list_tools().await.expect_err("nothing listens");
    let message = error.to_string();
    assert!(message.contains("127.0.0.1:9"), "{message}");
    let debug = format!("{error:?}");
    for secret in ["hunter2", "5ecret"] {
        assert!(!message.contains(secret), "{message}");
        assert!(!debug.contains(secret), "{debug}");
    }
}
