//! The synchronisation primitives of the logging layers (DecLog's log
//! queues, snapshots, pipeline and tickets; Taurus's log managers and
//! committed vector), in one place, so a test build can swap them for a
//! controlled scheduler's.
//!
//! Normally: `parking_lot`'s `Mutex`, `MutexGuard`, `Condvar` and `RwLock`,
//! and `std`'s atomics. With the `shuttle` feature: the same API over
//! `shuttle`'s primitives, so the shuttle tests (`strata-declog`'s and
//! `strata-txn`'s `tests/shuttle_*.rs`) explore the interleavings of every
//! lock, condition variable and atomic of the real code. Shuttle's
//! primitives work only inside a shuttle execution, so the feature is for
//! those tests alone; the rest of the test suite needs it off.
//!
//! Shuttle semantics worth knowing when reading a failure:
//! - atomics are sequentially consistent (every `Ordering` is `SeqCst`), so
//!   the tests find interleaving bugs, not weak-memory ones;
//! - [`Condvar::wait_for`] models a timed wait as one that may time out at
//!   any moment: it releases the lock, lets the scheduler run any thread, and
//!   relocks, reporting a timeout. That is always a legal behaviour of a timed
//!   wait, so code that relies on its timeout as a backstop is not reported
//!   as deadlocked; a lost wakeup shows only as a busy loop;
//! - [`Condvar::wait`] (untimed) blocks until notified, so a lost wakeup there
//!   is a deadlock, which shuttle reports.

#![forbid(unsafe_code)]

#[cfg(not(feature = "shuttle"))]
mod imp {
    // `RwLock` (and `thread`) complete the shim so code can move to them
    // with a `use` change; nothing uses them yet.
    #[allow(unused_imports)]
    pub use parking_lot::{
        Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard, WaitTimeoutResult,
    };

    /// Atomics, from `std`.
    pub mod atomic {
        #[allow(unused_imports)]
        pub use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
    }

    /// Thread-locals, from `std` (access them with `with`, the one method
    /// both keys have).
    #[allow(unused_imports)]
    pub use std::thread_local;

    /// Threads, from `std`. `DecLog` still spawns its logging threads with
    /// `std::thread` directly; Taurus's log managers use these.
    #[allow(dead_code)]
    pub mod thread {
        pub use std::thread::JoinHandle;

        /// Spawns a named thread (the logging threads).
        pub fn spawn_named<F>(name: String, f: F) -> std::io::Result<JoinHandle<()>>
        where
            F: FnOnce() + Send + 'static,
        {
            std::thread::Builder::new().name(name).spawn(f)
        }

        /// Sleeps (an idle logging thread between rounds).
        pub fn sleep(d: std::time::Duration) {
            std::thread::sleep(d)
        }

        pub fn yield_now() {
            std::thread::yield_now()
        }

        pub use std::thread::scope;
    }
}

#[cfg(feature = "shuttle")]
mod imp {
    use std::ops::{Deref, DerefMut};
    use std::sync::PoisonError;
    use std::time::Duration;

    /// Atomics, from `shuttle` (sequentially consistent).
    pub mod atomic {
        #[allow(unused_imports)]
        pub use shuttle::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
    }

    /// Thread-locals, from `shuttle` (one per shuttle thread: its threads
    /// share an OS thread, so `std`'s would be shared between them).
    #[allow(unused_imports)]
    pub use shuttle::thread_local;

    /// Threads, from `shuttle`.
    #[allow(dead_code)]
    pub mod thread {
        pub use shuttle::thread::JoinHandle;

        /// Spawns a named shuttle thread (the logging threads).
        pub fn spawn_named<F>(name: String, f: F) -> std::io::Result<JoinHandle<()>>
        where
            F: FnOnce() + Send + 'static,
        {
            shuttle::thread::Builder::new().name(name).spawn(f)
        }

        /// An idle thread's sleep: a yield to the scheduler (time does not
        /// pass in a shuttle execution; any thread may run meanwhile).
        pub fn sleep(_: std::time::Duration) {
            shuttle::thread::yield_now()
        }

        pub fn yield_now() {
            shuttle::thread::yield_now()
        }

        pub use shuttle::thread::scope;
    }

    /// A mutex with `parking_lot`'s API (no poisoning) over shuttle's.
    #[derive(Default)]
    pub struct Mutex<T> {
        inner: shuttle::sync::Mutex<T>,
    }

    impl<T> Mutex<T> {
        pub fn new(value: T) -> Self {
            Mutex { inner: shuttle::sync::Mutex::new(value) }
        }

        pub fn lock(&self) -> MutexGuard<'_, T> {
            MutexGuard {
                mutex: &self.inner,
                inner: Some(self.inner.lock().unwrap_or_else(PoisonError::into_inner)),
            }
        }

        pub fn into_inner(self) -> T {
            self.inner.into_inner().unwrap_or_else(PoisonError::into_inner)
        }

        /// The lock if it is free now, as `parking_lot`'s `try_lock`.
        pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
            let inner = match self.inner.try_lock() {
                Ok(g) => g,
                Err(shuttle::sync::TryLockError::Poisoned(e)) => e.into_inner(),
                Err(shuttle::sync::TryLockError::WouldBlock) => return None,
            };
            Some(MutexGuard { mutex: &self.inner, inner: Some(inner) })
        }
    }

    /// The guard of [`Mutex`]; a condition variable borrows it mutably while
    /// it waits, as `parking_lot`'s does.
    pub struct MutexGuard<'a, T> {
        mutex: &'a shuttle::sync::Mutex<T>,
        /// `None` only inside [`Condvar::wait`] (or if that wait unwound).
        inner: Option<shuttle::sync::MutexGuard<'a, T>>,
    }

    impl<T> Deref for MutexGuard<'_, T> {
        type Target = T;

        fn deref(&self) -> &T {
            self.inner.as_ref().expect("mutex guard used while its condvar wait unwound")
        }
    }

    impl<T> DerefMut for MutexGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            self.inner.as_mut().expect("mutex guard used while its condvar wait unwound")
        }
    }

    /// Whether a timed wait timed out (`parking_lot`'s type of that name).
    #[derive(Copy, Clone, Debug, PartialEq, Eq)]
    pub struct WaitTimeoutResult(bool);

    impl WaitTimeoutResult {
        #[allow(dead_code)]
        pub fn timed_out(&self) -> bool {
            self.0
        }
    }

    /// A condition variable with `parking_lot`'s API over shuttle's.
    #[derive(Default)]
    pub struct Condvar {
        inner: shuttle::sync::Condvar,
    }

    impl Condvar {
        pub fn new() -> Self {
            Condvar { inner: shuttle::sync::Condvar::new() }
        }

        /// Releases the lock, blocks until notified, relocks.
        pub fn wait<T>(&self, guard: &mut MutexGuard<'_, T>) {
            let held = guard.inner.take().expect("mutex guard is held");
            guard.inner = Some(self.inner.wait(held).unwrap_or_else(PoisonError::into_inner));
        }

        /// A timed wait that times out at a moment the scheduler picks (module
        /// comment): releases the lock, yields, relocks.
        pub fn wait_for<T>(&self, guard: &mut MutexGuard<'_, T>, _timeout: Duration) -> WaitTimeoutResult {
            drop(guard.inner.take().expect("mutex guard is held"));
            shuttle::thread::yield_now();
            guard.inner = Some(guard.mutex.lock().unwrap_or_else(PoisonError::into_inner));
            WaitTimeoutResult(true)
        }

        pub fn notify_one(&self) {
            self.inner.notify_one();
        }

        pub fn notify_all(&self) {
            self.inner.notify_all();
        }
    }

    /// A reader-writer lock with `parking_lot`'s API over shuttle's.
    #[allow(dead_code)]
    #[derive(Default)]
    pub struct RwLock<T> {
        inner: shuttle::sync::RwLock<T>,
    }

    #[allow(dead_code)]
    pub type RwLockReadGuard<'a, T> = shuttle::sync::RwLockReadGuard<'a, T>;
    #[allow(dead_code)]
    pub type RwLockWriteGuard<'a, T> = shuttle::sync::RwLockWriteGuard<'a, T>;

    #[allow(dead_code)]
    impl<T> RwLock<T> {
        pub fn new(value: T) -> Self {
            RwLock { inner: shuttle::sync::RwLock::new(value) }
        }

        pub fn read(&self) -> RwLockReadGuard<'_, T> {
            self.inner.read().unwrap_or_else(PoisonError::into_inner)
        }

        pub fn write(&self) -> RwLockWriteGuard<'_, T> {
            self.inner.write().unwrap_or_else(PoisonError::into_inner)
        }
    }
}

pub use imp::*;
