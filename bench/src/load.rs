//! How much of the machine other processes used during the measurement:
//! on a shared machine, a busy neighbour skews the figures, so the report
//! says so.

use std::time::Instant;

/// The machine's and this process's CPU time at one moment.
pub struct CpuClock {
    at: Instant,
    /// Seconds all CPUs spent running anything (user, system, interrupts).
    machine_busy: f64,
    /// Seconds the hypervisor ran something else on our virtual CPUs.
    machine_steal: f64,
    /// Seconds this process's threads ran.
    own: f64,
}

/// What other processes and the hypervisor took between two [`CpuClock`]s.
#[derive(Clone, Copy, Debug)]
pub struct Interference {
    /// The share of all CPUs' time other processes ran, 0 to 1.
    pub others: f64,
    /// The share of all CPUs' time the hypervisor withheld, 0 to 1.
    pub steal: f64,
}

impl CpuClock {
    /// Reads the clocks; `None` where `/proc/stat` is unavailable.
    pub fn now() -> Option<CpuClock> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let fields: Vec<f64> = stat
            .lines()
            .next()?
            .strip_prefix("cpu ")?
            .split_whitespace()
            .map(|field| field.parse().ok())
            .collect::<Option<_>>()?;
        // user nice system idle iowait irq softirq steal …, in clock ticks.
        let [user, nice, system, _idle, _iowait, irq, softirq, steal, ..] = fields[..] else {
            return None;
        };
        // SAFETY: `sysconf` has no preconditions.
        let ticks_per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
        let mut usage = core::mem::MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: `usage` is a valid out-pointer for one `rusage`.
        if unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) } != 0 {
            return None;
        }
        // SAFETY: getrusage succeeded, so it filled `usage`.
        let usage = unsafe { usage.assume_init() };
        let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        Some(CpuClock {
            at: Instant::now(),
            machine_busy: (user + nice + system + irq + softirq) / ticks_per_second,
            machine_steal: steal / ticks_per_second,
            own: seconds(usage.ru_utime) + seconds(usage.ru_stime),
        })
    }

    /// What others took of `cpus` CPUs from `self` until `later`.
    pub fn interference(&self, later: &CpuClock, cpus: usize) -> Interference {
        let capacity = later.at.duration_since(self.at).as_secs_f64() * cpus.max(1) as f64;
        let others = (later.machine_busy - self.machine_busy) - (later.own - self.own);
        Interference {
            others: (others / capacity).clamp(0.0, 1.0),
            steal: ((later.machine_steal - self.machine_steal) / capacity).clamp(0.0, 1.0),
        }
    }
}
