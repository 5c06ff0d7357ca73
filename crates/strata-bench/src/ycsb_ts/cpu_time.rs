//! Process CPU time (all threads, including threads that already exited),
//! the measure of DecLog's Table 2 ("the total CPU clock time taken by the
//! recovery process"): `CLOCK_PROCESS_CPUTIME_ID` through rustix's safe
//! wrapper, in seconds with nanosecond resolution.

use rustix::time::{clock_gettime, ClockId};

/// CPU seconds this process has used so far.
pub fn process_cpu_s() -> f64 {
    let t = clock_gettime(ClockId::ProcessCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_grows_with_work() {
        let start = process_cpu_s();
        let mut x = 1u64;
        let t = std::time::Instant::now();
        while t.elapsed() < std::time::Duration::from_millis(30) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let busy = process_cpu_s() - start;
        // Other tests run in this process too: only a lower bound holds.
        assert!(busy > 0.005, "30 ms of spinning used {busy} s of CPU");
        assert!(process_cpu_s() >= start + busy);
    }
}
