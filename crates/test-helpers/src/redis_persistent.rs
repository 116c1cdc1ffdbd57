//! [`PersistentRedis`]: a `redis-server` of the test's own with append-only persistence,
//! which the test can kill (`SIGKILL`), stop gracefully (`SIGTERM`) and start again on the
//! same port and data directory, to see what survives a restart.
//!
//! Unlike [`RedisServer`](crate::redis::RedisServer), it never uses `MCP_TEST_REDIS_URL`: a
//! restart needs a server this process owns. Without `redis-server` on `PATH` starting one
//! panics with [`HOW_TO_GET_REDIS`].
//!
//! ```no_run
//! use ferrymcp_test_helpers::redis_persistent::{AppendFsync, PersistentRedis};
//! let mut redis = PersistentRedis::start(AppendFsync::Always);
//! let url = redis.url(); // redis://127.0.0.1:<port>/0
//! redis.kill(); // SIGKILL: only what the AOF holds survives
//! redis.restart(); // same port, same directory: the AOF is replayed
//! # let _ = url;
//! ```

use std::{
    io::Write as _,
    net::{SocketAddr, TcpListener, TcpStream},
    path::PathBuf,
    process::{Child, Command, Stdio},
    sync::atomic::{AtomicU64, Ordering},
    time::{Duration, Instant},
};

use crate::redis::{HOW_TO_GET_REDIS, ping};

static DIRS: AtomicU64 = AtomicU64::new(0);

/// When Redis writes the append-only file to disk (`appendfsync`).
///
/// ```
/// use ferrymcp_test_helpers::redis_persistent::AppendFsync;
/// assert_eq!(AppendFsync::Always.as_str(), "always");
/// assert_eq!(AppendFsync::EverySec.as_str(), "everysec");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppendFsync {
    /// After every write: nothing acknowledged is lost, even on `SIGKILL`.
    Always,
    /// Once a second: a crash may lose the last second; a graceful stop loses nothing.
    EverySec,
}

impl AppendFsync {
    /// The value of Redis' `appendfsync` setting.
    ///
    /// ```
    /// assert_eq!(ferrymcp_test_helpers::redis_persistent::AppendFsync::Always.as_str(), "always");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            AppendFsync::Always => "always",
            AppendFsync::EverySec => "everysec",
        }
    }
}

/// A restartable `redis-server` with AOF on, on a fixed loopback port and a data directory
/// of its own (removed, and the server stopped, when dropped).
///
/// ```no_run
/// let redis = ferrymcp_test_helpers::redis_persistent::PersistentRedis::start(
///     ferrymcp_test_helpers::redis_persistent::AppendFsync::EverySec,
/// );
/// assert!(redis.url().starts_with("redis://127.0.0.1:"));
/// ```
#[derive(Debug)]
pub struct PersistentRedis {
    port: u16,
    dir: PathBuf,
    fsync: AppendFsync,
    child: Option<Child>,
}

impl PersistentRedis {
    /// Starts `redis-server --appendonly yes --appendfsync <fsync>` on a free loopback port
    /// in a fresh directory, and returns once it answers `PING`. Panics when it cannot.
    ///
    /// ```no_run
    /// use ferrymcp_test_helpers::redis_persistent::{AppendFsync, PersistentRedis};
    /// let redis = PersistentRedis::start(AppendFsync::Always);
    /// # let _ = redis;
    /// ```
    pub fn start(fsync: AppendFsync) -> PersistentRedis {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .unwrap_or_else(|e| panic!("no free loopback port: {e}"))
            .port();
        let dir = std::env::temp_dir().join(format!(
            "ferrymcp-redis-aof-{}-{}",
            std::process::id(),
            DIRS.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
        let mut redis = PersistentRedis {
            port,
            dir,
            fsync,
            child: None,
        };
        redis.restart();
        redis
    }

    /// `redis://127.0.0.1:<port>/0`.
    ///
    /// ```no_run
    /// # let redis = ferrymcp_test_helpers::redis_persistent::PersistentRedis::start(
    /// #     ferrymcp_test_helpers::redis_persistent::AppendFsync::Always);
    /// assert!(redis.url().ends_with("/0"));
    /// ```
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// The server's address (the same across restarts).
    ///
    /// ```no_run
    /// # let redis = ferrymcp_test_helpers::redis_persistent::PersistentRedis::start(
    /// #     ferrymcp_test_helpers::redis_persistent::AppendFsync::Always);
    /// assert!(redis.addr().ip().is_loopback());
    /// ```
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// Whether the server runs (this value started it and it has not been stopped).
    ///
    /// ```no_run
    /// # let mut redis = ferrymcp_test_helpers::redis_persistent::PersistentRedis::start(
    /// #     ferrymcp_test_helpers::redis_persistent::AppendFsync::Always);
    /// redis.kill();
    /// assert!(!redis.is_running());
    /// ```
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// Kills the server with `SIGKILL` and waits until it is gone: no chance to flush.
    ///
    /// ```no_run
    /// # let mut redis = ferrymcp_test_helpers::redis_persistent::PersistentRedis::start(
    /// #     ferrymcp_test_helpers::redis_persistent::AppendFsync::Always);
    /// redis.kill();
    /// ```
    pub fn kill(&mut self) {
        self.signal("KILL");
    }

    /// Stops the server with `SIGTERM` (it flushes its AOF) and waits until it is gone.
    ///
    /// ```no_run
    /// # let mut redis = ferrymcp_test_helpers::redis_persistent::PersistentRedis::start(
    /// #     ferrymcp_test_helpers::redis_persistent::AppendFsync::EverySec);
    /// redis.stop();
    /// redis.restart();
    /// ```
    pub fn stop(&mut self) {
        self.signal("TERM");
    }

    /// Starts the server again (stopping it first with `SIGTERM` if it runs) on the same
    /// port and directory, and returns once it answers `PING` (its AOF loaded). Panics if
    /// it does not within 30 s.
    ///
    /// ```no_run
    /// # let mut redis = ferrymcp_test_helpers::redis_persistent::PersistentRedis::start(
    /// #     ferrymcp_test_helpers::redis_persistent::AppendFsync::Always);
    /// redis.kill();
    /// redis.restart();
    /// assert!(redis.is_running());
    /// ```
    pub fn restart(&mut self) {
        if self.child.is_some() {
            self.stop();
        }
        // The shell runs the server and, on one line from stdin, sends it that signal (TERM
        // when stdin just closes, as when this process dies): no server outlives its test.
        let script = format!(
            "redis-server --port {port} --bind 127.0.0.1 --dir '{dir}' --appendonly yes \
             --appendfsync {fsync} --save '' --daemonize no --loglevel warning & pid=$!; \
             read signal; kill -${{signal:-TERM}} $pid; wait $pid 2>/dev/null",
            port = self.port,
            dir = self.dir.display(),
            fsync = self.fsync.as_str(),
        );
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(&script)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run sh: {e}\n{HOW_TO_GET_REDIS}"));
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if ping(self.port) {
                break;
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!(
                    "redis-server on port {} exited at once ({status})\n{HOW_TO_GET_REDIS}",
                    self.port
                );
            }
            assert!(
                Instant::now() < deadline,
                "redis-server on port {} did not answer PING in 30 s",
                self.port
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        self.child = Some(child);
    }

    fn signal(&mut self, signal: &str) {
        if let Some(mut child) = self.child.take() {
            if let Some(mut stdin) = child.stdin.take() {
                let _ = stdin.write_all(format!("{signal}\n").as_bytes());
            }
            let _ = child.wait();
        }
        // The port is free once nothing answers there.
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(self.addr()).is_ok() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for PersistentRedis {
    fn drop(&mut self) {
        self.signal("KILL");
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
