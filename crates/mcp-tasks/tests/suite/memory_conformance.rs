//! The backend conformance suite (`ferrymcp_test_helpers::backend_conformance`) against the embedded
//! [`MemoryBackend`]: its deadlines follow tokio's clock, so the lease and TTL cases run on a
//! paused clock.

use std::time::Duration;

use ferrymcp_tasks::backend::memory::MemoryBackend;
use ferrymcp_test_helpers::backend_conformance::Harness;

/// The lease the backend under test grants.
const LEASE: Duration = Duration::from_secs(30);

ferrymcp_test_helpers::backend_conformance_tests!(|| {
    Harness::new(MemoryBackend::with_lease(LEASE), LEASE)
        .on_paused_clock()
        .with_limits(|limits| MemoryBackend::with_lease(LEASE).with_limits(limits))
});
