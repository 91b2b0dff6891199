//! Running a [`Job`]: the kinds of [`Probe`], and the values each gives
//! for one round.

use std::cell::Cell;
use std::sync::Once;

use super::{
    BLOCK_NS, CHURN_THREADS, FIRST_CALL_THREADS, Job, Rows, SAMPLE_NS, SCALING_BLOCK_NS, SLOW_BLOCK,
};
use crate::harness::{self, Block, Callback, Cpus, IntFn};
use crate::report::Summary;

/// How a job measures its rows; one run gives one sample of each.
pub enum Probe {
    /// Nanoseconds per call of each callback, on one thread, in blocks of
    /// the given number of calls taking turns: the median over the blocks.
    /// The first callback is the calibration chain; the first value is the
    /// share of its blocks that ran slow, in percent. Then, for each pair
    /// of callbacks (minuend, subtrahend), the median of their block by
    /// block differences in the cycles whose calibration block ran fast,
    /// and in those whose block ran slow (NaN where there was none): fast
    /// is within [`SLOW_BLOCK`] of the fastest calibration block of the run
    /// so far, which the cell keeps.
    Interleaved(Vec<(Callback, i64)>, Vec<(usize, usize)>, Cell<f64>),
    /// Nanoseconds per call of each callback, on a thread of its own, in
    /// blocks taking turns, without the calibration chain: the median over
    /// the blocks. (A per-call callback on a thread that a bound one
    /// attached would find it attached, so it takes turns only with a raw
    /// call, on a thread nothing binds.)
    Turns(Vec<(Callback, i64)>),
    /// Calls per second of one thread and of two, in alternating blocks of
    /// a fixed time, calling in chunks of this many calls, and the second
    /// over the first.
    Scaling(Callback, i64),
    /// Mean nanoseconds of a new thread's first call, per callback; with
    /// `Some(split)`, then the share of all the threads, in percent, that
    /// ran on the CPU their creator was on, and for each callback whose
    /// index `split` lists, the mean over its threads that ran on their
    /// creator's CPU and over the others (NaN where none did). The
    /// callbacks take turns, thread by thread, and run where [`Cpus`] says
    /// (NaN if that cannot be had).
    FirstCalls(Vec<IntFn>, Cpus, Option<Vec<usize>>),
    /// Microseconds per thread to create it, make one call, exit and join,
    /// per callback, and for two callbacks, the second's over the first's;
    /// the callbacks take turns, thread by thread.
    Churn(Vec<IntFn>),
}

impl Job {
    /// Runs `callbacks` in blocks taking turns on one thread, one block of
    /// each per cycle, each named after its row: nanoseconds per call of
    /// every block, per callback.
    fn take_turns(&self, rows: &Rows, callbacks: &[(Callback, i64)]) -> Vec<Vec<f64>> {
        let names: Vec<String> = self.rows.iter().map(|&row| rows.name(row)).collect();
        let blocks: Vec<Block<'_>> = callbacks
            .iter()
            .zip(&names)
            .map(|(&(callback, calls), name)| Block {
                name,
                callback,
                calls,
            })
            .collect();
        harness::interleaved(&blocks, (SAMPLE_NS / BLOCK_NS) as usize)
    }

    /// Runs the probe once; one value per row of [`Job::rows`].
    pub fn run(&self, rows: &Rows) -> Vec<f64> {
        let name = rows.name(self.rows[0]);
        match &self.probe {
            Probe::Interleaved(callbacks, pairs, fastest_so_far) => {
                let per_block = self.take_turns(rows, callbacks);
                // The first callback is the calibration chain: the share
                // of its blocks that ran slow says how much of the sample
                // the machine was slower; the others' medians leave out
                // blocks that lost their CPU for a while.
                let calibration = &per_block[0];
                let fastest = calibration.iter().copied().fold(f64::INFINITY, f64::min);
                let slow = calibration
                    .iter()
                    .filter(|&&ns| ns > SLOW_BLOCK * fastest)
                    .count();
                let mut values = vec![100.0 * slow as f64 / calibration.len() as f64];
                // For the split differences, against the whole run so far:
                // a sample taken all in a slow phase has no fast block.
                fastest_so_far.set(fastest_so_far.get().min(fastest));
                let fast: Vec<bool> = calibration
                    .iter()
                    .map(|&ns| ns <= SLOW_BLOCK * fastest_so_far.get())
                    .collect();
                values.extend(per_block.iter().map(|ns| Summary::of(ns).median));
                for &(minuend, subtrahend) in pairs {
                    for phase in [true, false] {
                        let differences: Vec<f64> = per_block[minuend]
                            .iter()
                            .zip(&per_block[subtrahend])
                            .zip(&fast)
                            .filter(|&(_, &fast)| fast == phase)
                            .map(|((a, b), _)| a - b)
                            .collect();
                        values.push(if differences.is_empty() {
                            f64::NAN
                        } else {
                            Summary::of(&differences).median
                        });
                    }
                }
                values
            }
            Probe::Turns(callbacks) => self
                .take_turns(rows, callbacks)
                .iter()
                .map(|ns| Summary::of(ns).median)
                .collect(),
            &Probe::Scaling(cb, calls) => {
                let cycles = (SAMPLE_NS / SCALING_BLOCK_NS) as usize;
                let rates = harness::scaling(&name, cb, calls, SCALING_BLOCK_NS, cycles);
                vec![
                    rates.one_thread,
                    rates.two_threads,
                    rates.two_threads / rates.one_thread,
                ]
            }
            &Probe::FirstCalls(ref cbs, cpus, ref split) => {
                match harness::first_calls(&name, cbs, FIRST_CALL_THREADS, cpus) {
                    Some(firsts) => first_call_values(&firsts, split.as_deref()),
                    None => {
                        static ONE_CPU: Once = Once::new();
                        static OTHER_CPU: Once = Once::new();
                        let (once, why) = match cpus {
                            Cpus::Other => (
                                &OTHER_CPU,
                                "first calls on the other CPU: skipped, the benchmark may run \
                                 on one CPU only or its threads' CPU affinity cannot be set",
                            ),
                            _ => (
                                &ONE_CPU,
                                "first calls on one CPU: skipped, the threads' CPU affinity \
                                 cannot be set",
                            ),
                        };
                        once.call_once(|| eprintln!("callgate-bench: {why}"));
                        let split = split.as_ref().map_or(0, |split| 1 + 2 * split.len());
                        vec![f64::NAN; cbs.len() + split]
                    }
                }
            }
            Probe::Churn(cbs) => churn_values(&harness::churn(&name, cbs, CHURN_THREADS)),
        }
    }

    /// The rows the job fills, in the order of [`Job::run`]'s values.
    pub fn rows(&self) -> &[usize] {
        &self.rows
    }
}

/// [`Probe::FirstCalls`]'s values from what the harness measured: the
/// mean first call per callback; with `Some(split)`, then the share of
/// all the threads that ran on their creator's CPU (percent) and for each
/// callback of `split`, the mean over those of its threads that did and
/// over the others.
fn first_call_values(firsts: &harness::FirstCalls, split: Option<&[usize]>) -> Vec<f64> {
    let means = firsts.ns.iter().map(|ns| mean(ns.iter().copied()));
    let Some(split) = split else {
        return means.collect();
    };
    let threads = firsts.on_creator_cpu.iter().map(Vec::len).sum::<usize>();
    let on_creator_cpu = firsts
        .on_creator_cpu
        .iter()
        .flatten()
        .filter(|&&on| on == Some(true))
        .count();
    let placed = |k: usize, on: bool| {
        mean(
            firsts.ns[k]
                .iter()
                .zip(&firsts.on_creator_cpu[k])
                .filter(|&(_, &placed)| placed == Some(on))
                .map(|(&ns, _)| ns),
        )
    };
    means
        .chain([on_creator_cpu as f64 * 100.0 / threads as f64])
        .chain(
            split
                .iter()
                .flat_map(|&k| [placed(k, true), placed(k, false)]),
        )
        .collect()
}

/// [`Probe::Churn`]'s values from the harness's total nanoseconds per
/// callback over [`CHURN_THREADS`] threads each: microseconds per thread,
/// and for two callbacks, the second's over the first's.
fn churn_values(total_ns: &[f64]) -> Vec<f64> {
    let mut us: Vec<f64> = total_ns
        .iter()
        .map(|ns| ns / CHURN_THREADS as f64 / 1000.0)
        .collect();
    if let &[first, second] = &us[..] {
        us.push(second / first);
    }
    us
}

/// The mean of `values`; NaN if there are none.
fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, count) = values.fold((0.0, 0_usize), |(sum, count), v| (sum + v, count + 1));
    if count == 0 {
        f64::NAN
    } else {
        sum / count as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_calls_split_by_the_creators_cpu() {
        let firsts = harness::FirstCalls {
            ns: vec![
                vec![100.0, 300.0, 200.0, 400.0],
                vec![10.0, 20.0, 30.0, 40.0],
            ],
            on_creator_cpu: vec![
                vec![Some(true), Some(false), Some(true), None],
                vec![Some(true), Some(true), Some(true), Some(true)],
            ],
        };
        let values = first_call_values(&firsts, Some(&[0, 1]));
        // The means, then 6 threads of 8 on their creator's CPU.
        assert_eq!(values[..3], [250.0, 25.0, 75.0]);
        // The first callback: 100 and 200 on it, 300 off it (the thread
        // whose CPU is unknown is in neither).
        assert_eq!(values[3..5], [150.0, 300.0]);
        // The second: every thread on it, none off it.
        assert_eq!(values[5], 25.0);
        assert!(values[6].is_nan());
        assert_eq!(values.len(), 7);
        assert_eq!(first_call_values(&firsts, Some(&[])).len(), 3);
        // Without a split, the means only.
        assert_eq!(first_call_values(&firsts, None), [250.0, 25.0]);
    }

    #[test]
    fn churn_gives_microseconds_per_thread_and_the_ratio_of_two() {
        let threads = CHURN_THREADS as f64;
        assert_eq!(
            churn_values(&[20_000.0 * threads, 22_000.0 * threads]),
            [20.0, 22.0, 1.1]
        );
        assert_eq!(churn_values(&[30_000.0 * threads]), [30.0]);
    }
}
