//! The benchmark callbacks in a `cdylib` loaded with `dlopen`: the hard
//! case, where a Rust `thread_local!` is general-dynamic TLS.

use core::ffi::{CStr, c_void};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::Callbacks;
use crate::harness::{CstrFn, DataFn, IntFn, SliceFn, WithData};
use crate::library::Library;

/// The fixture package (`fixture/`) and the file cargo builds from it.
const PACKAGE: &str = "callgate-bench-fixture";
const FILE: &str = "libcallgate_bench_fixture.so";

/// The fixture paddings, in bytes: `CALLGATE_BENCH_PAD` for each build of
/// [`placements`]. Padding moves every function of the fixture by that many
/// bytes, so the four builds put `bench_bound` at each 16-byte placement
/// within a 64-byte line.
pub const PADS: [usize; 4] = [0, 16, 32, 48];

/// Where the fixture library is: `$CALLGATE_BENCH_FIXTURE` if set, else
/// built with cargo (same profile as this binary) into this binary's
/// target directory.
pub fn locate() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os("CALLGATE_BENCH_FIXTURE") {
        return Ok(path.into());
    }
    let dirs = Dirs::of_this_program()?;
    build(&dirs.target, &[])?;
    Ok(dirs.profile.join(FILE))
}

/// Whether the fixture comes from `$CALLGATE_BENCH_FIXTURE` rather than
/// from cargo (then its variants are not built).
pub fn is_given() -> bool {
    std::env::var_os("CALLGATE_BENCH_FIXTURE").is_some()
}

/// Builds the fixture once per padding of [`PADS`] and copies each build to
/// `<target>/callgate-bench/<profile>/pad<N>/`; returns the paddings and
/// the copies' paths. The last build is the default one (no padding), so
/// the file [`locate`] returns is the default again afterwards.
pub fn placements() -> Result<Vec<(usize, PathBuf)>, String> {
    let dirs = Dirs::of_this_program()?;
    let mut copies = Vec::new();
    // Padding 0 last: it is also the default build.
    for &pad in PADS.iter().rev() {
        let env: &[(&str, OsString)] = if pad == 0 {
            &[]
        } else {
            &[("CALLGATE_BENCH_PAD", pad.to_string().into())]
        };
        build(&dirs.target, env)?;
        let dir = dirs.variants.join(format!("pad{pad}"));
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let copy = dir.join(FILE);
        std::fs::copy(dirs.profile.join(FILE), &copy)
            .map_err(|e| format!("cannot copy the fixture to {}: {e}", copy.display()))?;
        copies.push((pad, copy));
    }
    copies.reverse();
    Ok(copies)
}

/// Builds the fixture with `--cfg callgate_portable_tls` (callgate's
/// per-thread pointer in a `thread_local!`, not its own TLS slot) into a
/// target directory of its own, so the default builds are not rebuilt;
/// returns the library's path.
pub fn portable_tls() -> Result<PathBuf, String> {
    let dirs = Dirs::of_this_program()?;
    let target = dirs.target.join("callgate-bench-portable-tls");
    let mut rustflags = std::env::var_os("RUSTFLAGS").unwrap_or_default();
    rustflags.push(" --cfg callgate_portable_tls");
    build(&target, &[("RUSTFLAGS", rustflags)])?;
    Ok(target.join(dirs.profile_name).join(FILE))
}

/// This program's target directory: where cargo builds the fixture, and
/// where `bench/go/install.sh` puts Go by default.
pub fn target_dir() -> Result<PathBuf, String> {
    Ok(Dirs::of_this_program()?.target)
}

/// The directories the fixture builds go to.
struct Dirs {
    /// This program's target directory.
    target: PathBuf,
    /// Its profile directory (`release` or `debug`), where cargo puts the
    /// default build.
    profile: PathBuf,
    /// The profile directory's name.
    profile_name: &'static str,
    /// Where copies of the padded builds go.
    variants: PathBuf,
}

impl Dirs {
    fn of_this_program() -> Result<Dirs, String> {
        let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
        let profile = exe.parent().ok_or("this program has no directory")?;
        let target = profile.parent().ok_or("no target directory")?;
        let profile_name = if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        };
        Ok(Dirs {
            target: target.to_owned(),
            profile: profile.to_owned(),
            profile_name,
            variants: target.join("callgate-bench").join(profile_name),
        })
    }
}

/// Builds the fixture with cargo into `target_dir`, in this binary's
/// profile, with `env` set for cargo.
fn build(target_dir: &Path, env: &[(&str, OsString)]) -> Result<(), String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = Command::new(cargo);
    build
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["build", "--quiet", "--package", PACKAGE, "--target-dir"])
        .arg(target_dir)
        .env_remove("CALLGATE_BENCH_PAD")
        .envs(env.iter().map(|(key, value)| (key, value)));
    if !cfg!(debug_assertions) {
        build.arg("--release");
    }
    let status = build
        .status()
        .map_err(|e| format!("cannot run cargo to build {PACKAGE}: {e}"))?;
    if !status.success() {
        return Err(format!(
            "building {PACKAGE} failed ({status}); to load an existing build, set \
             CALLGATE_BENCH_FIXTURE=<path to {FILE}>"
        ));
    }
    Ok(())
}

/// Where glibc put a loaded library's TLS block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsPlace {
    /// In the static TLS reserve: allocated with every thread.
    Static,
    /// In dynamic TLS: allocated for a thread on its first access.
    Dynamic,
}

impl TlsPlace {
    /// `static` or `dynamic`, for the report.
    pub fn name(self) -> &'static str {
        match self {
            TlsPlace::Static => "static",
            TlsPlace::Dynamic => "dynamic",
        }
    }
}

/// Loads the library at `path` with `dlopen` (it stays loaded) and looks up
/// its callbacks.
pub fn load(path: &Path) -> Result<Callbacks, String> {
    load_placed(path).map(|(callbacks, _)| callbacks)
}

/// [`load`], and where the library's TLS block went (dynamic TLS for a
/// build without TLS descriptors: its thread-locals are general-dynamic).
pub fn load_placed(path: &Path) -> Result<(Callbacks, TlsPlace), String> {
    let library = Library::open(path)?;
    let place = tls_place(path, library.base()?)?.unwrap_or(TlsPlace::Dynamic);
    let int_fn = |name: &CStr| -> Result<IntFn, String> {
        let address = library.symbol(name)?;
        // SAFETY: the fixture defines `name` as
        // `extern "C" fn(i32) -> i32`, and the library is never unloaded.
        Ok(unsafe { core::mem::transmute::<*mut c_void, IntFn>(address) })
    };
    let cstr_fn = |name: &CStr| -> Result<CstrFn, String> {
        let address = library.symbol(name)?;
        // SAFETY: the fixture defines `name` as
        // `extern "C" fn(*const c_char, i32) -> i32`, and the library is
        // never unloaded.
        Ok(unsafe { core::mem::transmute::<*mut c_void, CstrFn>(address) })
    };
    let slice_fn = |name: &CStr| -> Result<SliceFn, String> {
        let address = library.symbol(name)?;
        // SAFETY: the fixture defines `name` as
        // `extern "C" fn(*const u8, usize) -> u32`, and the library is
        // never unloaded.
        Ok(unsafe { core::mem::transmute::<*mut c_void, SliceFn>(address) })
    };
    let closure = |name: &CStr| -> Result<WithData, String> {
        let address = library.symbol(name)?;
        // SAFETY: the fixture defines `name` as `unsafe extern "C"
        // fn(*mut *mut c_void) -> DataFn`, and the library is never
        // unloaded.
        let make = unsafe {
            core::mem::transmute::<*mut c_void, unsafe extern "C" fn(*mut *mut c_void) -> DataFn>(
                address,
            )
        };
        let mut data = core::ptr::null_mut();
        // SAFETY: `data` is room for one pointer.
        let function = unsafe { make(&mut data) };
        // SAFETY: `name` hands the closure to C for good: nothing frees
        // it, so `function` may be called with `data` from any thread for
        // the rest of the process.
        Ok(unsafe { WithData::new(function, data) })
    };
    let cycle = |name: &CStr| -> Result<WithData, String> {
        let address = library.symbol(name)?;
        // SAFETY: the fixture defines `name` as `extern "C" fn(*mut c_void,
        // i32) -> i32`, and the library is never unloaded.
        let function = unsafe { core::mem::transmute::<*mut c_void, DataFn>(address) };
        // SAFETY: `name` makes, calls and frees a closure of its own on
        // every call and ignores its data, so any thread may call it with
        // NULL any number of times.
        Ok(unsafe { WithData::new(function, core::ptr::null_mut()) })
    };
    let mutex = {
        let address = library.symbol(c"bench_mutex")?;
        // SAFETY: the fixture defines `bench_mutex` as `extern "C" fn(*mut
        // c_void, i32) -> i32`, and the library is never unloaded.
        let function = unsafe { core::mem::transmute::<*mut c_void, DataFn>(address) };
        // SAFETY: `bench_mutex` ignores its data and locks a static of its
        // own, so any thread may call it with NULL any number of times.
        unsafe { WithData::new(function, core::ptr::null_mut()) }
    };
    let user_data = {
        let address = library.symbol(c"bench_user_data")?;
        // SAFETY: the fixture defines `bench_user_data` as `unsafe extern
        // "C" fn(*mut c_void, i32) -> i32`, and the library is never
        // unloaded.
        let function = unsafe { core::mem::transmute::<*mut c_void, DataFn>(address) };
        let address = library.symbol(c"bench_user_data_state")?;
        // SAFETY: the fixture defines `bench_user_data_state` as
        // `extern "C" fn() -> *mut c_void`.
        let state =
            unsafe { core::mem::transmute::<*mut c_void, extern "C" fn() -> *mut c_void>(address) };
        // SAFETY: `bench_user_data_state` returns a never-written static of
        // the library, the state `bench_user_data` expects.
        unsafe { WithData::new(function, state()) }
    };
    let callbacks = Callbacks {
        raw: int_fn(c"bench_raw")?,
        raw_cstr: cstr_fn(c"bench_raw_cstr")?,
        bound: int_fn(c"bench_bound")?,
        per_call: int_fn(c"bench_per_call")?,
        local: int_fn(c"bench_local")?,
        cstr: cstr_fn(c"bench_cstr")?,
        raw_sum: slice_fn(c"bench_raw_sum")?,
        sum: slice_fn(c"bench_sum")?,
        closure: closure(c"bench_closure")?,
        closure_concurrent: closure(c"bench_closure_concurrent")?,
        once_cycle: cycle(c"bench_once_cycle")?,
        closure_cycle: cycle(c"bench_closure_cycle")?,
        mutex,
        user_data,
    };
    Ok((callbacks, place))
}

/// The floors in dynamic TLS, functions of the C library `c/tls_read.c`
/// (built by the build script), whose thread-locals are read through
/// their TLS descriptors.
#[derive(Clone, Copy)]
pub struct DynamicFloors {
    /// `bench_c_tls_read`: a read of a thread-local, the floor of a call.
    pub read: IntFn,
    /// `bench_c_bind_dynamic_tls`: the least a thread's first call does
    /// (`bench_c_bind`), with its slot in that library's block.
    pub bind: IntFn,
}

/// The floors in dynamic TLS ([`DynamicFloors`]). Loaded last, after the
/// copies that filled glibc's static TLS reserve; an error if the build
/// has no such library (another target) or its block went to static TLS
/// after all.
pub fn load_dynamic_floors() -> Result<DynamicFloors, String> {
    let path = env!("CALLGATE_BENCH_TLS_READ");
    if path.is_empty() {
        return Err("no TLS-descriptor C library on this target".to_owned());
    }
    let path = Path::new(path);
    let library = Library::open(path)?;
    match tls_place(path, library.base()?)? {
        Some(TlsPlace::Dynamic) => {}
        place => {
            return Err(format!(
                "its TLS block is not in dynamic TLS ({})",
                place.map_or("no TLS descriptor", TlsPlace::name)
            ));
        }
    }
    let (read, bind) = (
        library.symbol(c"bench_c_tls_read")?,
        library.symbol(c"bench_c_bind_dynamic_tls")?,
    );
    // SAFETY: `c/tls_read.c` defines both functions as `int32_t (int32_t)`
    // (`int (int)`), and the library is never unloaded.
    Ok(unsafe {
        DynamicFloors {
            read: core::mem::transmute::<*mut c_void, IntFn>(read),
            bind: core::mem::transmute::<*mut c_void, IntFn>(bind),
        }
    })
}

/// Loads copies of the library at `path` (distinct files in a temporary
/// directory, so glibc loads each one) until one lands in dynamic TLS, the
/// case of a plugin loaded after the static TLS reserve filled up; the
/// earlier copies stay loaded. Returns its callbacks and how many copies
/// were loaded in all.
pub fn load_in_dynamic_tls(path: &Path) -> Result<(Callbacks, usize), String> {
    const MAX_COPIES: usize = 64;
    let dir = std::env::temp_dir().join(format!("callgate-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
    let outcome = (|| {
        for copy in 1..=MAX_COPIES {
            let copy_path = dir.join(format!("copy_{copy:02}.so"));
            std::fs::copy(path, &copy_path)
                .map_err(|e| format!("copy {} to {}: {e}", path.display(), copy_path.display()))?;
            if let (callbacks, TlsPlace::Dynamic) = load_placed(&copy_path)? {
                return Ok((callbacks, copy));
            }
        }
        Err(format!(
            "{MAX_COPIES} copies of {} all got static TLS",
            path.display()
        ))
    })();
    // The loaded copies stay mapped after their files are gone.
    let _ = std::fs::remove_dir_all(&dir);
    outcome
}

/// The bytes of static TLS the library at `path` takes when glibc puts its
/// TLS block there: the size of its `PT_TLS` segment, rounded up to its
/// alignment, plus the alignment for the padding in front (0 without TLS).
pub fn static_tls_bytes(path: &Path) -> Result<usize, String> {
    let elf = Elf::read(path)?;
    // e_phoff, e_phentsize and e_phnum; p_type, p_memsz and p_align.
    let (table, entry, count) = (elf.u64_at(0x20)?, elf.u16_at(0x36)?, elf.u16_at(0x38)?);
    for i in 0..count {
        let header = table + i * entry;
        if elf.u32_at(header)? == u64::from(libc::PT_TLS) {
            let (size, align) = (
                elf.u64_at(header + 0x28)?,
                elf.u64_at(header + 0x30)?.max(1),
            );
            let bytes = size.div_ceil(align) * align + align;
            return usize::try_from(bytes).map_err(|_| elf.bad());
        }
    }
    Ok(0)
}

/// Where glibc put the TLS block of the library loaded from `path` with
/// its first byte at `base`, read from the library's first TLS descriptor
/// (callgate's slot), which glibc filled at load (`RTLD_NOW`): its argument
/// is the variable's offset from the thread pointer, negative, in static
/// TLS, and a pointer to a record on the heap in dynamic TLS. `None` if the
/// library has no TLS descriptor (a `portable_tls` build).
fn tls_place(path: &Path, base: *const u8) -> Result<Option<TlsPlace>, String> {
    const SHT_RELA: u64 = 4;
    const R_X86_64_TLSDESC: u64 = 36;
    if !cfg!(target_arch = "x86_64") {
        return Ok(None);
    }
    let elf = Elf::read(path)?;
    // r_offset and r_info of each `Elf64_Rela`.
    for (_, rela) in elf.entries(SHT_RELA)? {
        if elf.u32_at(rela + 8)? != R_X86_64_TLSDESC {
            continue;
        }
        let offset = usize::try_from(elf.u64_at(rela)?).map_err(|_| elf.bad())?;
        // SAFETY: the descriptor is two words at `r_offset` in the loaded
        // library (its GOT), which glibc filled at load and which stays
        // mapped: the library is never unloaded.
        let argument = unsafe { base.add(offset).cast::<isize>().add(1).read_unaligned() };
        return Ok(Some(if argument < 0 {
            TlsPlace::Static
        } else {
            TlsPlace::Dynamic
        }));
    }
    Ok(None)
}

/// The value of callgate's fast-path word (`__callgate_static_offset`) in
/// the library loaded from `path`: the slot's static offset once the fast
/// path is open, 0 while it is closed (every call then takes the
/// out-of-line path). `None` where the build has no such word (a
/// `portable_tls` build, another target) or no symbol table.
pub fn fast_path_word(path: &Path) -> Result<Option<isize>, String> {
    const SHT_SYMTAB: u64 = 2;
    const WORD: &[u8] = b"__callgate_static_offset\0";
    if !cfg!(all(target_arch = "x86_64", target_os = "linux")) {
        return Ok(None);
    }
    let library = Library::open(path)?;
    let elf = Elf::read(path)?;
    // sh_link of the symbol table (its string table); st_name and st_value
    // of each `Elf64_Sym`.
    for (section, symbol) in elf.entries(SHT_SYMTAB)? {
        let name = elf.section_offset(elf.u32_at(section + 0x28)?)? + elf.u32_at(symbol)?;
        if !elf.has_at(name, WORD) {
            continue;
        }
        let offset = usize::try_from(elf.u64_at(symbol + 8)?).map_err(|_| elf.bad())?;
        // SAFETY: the symbol is callgate's aligned 8-byte word in the loaded
        // library, which stays mapped (it is never unloaded); an aligned
        // load, which the runtime's atomic stores make whole.
        let word = unsafe { library.base()?.add(offset).cast::<isize>().read_volatile() };
        return Ok(Some(word));
    }
    Ok(None)
}

/// The bytes of an ELF file (64-bit, little-endian), read at offsets.
struct Elf<'a> {
    path: &'a Path,
    bytes: Vec<u8>,
}

impl<'a> Elf<'a> {
    fn read(path: &'a Path) -> Result<Elf<'a>, String> {
        let bytes =
            std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let elf = Elf { path, bytes };
        if !elf.bytes.starts_with(b"\x7fELF\x02\x01") {
            return Err(elf.bad());
        }
        Ok(elf)
    }

    fn bad(&self) -> String {
        format!(
            "{} is not a 64-bit little-endian ELF file",
            self.path.display()
        )
    }

    fn field<const N: usize>(&self, at: u64) -> Result<[u8; N], String> {
        usize::try_from(at)
            .ok()
            .and_then(|at| self.bytes.get(at..at.checked_add(N)?))
            .map(|bytes| bytes.try_into().expect("N bytes"))
            .ok_or_else(|| self.bad())
    }

    /// The file offset of section `index`'s contents (`sh_offset`; the
    /// section table is at `e_shoff`, `e_shentsize` bytes an entry).
    fn section_offset(&self, index: u64) -> Result<u64, String> {
        let (table, entry) = (self.u64_at(0x28)?, self.u16_at(0x3a)?);
        self.u64_at(table + index * entry + 0x18)
    }

    /// The entries of every section of type `sh_type`, as pairs of the
    /// section header's file offset and the entry's (`e_shoff`,
    /// `e_shentsize` and `e_shnum`; `sh_type`, `sh_offset`, `sh_size` and
    /// `sh_entsize`).
    fn entries(&self, sh_type: u64) -> Result<Vec<(u64, u64)>, String> {
        let (table, entry, count) = (self.u64_at(0x28)?, self.u16_at(0x3a)?, self.u16_at(0x3c)?);
        let mut entries = Vec::new();
        for i in 0..count {
            let section = table + i * entry;
            if self.u32_at(section + 4)? != sh_type {
                continue;
            }
            let (start, size) = (self.u64_at(section + 0x18)?, self.u64_at(section + 0x20)?);
            let step =
                usize::try_from(self.u64_at(section + 0x38)?.max(1)).map_err(|_| self.bad())?;
            entries.extend((start..start + size).step_by(step).map(|at| (section, at)));
        }
        Ok(entries)
    }

    /// True when the file holds `bytes` at `at`.
    fn has_at(&self, at: u64, bytes: &[u8]) -> bool {
        usize::try_from(at)
            .ok()
            .and_then(|at| self.bytes.get(at..at.checked_add(bytes.len())?))
            .is_some_and(|found| found == bytes)
    }

    fn u16_at(&self, at: u64) -> Result<u64, String> {
        Ok(u64::from(u16::from_le_bytes(self.field(at)?)))
    }

    fn u32_at(&self, at: u64) -> Result<u64, String> {
        Ok(u64::from(u32::from_le_bytes(self.field(at)?)))
    }

    fn u64_at(&self, at: u64) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.field(at)?))
    }
}
