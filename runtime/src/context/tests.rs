use super::*;

/// Runs an outermost call on `context` from `anchor` that returns at
/// once, and gives its token.
fn call(context: &Context, anchor: &Anchor) -> u64 {
    // SAFETY: the test thread owns `context`, which is idle; `anchor`
    // outlives the call.
    unsafe {
        assert!(context.enter_outermost(anchor), "idle");
        let token = context.outer_mark().token();
        context.leave_outermost();
        token
    }
}

/// A call nested in the one running on `context`, in a frame below
/// the caller's, that returns at once.
#[inline(never)]
fn nested_call(context: &Context) {
    let inner = Anchor::new();
    // SAFETY: the test thread owns `context`, inside a call whose
    // anchor is above this frame; the call leaves before `inner` goes.
    unsafe {
        let start = context.enter(&inner);
        assert_eq!(start, 1, "nested");
        assert!(!context.leave(start));
    }
}

#[test]
fn outermost_calls_share_a_token_until_one_may_leave_something_behind() {
    let context = Context::new();
    let anchor = Anchor::new();
    let first = call(&context, &anchor);
    assert_eq!(call(&context, &anchor), first, "nothing left behind");

    // A call inside which a nested call started (and returned).
    // SAFETY: the test thread owns `context`; the call leaves before
    // its anchor goes.
    let during = unsafe {
        assert!(context.enter_outermost(&anchor), "idle");
        let during = context.outer_mark().token();
        nested_call(&context);
        assert_eq!(context.outer_mark().token(), during, "still running");
        context.leave_outermost();
        during
    };
    assert_eq!(during, first);
    let after_nested = call(&context, &anchor);
    assert_ne!(after_nested, first, "the next call's token is new");

    // An abandoned call: the next one, from the same place, finds it
    // recorded, tells it is gone (its anchor now holds another token)
    // and becomes the outermost call with a new token.
    // SAFETY: as above; the abandoned call never leaves.
    let (abandoned, next) = unsafe {
        assert!(context.enter_outermost(&anchor), "idle");
        let abandoned = context.outer_mark().token();
        let start = context.enter(&anchor);
        assert_eq!(start, 0, "the abandoned call is gone");
        let next = context.outer_mark().token();
        assert!(!context.leave(start));
        (abandoned, next)
    };
    assert_eq!(abandoned, after_nested);
    assert_ne!(next, abandoned);
    // A call through `leave` advances the token too.
    let last = call(&context, &anchor);
    assert_ne!(last, next);

    // Handed on: every earlier call is over for the next owner, and
    // the next owner's calls are not.
    // SAFETY: the test thread owns `context`; no call runs on it.
    unsafe { context.give_up() };
    let mark = Mark::new(0, last);
    // SAFETY: as above, asked from inside an outermost call.
    unsafe {
        assert!(context.enter_outermost(&anchor), "idle");
        let now = context.outer_mark().token();
        assert!(now > last);
        assert!(context.holder_is_gone(mark));
        assert!(!context.holder_is_gone(Mark::new(0, now)));
        context.leave_outermost();
    }
}

/// A nested call abandoned inside an outermost one: the next nested
/// call from the same place finds it gone and remembers it, and its
/// mark is claimed once. A running call's mark is never claimed, and
/// another context's nested calls get other tokens.
#[test]
fn a_nested_call_found_gone_is_claimed_once() {
    // One array: the outermost call's anchor lies above the nested
    // calls' anchor, as a frame further up would.
    let anchors = [Anchor::new(), Anchor::new()];
    let (inner, outer) = (&anchors[0], &anchors[1]);
    let context = Context::new();
    // SAFETY: the test thread owns `context`; the calls that leave do
    // so before the anchors go, and the abandoned one never leaves.
    let abandoned = unsafe {
        assert!(context.enter_outermost(outer), "idle");
        assert_eq!(context.enter(inner), 1, "nested");
        let abandoned = inner.current_mark();
        assert!(!context.claim_gone(abandoned), "still running");
        // Its anchor now holds the next call's token: it is gone.
        assert_eq!(context.enter(inner), 1, "nested in the outermost call");
        let next = inner.current_mark();
        assert_ne!(next.token(), abandoned.token());
        assert!(!context.claim_gone(next), "running");
        assert!(context.claim_gone(abandoned));
        assert!(!context.claim_gone(abandoned), "claimed once");
        assert!(!context.leave(1));
        context.leave_outermost();
        abandoned
    };
    let other = Context::new();
    // SAFETY: as above.
    unsafe {
        assert!(other.enter_outermost(outer), "idle");
        assert_eq!(other.enter(inner), 1, "nested");
        assert_ne!(inner.current_mark().token(), abandoned.token());
        assert!(!other.leave(1));
        other.leave_outermost();
    }
}

#[test]
fn a_local_looked_up_inside_a_call_advances_the_token_after_it() {
    #[derive(Default)]
    struct Value;
    impl Local for Value {}
    static KEY: LocalKey<Value> = LocalKey::new();
    let context = Context::new();
    let anchor = Anchor::new();
    let first = call(&context, &anchor);
    // SAFETY: the test thread owns `context`; the call leaves before
    // its anchor goes, and its value is dropped before.
    unsafe {
        assert!(context.enter_outermost(&anchor), "idle");
        drop(context.local(&KEY, 1, &anchor).expect("free"));
        context.leave_outermost();
    }
    assert_ne!(call(&context, &anchor), first);
}

/// A `Closure::new` turn noted outside a call keeps the context from a
/// `fork` child's free list (`may_be_in_a_call`) until every note ends,
/// a nested call's too; the context changing hands forgets the note of a
/// call abandoned before it ended it.
#[cfg(unix)]
#[test]
fn a_turn_noted_outside_a_call_keeps_the_context_from_a_fork_child() {
    let context = Context::new();
    // SAFETY: this test's thread owns the context, on which no call runs.
    unsafe {
        assert!(!context.may_be_in_a_call());
        context.held.note_turn();
        assert!(context.may_be_in_a_call());
        context.held.note_turn();
        context.held.end_turn();
        assert!(context.may_be_in_a_call(), "the outer note still holds");
        context.held.end_turn();
        assert!(!context.may_be_in_a_call());
        context.held.note_turn();
        context.give_up();
        assert!(!context.may_be_in_a_call());
    }
}
