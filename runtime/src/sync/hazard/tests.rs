use super::*;

const OBJECT: usize = 0x1000;

#[test]
fn an_unannounced_object_is_destroyed_at_once() {
    let (hazards, retirement) = ([Hazard::new(), Hazard::new()], Retirement::new());
    // SAFETY: one thread plays every part.
    unsafe {
        assert!(hazards[0].announce(0x2000, 0));
        assert!(retirement.retire(OBJECT, &hazards));
        assert_eq!(hazards[0].withdraw(), 0x2000);
    }
}

#[test]
fn the_last_holder_destroys() {
    let (hazards, retirement) = ([Hazard::new(), Hazard::new()], Retirement::new());
    // SAFETY: one thread plays every part.
    unsafe {
        assert!(hazards[0].announce(OBJECT, 0));
        assert!(hazards[1].announce(OBJECT, MARKED));
        assert!(!hazards[1].announce(0x2000, 0), "the word is taken");
        assert!(!retirement.retire(OBJECT, &hazards));
        let first = hazards[1].withdraw();
        assert_eq!(Hazard::object(first), OBJECT);
        assert!(Hazard::deferred(first) && first & MARKED != 0);
        assert!(!retirement.release());
        let last = hazards[0].withdraw();
        assert!(Hazard::deferred(last) && last & MARKED == 0);
        assert!(retirement.release());
        assert_eq!(hazards[0].withdraw(), 0);
    }
}

#[test]
fn a_call_that_withdrew_is_not_waited_for() {
    let (hazards, retirement) = ([Hazard::new()], Retirement::new());
    // SAFETY: one thread plays every part.
    unsafe {
        assert!(hazards[0].announce(OBJECT, 0));
        assert!(!Hazard::deferred(hazards[0].withdraw()));
        assert!(retirement.retire(OBJECT, &hazards));
    }
}

#[test]
fn calls_on_many_threads_and_a_retirement_destroy_once() {
    use std::sync::atomic::AtomicU32;
    use std::sync::{Arc, Barrier};
    // Fewer under Miri, which interprets every access.
    for round in 0..if cfg!(miri) { 20 } else { 200 } {
        let hazards: Arc<Vec<Hazard>> = Arc::new((0..4).map(|_| Hazard::new()).collect());
        let retirement = Arc::new(Retirement::new());
        let destroyed = Arc::new(AtomicU32::new(0));
        let start = Arc::new(Barrier::new(5));
        let holders: Vec<_> = (0..4)
            .map(|i| {
                let (hazards, retirement, destroyed, start) = (
                    Arc::clone(&hazards),
                    Arc::clone(&retirement),
                    Arc::clone(&destroyed),
                    Arc::clone(&start),
                );
                std::thread::spawn(move || {
                    // SAFETY: thread `i` owns word `i`; announced
                    // before the retirement starts (the barrier).
                    unsafe { assert!(hazards[i].announce(OBJECT, 0)) };
                    start.wait();
                    for _ in 0..(round % 7) * 10 {
                        std::hint::spin_loop();
                    }
                    // SAFETY: as above.
                    let withdrawn = unsafe { hazards[i].withdraw() };
                    // SAFETY: deferred to, released once.
                    if Hazard::deferred(withdrawn) && unsafe { retirement.release() } {
                        destroyed.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        start.wait();
        // SAFETY: retired once; every word is in `hazards`.
        if unsafe { retirement.retire(OBJECT, hazards.iter()) } {
            destroyed.fetch_add(1, Ordering::Relaxed);
        }
        for holder in holders {
            holder.join().unwrap();
        }
        assert_eq!(destroyed.load(Ordering::Relaxed), 1, "round {round}");
    }
}
