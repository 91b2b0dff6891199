//! Loading the fixture's builds for one run: the `cdylib`, its padded and
//! `portable_tls` builds, and glibc's static TLS reserve sized so that the
//! `cdylib` and the padded builds get static TLS.

use std::path::PathBuf;

use crate::plan::Placement;
use crate::{Callbacks, fixture};

/// Finds (or builds) and loads the `cdylib` fixture; returns its callbacks,
/// where its TLS block went, and where it is.
pub fn load_fixture() -> Result<(Callbacks, fixture::TlsPlace, PathBuf), String> {
    let path = fixture::locate()?;
    let (callbacks, place) = fixture::load_placed(&path)?;
    Ok((callbacks, place, path))
}

/// glibc's tunable for the static TLS it keeps for libraries loaded later.
const STATIC_TLS_TUNABLE: &str = "glibc.rtld.optional_static_tls";

/// The fixture builds whose TLS blocks should be in static TLS: the
/// `cdylib` and its padded builds, so that the placements differ from it
/// in code layout only.
const STATIC_TLS_BUILDS: usize = 1 + fixture::PADS.len();

/// Sizes glibc's optional static TLS reserve for the fixture's builds.
///
/// callgate reads its slot through a TLS descriptor, so a `cdylib` loads
/// wherever its TLS block goes: glibc puts the block in static TLS when the
/// optional reserve ([`STATIC_TLS_TUNABLE`], 512 bytes by default) has room
/// for it, in dynamic TLS otherwise. The [`STATIC_TLS_BUILDS`] builds of
/// `path` should all get static TLS, and the copy measured in dynamic TLS,
/// loaded after them, should find the reserve full: unless the tunable is
/// set already, this program runs itself again (`exec`, same arguments)
/// with a reserve of exactly that many of `path`'s blocks. If that fails,
/// it goes on with the reserve it has; the report says where the blocks
/// went.
pub fn reserve_static_tls(path: &std::path::Path) -> Result<(), String> {
    use std::os::unix::process::CommandExt;
    let tunables = std::env::var("GLIBC_TUNABLES").unwrap_or_default();
    if !cfg!(target_env = "gnu") || tunables.contains(STATIC_TLS_TUNABLE) {
        return Ok(());
    }
    let Ok(exe) = std::env::current_exe() else {
        return Ok(());
    };
    let reserve = STATIC_TLS_BUILDS * fixture::static_tls_bytes(path)?;
    let setting = format!("{STATIC_TLS_TUNABLE}={reserve}");
    let tunables = if tunables.is_empty() {
        setting
    } else {
        format!("{tunables}:{setting}")
    };
    let error = std::process::Command::new(exe)
        .args(std::env::args_os().skip(1))
        .env("GLIBC_TUNABLES", tunables)
        .exec();
    eprintln!("callgate-bench: cannot run again with a sized static TLS reserve: {error}");
    Ok(())
}

/// Loads the fixture's padded builds and reads where each put
/// `bench_bound` within its 64-byte line. `Err` (a line for the report) if
/// they cannot be built; a build whose TLS block went to dynamic TLS adds
/// a line to `notes`. Each build's padding, path and TLS place go to
/// `loaded`.
pub fn load_placements(
    notes: &mut Vec<String>,
    loaded: &mut Vec<(usize, PathBuf, fixture::TlsPlace)>,
) -> Result<Vec<Placement>, String> {
    if fixture::is_given() {
        return Err("placements skipped: CALLGATE_BENCH_FIXTURE names a build".to_owned());
    }
    let mut placements = Vec::new();
    for (pad, path) in fixture::placements()? {
        let (callbacks, place) = fixture::load_placed(&path)?;
        if place == fixture::TlsPlace::Dynamic {
            notes.push(format!(
                "note: the build padded by {pad} got dynamic TLS (the static reserve was full)"
            ));
        }
        let offset = callbacks.bound as usize % 64;
        loaded.push((pad, path, place));
        placements.push(Placement {
            pad,
            offset,
            callbacks,
        });
    }
    placements.sort_by_key(|placement| placement.pad);
    Ok(placements)
}

/// Builds and loads the fixture with `--cfg callgate_portable_tls`.
pub fn load_portable_tls() -> Result<Callbacks, String> {
    if fixture::is_given() {
        return Err("portable_tls skipped: CALLGATE_BENCH_FIXTURE names a build".to_owned());
    }
    fixture::load(&fixture::portable_tls()?)
}
