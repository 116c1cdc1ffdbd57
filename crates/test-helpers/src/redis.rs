//! A disposable Redis for tests: [`RedisServer`] starts `redis-server` on a free loopback
//! port without persistence (`--save "" --appendonly no`), waits until it answers `PING`, and
//! stops it when dropped (or, for the [`shared`](RedisServer::shared) one, when the test
//! process exits). With `MCP_TEST_REDIS_URL` set (CI providing a Redis), that one is used
//! instead and nothing is started.
//!
//! Tests sharing a Redis keep apart by queue: [`RedisServer::queue_url`] names a fresh
//! queue (so a fresh key prefix) per call.
//!
//! [`RedisServer::start_tls`] starts one that speaks only TLS, with a certificate authority
//! generated for it ([`ca_file`](RedisServer::ca_file)), and [`RedisCluster::start`] a
//! three-master Redis Cluster. Each server's [`pid`](RedisServer::pid) lets a test freeze it
//! (`kill -STOP`) and thaw it again.
//!
//! Without `redis-server` on `PATH` and no `MCP_TEST_REDIS_URL`, starting one **fails** with
//! a message that says how to get it: Redis suites never skip.
//!
//! ```no_run
//! let redis = ferrymcp_test_helpers::redis::RedisServer::shared();
//! let url = redis.queue_url("conformance");
//! assert!(url.starts_with("redis://") && url.contains("queue=conformance-"));
//! ```

use std::{
    io::{BufRead as _, Read as _, Write as _},
    net::{TcpListener, TcpStream},
    path::{Path, PathBuf},
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
/// assert!(ferrymcp_test_helpers::redis::HOW_TO_GET_REDIS.contains("apt-get install -y redis-server"));
/// ```
pub const HOW_TO_GET_REDIS: &str = "the Redis suites need a Redis: install redis-server \
     (Debian/Ubuntu: `sudo apt-get install -y redis-server`; macOS: `brew install redis`) so \
     that `redis-server` is on PATH, or point MCP_TEST_REDIS_URL at a disposable Redis \
     (redis://127.0.0.1:6379/15). These tests never skip.";

/// A Redis for tests: started here (and stopped on drop), or the one `MCP_TEST_REDIS_URL`
/// names.
///
/// ```no_run
/// let own = ferrymcp_test_helpers::redis::RedisServer::start();
/// let url = own.queue_url("mine");
/// drop(own); // stops the server this call started
/// ```
#[derive(Debug)]
pub struct RedisServer {
    url: String,
    child: Option<Child>,
    /// The redis-server process (not the shell that owns it).
    pid: Option<u32>,
    /// The CA that signed a TLS server's certificate, PEM.
    ca_file: Option<PathBuf>,
}

static SHARED: OnceLock<RedisServer> = OnceLock::new();
static QUEUES: AtomicU64 = AtomicU64::new(0);

impl RedisServer {
    /// The Redis of this test process, started on first use: every test of a binary shares
    /// it, each on its own [queue](Self::queue_url). It is stopped when the process exits.
    /// Panics (with [`HOW_TO_GET_REDIS`]) when there is none to be had.
    ///
    /// ```no_run
    /// let redis = ferrymcp_test_helpers::redis::RedisServer::shared();
    /// # let _ = redis;
    /// ```
    pub fn shared() -> &'static RedisServer {
        SHARED.get_or_init(Self::start)
    }

    /// A Redis of one's own (`MCP_TEST_REDIS_URL`'s, when set), stopped when dropped.
    /// Panics (with [`HOW_TO_GET_REDIS`]) when there is none to be had.
    ///
    /// ```no_run
    /// let redis = ferrymcp_test_helpers::redis::RedisServer::start();
    /// assert!(redis.url().starts_with("redis://"));
    /// ```
    pub fn start() -> RedisServer {
        if let Ok(url) = std::env::var("MCP_TEST_REDIS_URL")
            && !url.trim().is_empty()
        {
            return RedisServer {
                url: url.trim().trim_end_matches('/').to_owned(),
                child: None,
                pid: None,
                ca_file: None,
            };
        }
        three_tries("redis-server", Self::spawn)
    }

    /// A Redis started here even when `MCP_TEST_REDIS_URL` is set: for tests that
    /// [freeze](Self::freeze) or stop their server. Stopped when dropped. Panics (with
    /// [`HOW_TO_GET_REDIS`]) when redis-server cannot be started.
    ///
    /// ```no_run
    /// let redis = ferrymcp_test_helpers::redis::RedisServer::start_local();
    /// assert!(redis.pid().is_some());
    /// ```
    pub fn start_local() -> RedisServer {
        three_tries("redis-server", Self::spawn)
    }

    fn spawn() -> Result<RedisServer, String> {
        let port = free_port()?;
        let (child, pid) = launch(
            &format!("--port {port} --bind 127.0.0.1 --save '' --appendonly no"),
            None,
        )?;
        let mut server = RedisServer {
            url: format!("redis://127.0.0.1:{port}/0"),
            child: Some(child),
            pid: Some(pid),
            ca_file: None,
        };
        server.wait_ready(port, || ping(port))?;
        Ok(server)
    }

    /// Waits until `ready` (polled), or the server exits, or 10 s pass.
    fn wait_ready(&mut self, port: u16, ready: impl Fn() -> bool) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if ready() {
                return Ok(());
            }
            if let Some(child) = self.child.as_mut()
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

    /// A Redis of one's own that speaks only TLS, on a free loopback port, with a server
    /// certificate (for `localhost` and `127.0.0.1`) signed by a certificate authority made
    /// for it: [`url`](Self::url) is `rediss://127.0.0.1:<port>/0` and
    /// [`ca_file`](Self::ca_file) the CA's PEM. Clients need no certificate. Stopped (and
    /// its files removed) when dropped or when the test process exits. Panics (with
    /// [`HOW_TO_GET_REDIS`]) when redis-server cannot be started.
    ///
    /// ```no_run
    /// let redis = ferrymcp_test_helpers::redis::RedisServer::start_tls();
    /// assert!(redis.url().starts_with("rediss://127.0.0.1:"));
    /// assert!(redis.ca_file().is_some());
    /// ```
    pub fn start_tls() -> RedisServer {
        three_tries("a TLS redis-server", Self::spawn_tls)
    }

    fn spawn_tls() -> Result<RedisServer, String> {
        let dir = temp_dir("tls")?;
        let pki = Pki::generate()?;
        let ca_file = dir.join("ca.pem");
        let write = |name: &str, pem: &str| {
            std::fs::write(dir.join(name), pem).map_err(|e| format!("cannot write {name}: {e}"))
        };
        write("ca.pem", &pki.ca_pem)?;
        write("server.pem", &pki.cert_pem)?;
        write("server.key", &pki.key_pem)?;
        let port = free_port()?;
        let d = dir.display();
        let (child, pid) = launch(
            &format!(
                "--port 0 --tls-port {port} --bind 127.0.0.1 --save '' --appendonly no \
                 --tls-cert-file {d}/server.pem --tls-key-file {d}/server.key \
                 --tls-ca-cert-file {d}/ca.pem --tls-auth-clients no"
            ),
            Some(&dir),
        )?;
        let mut server = RedisServer {
            url: format!("rediss://127.0.0.1:{port}/0"),
            child: Some(child),
            pid: Some(pid),
            ca_file: Some(ca_file.clone()),
        };
        server.wait_ready(port, || cli_ping(port, Some(&ca_file)))?;
        Ok(server)
    }

    /// The server's URL (`redis://127.0.0.1:<port>/0`, or `MCP_TEST_REDIS_URL`).
    ///
    /// ```no_run
    /// let url = ferrymcp_test_helpers::redis::RedisServer::shared().url();
    /// assert!(url.starts_with("redis://"));
    /// ```
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The port in the server's [URL](Self::url).
    ///
    /// ```no_run
    /// let redis = ferrymcp_test_helpers::redis::RedisServer::start();
    /// assert!(redis.url().contains(&format!(":{}/", redis.port())));
    /// ```
    pub fn port(&self) -> u16 {
        self.url
            .rsplit(':')
            .next()
            .and_then(|tail| tail.split('/').next())
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| panic!("no port in the Redis URL {}", self.url))
    }

    /// The PEM file of the certificate authority a [TLS](Self::start_tls) server's
    /// certificate is signed by; `None` for a plain one.
    ///
    /// ```no_run
    /// let redis = ferrymcp_test_helpers::redis::RedisServer::start_tls();
    /// let ca = std::fs::read_to_string(redis.ca_file().unwrap()).unwrap();
    /// assert!(ca.contains("BEGIN CERTIFICATE"));
    /// ```
    pub fn ca_file(&self) -> Option<&Path> {
        self.ca_file.as_deref()
    }

    /// The redis-server process id; `None` for `MCP_TEST_REDIS_URL`'s Redis.
    ///
    /// ```no_run
    /// let redis = ferrymcp_test_helpers::redis::RedisServer::start();
    /// assert!(redis.pid().is_some());
    /// ```
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Freezes the server (`SIGSTOP`): its connections stay open but nothing answers, as
    /// with a hung or partitioned Redis. [`thaw`](Self::thaw) (or dropping it) resumes it.
    /// Panics for `MCP_TEST_REDIS_URL`'s Redis, which is not ours to freeze.
    ///
    /// ```no_run
    /// let redis = ferrymcp_test_helpers::redis::RedisServer::start();
    /// redis.freeze();
    /// redis.thaw();
    /// ```
    pub fn freeze(&self) {
        self.signal("STOP");
    }

    /// Resumes a [frozen](Self::freeze) server (`SIGCONT`).
    ///
    /// ```no_run
    /// let redis = ferrymcp_test_helpers::redis::RedisServer::start();
    /// redis.freeze();
    /// redis.thaw();
    /// ```
    pub fn thaw(&self) {
        self.signal("CONT");
    }

    fn signal(&self, signal: &str) {
        let pid = self
            .pid
            .unwrap_or_else(|| panic!("no redis-server process of ours to send SIG{signal}"));
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(pid.to_string())
            .status()
            .unwrap_or_else(|e| panic!("cannot run kill: {e}"));
        assert!(status.success(), "kill -{signal} {pid} failed: {status}");
    }

    /// A URL naming a queue no other call of this process got: `<url>?queue=<name>-<n>-<pid>`.
    ///
    /// ```no_run
    /// let redis = ferrymcp_test_helpers::redis::RedisServer::shared();
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

/// A free loopback port (whose cluster bus port, 10000 above it, exists too).
fn free_port() -> Result<u16, String> {
    for _ in 0..50 {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map_err(|e| format!("no free loopback port: {e}"))?
            .port();
        if port < 55_000 && TcpListener::bind(("127.0.0.1", port + 10_000)).is_ok() {
            return Ok(port);
        }
    }
    Err("no free loopback port with a free port 10000 above it".to_owned())
}

/// A fresh directory under the system's temporary directory.
fn temp_dir(what: &str) -> Result<PathBuf, String> {
    static DIRS: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let dir = std::env::temp_dir().join(format!(
        "ferrymcp-redis-{what}-{}-{}-{nanos}",
        std::process::id(),
        DIRS.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    Ok(dir)
}

/// Starts `redis-server <args>` under a shell that stops it (and removes `dir`) when our end
/// of its stdin closes, which happens when this process exits however it exits: no server
/// outlives its tests. Returns the shell and the server's pid.
fn launch(args: &str, dir: Option<&Path>) -> Result<(Child, u32), String> {
    let cleanup = dir
        .map(|dir| format!("; rm -rf '{}'", dir.display()))
        .unwrap_or_default();
    // A frozen server (SIGSTOP) gets SIGCONT so that it can act on the SIGTERM.
    let script = format!(
        "redis-server {args} --daemonize no --loglevel warning >/dev/null & pid=$!; echo $pid; \
         read _; \
         kill $pid; kill -CONT $pid; wait $pid{cleanup}"
    );
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(&script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot run sh: {e}"))?;
    let mut line = String::new();
    if let Some(stdout) = child.stdout.take() {
        let _ = std::io::BufReader::new(stdout).read_line(&mut line);
    }
    match line.trim().parse() {
        Ok(pid) => Ok((child, pid)),
        Err(_) => {
            drop(child.stdin.take());
            let _ = child.wait();
            Err(format!(
                "the shell did not report redis-server's pid ({line:?})"
            ))
        }
    }
}

/// Whether `redis-cli` gets `PONG` from loopback `port` (over TLS, trusting `ca_file`, when
/// given).
fn cli_ping(port: u16, ca_file: Option<&Path>) -> bool {
    let mut cli = Command::new("redis-cli");
    cli.args(["-h", "127.0.0.1", "-p", &port.to_string()]);
    if let Some(ca) = ca_file {
        cli.arg("--tls").arg("--cacert").arg(ca);
    }
    cli.arg("PING")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).trim() == "PONG")
        .unwrap_or(false)
}

/// A CA and a server certificate it signed for `localhost` and `127.0.0.1`, PEM.
struct Pki {
    ca_pem: String,
    cert_pem: String,
    key_pem: String,
}

impl Pki {
    fn generate() -> Result<Pki, String> {
        use rcgen::{
            BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair,
            KeyUsagePurpose,
        };
        let fail = |what: &str, e: rcgen::Error| format!("cannot make the test {what}: {e}");
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(|e| fail("CA", e))?;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "ferrymcp test Redis CA");
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_key = KeyPair::generate().map_err(|e| fail("CA key", e))?;
        let ca = CertifiedIssuer::self_signed(params, ca_key).map_err(|e| fail("CA", e))?;
        let key = KeyPair::generate().map_err(|e| fail("server key", e))?;
        let cert = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .and_then(|params| params.signed_by(&key, &ca))
            .map_err(|e| fail("server certificate", e))?;
        Ok(Pki {
            ca_pem: ca.pem(),
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

/// A three-master Redis Cluster on free loopback ports, without persistence: started by
/// [`start`](Self::start), stopped (its processes and files gone) when dropped or when the
/// test process exits.
///
/// ```no_run
/// let cluster = ferrymcp_test_helpers::redis::RedisCluster::start();
/// assert!(cluster.url().starts_with("redis+cluster://127.0.0.1:"));
/// ```
#[derive(Debug)]
pub struct RedisCluster {
    nodes: Vec<RedisServer>,
    ports: Vec<u16>,
    url: String,
}

impl RedisCluster {
    /// Starts three `redis-server --cluster-enabled yes` masters, joins them with
    /// `redis-cli --cluster create … --cluster-replicas 0`, and returns once every node
    /// reports `cluster_state:ok`. Panics (with [`HOW_TO_GET_REDIS`]) when that fails.
    ///
    /// ```no_run
    /// let cluster = ferrymcp_test_helpers::redis::RedisCluster::start();
    /// assert_eq!(cluster.nodes().len(), 3);
    /// ```
    pub fn start() -> RedisCluster {
        three_tries("a Redis Cluster", Self::spawn)
    }

    fn spawn() -> Result<RedisCluster, String> {
        let mut nodes = Vec::new();
        let mut ports = Vec::new();
        for _ in 0..3 {
            let port = free_port()?;
            let dir = temp_dir("cluster")?;
            let d = dir.display();
            let (child, pid) = launch(
                &format!(
                    "--port {port} --bind 127.0.0.1 --save '' --appendonly no \
                     --cluster-enabled yes --cluster-config-file {d}/nodes.conf --dir {d}"
                ),
                Some(&dir),
            )?;
            let mut node = RedisServer {
                url: format!("redis://127.0.0.1:{port}/0"),
                child: Some(child),
                pid: Some(pid),
                ca_file: None,
            };
            node.wait_ready(port, || ping(port))?;
            nodes.push(node);
            ports.push(port);
        }
        let addresses: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
        let created = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&addresses)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run redis-cli: {e}"))?;
        if !created.status.success() {
            return Err(format!(
                "redis-cli --cluster create failed: {}{}",
                String::from_utf8_lossy(&created.stdout),
                String::from_utf8_lossy(&created.stderr)
            ));
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while !ports.iter().all(|&port| cluster_ok(port)) {
            if Instant::now() > deadline {
                return Err("the cluster did not reach cluster_state:ok in 30 s".to_owned());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(RedisCluster {
            url: format!("redis+cluster://{}/", addresses.join(",")),
            nodes,
            ports,
        })
    }

    /// The cluster's URL: `redis+cluster://127.0.0.1:<p1>,127.0.0.1:<p2>,127.0.0.1:<p3>/`.
    ///
    /// ```no_run
    /// let cluster = ferrymcp_test_helpers::redis::RedisCluster::start();
    /// assert_eq!(cluster.url().matches("127.0.0.1:").count(), 3);
    /// ```
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A URL naming a queue no other call of this process got, as
    /// [`RedisServer::queue_url`].
    ///
    /// ```no_run
    /// let cluster = ferrymcp_test_helpers::redis::RedisCluster::start();
    /// assert!(cluster.queue_url("a").contains("?queue=a-"));
    /// ```
    pub fn queue_url(&self, name: &str) -> String {
        let n = QUEUES.fetch_add(1, Ordering::Relaxed);
        format!("{}?queue={name}-{n}-{}", self.url, std::process::id())
    }

    /// The cluster's nodes (each a [`RedisServer`] with its own `redis://` URL and pid).
    ///
    /// ```no_run
    /// let cluster = ferrymcp_test_helpers::redis::RedisCluster::start();
    /// assert!(cluster.nodes().iter().all(|node| node.pid().is_some()));
    /// ```
    pub fn nodes(&self) -> &[RedisServer] {
        &self.nodes
    }

    /// The nodes' ports.
    ///
    /// ```no_run
    /// let cluster = ferrymcp_test_helpers::redis::RedisCluster::start();
    /// assert_eq!(cluster.ports().len(), 3);
    /// ```
    pub fn ports(&self) -> &[u16] {
        &self.ports
    }
}

/// Whether the cluster node on loopback `port` says `cluster_state:ok`.
fn cluster_ok(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
    if stream.write_all(b"CLUSTER INFO\r\n").is_err() {
        return false;
    }
    let mut reply = vec![0u8; 4096];
    let mut read = 0;
    // The bulk reply is well under 4 KiB; read until its first line says the state.
    while read < reply.len() {
        match stream.read(&mut reply[read..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => read += n,
        }
        let text = String::from_utf8_lossy(&reply[..read]);
        if text.contains("cluster_state:ok") {
            return true;
        }
        if text.contains("cluster_state:fail") {
            return false;
        }
    }
    false
}

/// What `spawn` starts, tried up to three times (a free port can be taken meanwhile); panics
/// with the last error and [`HOW_TO_GET_REDIS`] when every try failed.
fn three_tries<T>(what: &str, spawn: impl Fn() -> Result<T, String>) -> T {
    let mut last_error = String::new();
    for _ in 0..3 {
        match spawn() {
            Ok(started) => return started,
            Err(error) => last_error = error,
        }
    }
    panic!("could not start {what}: {last_error}\n{HOW_TO_GET_REDIS}");
}

/// Whether a Redis on loopback `port` answers `PING` with `PONG` (not `-LOADING`).
pub(crate) fn ping(port: u16) -> bool {
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
    /// let redis = ferrymcp_test_helpers::redis::RedisServer::start_with(&["--maxmemory-policy", "allkeys-lru"]);
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
        let (child, pid) = launch(
            &format!(
                "--port {port} --bind 127.0.0.1 --save '' --appendonly no {}",
                quoted.join(" ")
            ),
            None,
        )?;
        let mut server = RedisServer {
            url: format!("redis://127.0.0.1:{port}/0"),
            child: Some(child),
            pid: Some(pid),
            ca_file: None,
        };
        server.wait_ready(port, || ping(port))?;
        Ok(server)
    }
}
