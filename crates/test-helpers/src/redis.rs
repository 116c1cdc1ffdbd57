//! A disposable Redis for tests: [`RedisServer`] starts `redis-server` on a free loopback
//! port without persistence (`--save "" --appendonly no`), waits until it answers `PING`, and
//! stops it when dropped (or, for the [`shared`](RedisServer::shared) one, when the test
//! process exits). With `MCP_TEST_REDIS_URL` set (CI providing a Redis), that one is used
//! instead and nothing is started.
//!
//! Tests sharing a Redis keep apart by queue: [`RedisServer::queue_url`] names a fresh
//! queue (so a fresh key prefix) per call.
//!
//! Without `redis-server` on `PATH` and no `MCP_TEST_REDIS_URL`, starting one **fails** with
//! a message that says how to get it: Redis suites never skip.
//!
//! ```no_run
//! let redis = test_helpers::redis::RedisServer::shared();
//! let url = redis.queue_url("conformance");
//! assert!(url.starts_with("redis://") && url.contains("queue=conformance-"));
//! ```

use std::{
    io::{Read as _, Write as _},
    net::{TcpListener, TcpStream},
    process::{Child, Command, Stdio},
    sync::{
        OnceLock,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

/// How to get Redis, for failure messages.
///
/// ```
/// assert!(test_helpers::redis::HOW_TO_GET_REDIS.contains("apt-get install -y redis-server"));
/// ```
pub const HOW_TO_GET_REDIS: &str = "the Redis suites need a Redis: install redis-server \
     (Debian/Ubuntu: `sudo apt-get install -y redis-server`; macOS: `brew install redis`) so \
     that `redis-server` is on PATH, or point MCP_TEST_REDIS_URL at a disposable Redis \
     (redis://127.0.0.1:6379/15). These tests never skip.";

/// A Redis for tests: started here (and stopped on drop), or the one `MCP_TEST_REDIS_URL`
/// names.
///
/// ```no_run
/// let own = test_helpers::redis::RedisServer::start();
/// let url = own.queue_url("mine");
/// drop(own); // stops the server this call started
/// ```
#[derive(Debug)]
pub struct RedisServer {
    url: String,
    child: Option<Child>,
}

static SHARED: OnceLock<RedisServer> = OnceLock::new();
static QUEUES: AtomicU64 = AtomicU64::new(0);

impl RedisServer {
    /// The Redis of this test process, started on first use: every test of a binary shares
    /// it, each on its own [queue](Self::queue_url). It is stopped when the process exits.
    /// Panics (with [`HOW_TO_GET_REDIS`]) when there is none to be had.
    ///
    /// ```no_run
    /// let redis = test_helpers::redis::RedisServer::shared();
    /// # let _ = redis;
    /// ```
    pub fn shared() -> &'static RedisServer {
        SHARED.get_or_init(Self::start)
    }

    /// A Redis of one's own (`MCP_TEST_REDIS_URL`'s, when set), stopped when dropped.
    /// Panics (with [`HOW_TO_GET_REDIS`]) when there is none to be had.
    ///
    /// ```no_run
    /// let redis = test_helpers::redis::RedisServer::start();
    /// assert!(redis.url().starts_with("redis://"));
    /// ```
    pub fn start() -> RedisServer {
        if let Ok(url) = std::env::var("MCP_TEST_REDIS_URL")
            && !url.trim().is_empty()
        {
            return RedisServer {
                url: url.trim().trim_end_matches('/').to_owned(),
                child: None,
            };
        }
        let mut last_error = String::new();
        for _ in 0..3 {
            match Self::spawn() {
                Ok(server) => return server,
                Err(error) => last_error = error,
            }
        }
        panic!("could not start redis-server: {last_error}\n{HOW_TO_GET_REDIS}");
    }

    fn spawn() -> Result<RedisServer, String> {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map_err(|e| format!("no free loopback port: {e}"))?
            .port();
        // The shell stops the server when our end of its stdin closes, which happens when
        // this process exits however it exits: no server outlives its tests.
        let script = format!(
            "redis-server --port {port} --bind 127.0.0.1 --save '' --appendonly no \
             --daemonize no --loglevel warning & pid=$!; read _; kill $pid; wait $pid"
        );
        let child = Command::new("sh")
            .arg("-c")
            .arg(&script)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot run sh: {e}"))?;
        let mut server = RedisServer {
            url: format!("redis://127.0.0.1:{port}/0"),
            child: Some(child),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if ping(port) {
                return Ok(server);
            }
            if let Some(child) = server.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                return Err(format!(
                    "redis-server exited at once ({status}); is it installed?"
                ));
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "redis-server on port {port} did not answer PING in 10 s"
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The server's URL (`redis://127.0.0.1:<port>/0`, or `MCP_TEST_REDIS_URL`).
    ///
    /// ```no_run
    /// let url = test_helpers::redis::RedisServer::shared().url();
    /// assert!(url.starts_with("redis://"));
    /// ```
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A URL naming a queue no other call of this process got: `<url>?queue=<name>-<n>-<pid>`.
    ///
    /// ```no_run
    /// let redis = test_helpers::redis::RedisServer::shared();
    /// assert_ne!(redis.queue_url("a"), redis.queue_url("a"));
    /// ```
    pub fn queue_url(&self, name: &str) -> String {
        let n = QUEUES.fetch_add(1, Ordering::Relaxed);
        let separator = if self.url.contains('?') { '&' } else { '?' };
        format!(
            "{}{separator}queue={name}-{n}-{}",
            self.url,
            std::process::id()
        )
    }
}

/// Whether a Redis on loopback `port` answers `PING`.
fn ping(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
    if stream.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut reply = [0u8; 7];
    stream.read_exact(&mut reply).is_ok() && &reply == b"+PONG\r\n"
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // Closing stdin stops the server; then reap the shell.
            drop(child.stdin.take());
            let _ = child.wait();
        }
    }
}

impl RedisServer {
    /// A `redis-server` of one's own started with extra `args` (a persistence mode, a
    /// `maxmemory-policy`...), always started here: `MCP_TEST_REDIS_URL` is not used, since
    /// that server's settings are not ours to choose. A `--port <n>` among `args` picks the
    /// port (to start a server again where a stopped one listened, on the same `--dir`);
    /// otherwise a free one is taken. Stopped (SIGTERM) when dropped. Panics (with
    /// [`HOW_TO_GET_REDIS`]) when it cannot start.
    ///
    /// ```no_run
    /// let redis = test_helpers::redis::RedisServer::start_with(&["--maxmemory-policy", "allkeys-lru"]);
    /// assert!(redis.url().starts_with("redis://127.0.0.1:"));
    /// ```
    pub fn start_with(args: &[&str]) -> RedisServer {
        let chosen = args
            .iter()
            .position(|arg| *arg == "--port")
            .and_then(|i| args.get(i + 1))
            .and_then(|port| port.parse::<u16>().ok());
        let mut last_error = String::new();
        for _ in 0..3 {
            let port = match chosen {
                Some(port) => port,
                None => match TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()) {
                    Ok(addr) => addr.port(),
                    Err(error) => {
                        last_error = format!("no free loopback port: {error}");
                        continue;
                    }
                },
            };
            match Self::spawn_with(port, args) {
                Ok(server) => return server,
                Err(error) => last_error = error,
            }
        }
        panic!("could not start redis-server {args:?}: {last_error}\n{HOW_TO_GET_REDIS}");
    }

    fn spawn_with(port: u16, args: &[&str]) -> Result<RedisServer, String> {
        let quoted: Vec<String> = args
            .iter()
            .map(|arg| format!("'{}'", arg.replace('\'', r"'\''")))
            .collect();
        // Later settings win: `args` override the defaults before them.
        let script = format!(
            "redis-server --port {port} --bind 127.0.0.1 --save '' --appendonly no \
             --daemonize no --loglevel warning {} & pid=$!; read _; kill $pid; wait $pid",
            quoted.join(" ")
        );
        let child = Command::new("sh")
            .arg("-c")
            .arg(&script)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot run sh: {e}"))?;
        let mut server = RedisServer {
            url: format!("redis://127.0.0.1:{port}/0"),
            child: Some(child),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if ping(port) {
                return Ok(server);
            }
            if let Some(child) = server.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                return Err(format!("redis-server exited at once ({status})"));
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "redis-server on port {port} did not answer PING in 10 s"
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
