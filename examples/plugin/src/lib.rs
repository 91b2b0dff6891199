//! The `plugin` example: a spell-checking plugin written in Rust, for a C
//! program that loads it with `dlopen`.
//!
//! * `include/plugin.h` is its C header, generated from the built library by
//!   `callgate-header`; `tests/hosts/header.rs` fails when it is stale (rewrite
//!   it with `CALLGATE_BLESS=1 cargo test -p callgate-example-plugin`);
//! * `host.c` is the C program: it `dlopen`s the library, looks each
//!   function up with `dlsym` as the header's pointer type, and reads errors
//!   through the error API;
//! * `cargo run -p callgate-example-plugin --bin plugin-host` runs it.

use std::collections::HashSet;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::fmt;
use std::sync::OnceLock;
use std::time::Duration;

use callgate::c_callback;

// `plugin_last_error_length`, `plugin_last_error_message`,
// `plugin_clear_last_error`.
callgate::export_error_api!(plugin);

/// The words `plugin_check` knows, once `load_dictionary` has run.
static DICTIONARY: OnceLock<HashSet<&'static str>> = OnceLock::new();

const WORDS: &str = "a about after all an and any are as at be because been but by can come \
                     could day do dog even first for fox from get give go have he her him his \
                     how i if in into is it its jumps just know lazy like look make me most my \
                     new no not now of on one only or other our out over people quick brown \
                     say see she so some take than that the their them then there these they \
                     think this time to two up us use want way we well what when which who \
                     will with work would year you your";

/// Loads the dictionary on its own thread: `dlopen` returns at once, and
/// the callbacks that need the dictionary wait for it at the init gate.
#[callgate::init(background)]
fn load_dictionary() {
    // Stands in for reading a large word list from disk.
    std::thread::sleep(Duration::from_millis(100));
    DICTIONARY.get_or_init(|| WORDS.split_whitespace().collect());
}

/// The plugin's name and version, a static string. Does not wait for the
/// dictionary.
#[c_callback(gate = skip)]
fn plugin_version() -> *const c_char {
    c"spell-checker 1.0 (Rust, callgate)".as_ptr()
}

/// The number of whitespace-separated words in `text`; -1 if `text` is
/// NULL or not UTF-8. Does not wait for the dictionary.
#[c_callback(gate = skip, on_error = -1)]
fn plugin_count_words(text: &str) -> i64 {
    text.split_whitespace().count() as i64
}

/// A spell-checking session: what it has checked so far. Opaque to C.
#[derive(Default)]
pub struct PluginSession {
    checked: u64,
    unknown: u64,
}

// `void plugin_session_free(PluginSession *value)`: takes back what
// `plugin_session_new` handed out.
callgate::export_free!(pub plugin_session_free: Box<PluginSession>);

/// Starts a session (NULL if that failed).
#[c_callback(gate = skip, free = plugin_session_free)]
fn plugin_session_new() -> Box<PluginSession> {
    Box::default()
}

/// Why `plugin_check` failed.
#[derive(Debug)]
pub enum CheckError {
    /// The text had no words.
    NoWords,
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckError::NoWords => f.write_str("there are no words to check"),
        }
    }
}

/// Checks the words of `text` against the dictionary, waiting for it to be
/// loaded: returns how many it knows, and stores how many it does not in
/// `*unknown` (unless `unknown` is NULL). -1 if `session` or `text` is
/// NULL, `text` is not UTF-8 or has no words; the last error says which.
#[c_callback(on_error = -1)]
fn plugin_check(
    session: &mut PluginSession,
    text: &str,
    unknown: Option<&mut u32>,
) -> Result<i64, CheckError> {
    let dictionary = DICTIONARY
        .get()
        .expect("the init gate lets no call through before load_dictionary finished");
    let mut known = 0;
    let mut missing = 0;
    for word in text.split_whitespace() {
        let word = word
            .trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase();
        if dictionary.contains(word.as_str()) {
            known += 1;
        } else {
            missing += 1;
        }
    }
    if known + missing == 0 {
        return Err(CheckError::NoWords);
    }
    session.checked += known + missing;
    session.unknown += missing;
    if let Some(unknown) = unknown {
        *unknown = u32::try_from(missing).unwrap_or(u32::MAX);
    }
    Ok(known as i64)
}

/// How many words the session has checked, storing how many of them the
/// dictionary did not know in `*unknown` (unless `unknown` is NULL); -1 if
/// `session` is NULL.
#[c_callback(gate = skip, on_error = -1)]
fn plugin_session_totals(session: &PluginSession, unknown: Option<&mut u64>) -> i64 {
    if let Some(unknown) = unknown {
        *unknown = session.unknown;
    }
    session.checked as i64
}

/// Orders two elements of an array of `const char *` by length, then
/// bytewise: a `qsort` comparator. Not exported: C gets it from
/// `plugin_word_order`.
#[c_callback(local, gate = skip, on_panic = 0)]
fn compare_by_length(a: *const c_void, b: *const c_void) -> c_int {
    // SAFETY: `qsort` passes pointers to two elements of the array it sorts;
    // `plugin_word_order` is documented for arrays of pointers to C strings.
    let (a, b) = unsafe {
        (
            CStr::from_ptr(*a.cast::<*const c_char>()),
            CStr::from_ptr(*b.cast::<*const c_char>()),
        )
    };
    let order = a
        .to_bytes()
        .len()
        .cmp(&b.to_bytes().len())
        .then_with(|| a.cmp(b));
    order as c_int
}

/// The comparator that makes `qsort` sort an array of `const char *` C
/// strings by length, then bytewise. Does not wait for the dictionary.
#[c_callback(gate = skip, on_panic = None)]
fn plugin_word_order() -> Option<extern "C" fn(a: *const c_void, b: *const c_void) -> c_int> {
    Some(compare_by_length)
}
