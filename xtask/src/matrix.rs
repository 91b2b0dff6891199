//! The matrix: every row of `cargo xtask test`, declared once. Each
//! [`Row`] names its build, what it guards, what it needs and its
//! commands; [`HOST_SETS`] names the C-host tests each kind of build runs.

/// What a row needs from the machine.
#[derive(Clone, Copy)]
pub enum Need {
    /// A program on `PATH`, and how to install it.
    Tool(&'static str, &'static str),
    /// A Rust target of the pinned toolchain.
    Target(&'static str),
    /// A rustup toolchain with these components ([`RUST_VERSION`] for the
    /// workspace's `rust-version`).
    Toolchain(&'static str, &'static [&'static str]),
    /// A file (a cross C library's loader, say), and how to install it.
    File(&'static str, &'static str),
}

pub struct Row {
    pub name: &'static str,
    /// What the row builds.
    pub build: &'static str,
    /// What the row guards.
    pub guards: &'static str,
    pub needs: &'static [Need],
    /// Shell commands, run in order from the workspace root with `bash`.
    /// `{hosts:SET}` stands for the C-host tests of that set (see
    /// [`HOST_SETS`]).
    pub commands: &'static [&'static str],
}

pub const CC: Need = Need::Tool("cc", "apt-get install build-essential");
pub const CXX: Need = Need::Tool("c++", "apt-get install g++");
/// The toolchain name that stands for the workspace's `rust-version`,
/// read from `Cargo.toml` (as `scripts/msrv.sh` reads it).
pub const RUST_VERSION: &str = "rust-version";

const NIGHTLY_SRC: Need = Need::Toolchain("nightly", &["rust-src"]);

/// The C-host tests (`tests/hosts`: each runs C programs against the
/// fixture library) that each kind of build runs.
pub const HOST_SETS: &[(&str, &str)] = &[
    // The release fixture and plugins.
    (
        "release",
        "abandon bad_input churn data depth dlclose fork init_background plugins signals teardown unwind",
    ),
    // Other builds of the fixture: all but the plugin hosts, which build
    // their own plugins, and the header's, which reads the debug build.
    (
        "builds",
        "abandon bad_input callbacks churn data depth dlclose fork init_background signals teardown unwind values",
    ),
    // The edition 2021 build: as `builds`, but for the dlclose and unwind
    // hosts, which look for the library's own name.
    (
        "edition",
        "abandon bad_input callbacks churn data depth fork init_background signals teardown values",
    ),
    // The hosts that `dlopen` the fixture, but for the dlclose and unwind
    // hosts: the dynamic TLS pass.
    (
        "dlopen",
        "abandon bad_input churn depth fork init_background signals teardown",
    ),
    // The portable slot.
    (
        "portable",
        "abandon bad_input churn data depth dlclose fork init_background signals teardown",
    ),
    // The programs that link the fixture.
    ("linked", "callbacks data values"),
];

/// Rows whose builds and files are their own (a target directory each;
/// the aarch64 row takes cargo's lock on the debug build only to make the
/// test programs it runs):
/// on a machine with two cores or more they run one after another beside
/// the other rows, which leave a core idle while they link, run a test
/// program or wait for one.
pub const BESIDE: &[&str] = &[
    "aarch64",
    "loom",
    "miri",
    "msrv",
    "package",
    "portable-tls",
    "windows",
];

/// The matrix. The first row is what `cargo test --workspace` runs. The
/// release fixture's variants build in one target directory,
/// `target/variants`, which shares what does not change between them (the
/// proc macros, the build scripts); each row tests the library its build
/// just wrote there.
pub const ROWS: &[Row] = &[
    Row {
        name: "debug",
        build: "the workspace, debug",
        guards: "unit, integration, compile-fail and doc tests; the guide's examples and tutorial; the C hosts against the debug fixture; the fast paths' machine code in the release benchmark fixture (tests/codegen); a C library installed by `cargo callgate`",
        needs: &[CC, CXX],
        commands: &["cargo test --workspace"],
    },
    Row {
        name: "release",
        build: "the fixture and plugins, release",
        guards: "what users ship: the compiler drops landing pads and frames the debug build keeps",
        needs: &[CC, CXX],
        commands: &[
            "CALLGATE_FIXTURE_PROFILE=release cargo test -p callgate-dev --test hosts -- {hosts:release}",
        ],
    },
    Row {
        name: "dynamic-tls",
        build: "the release fixture, its TLS block in dynamic TLS",
        guards: "the descriptor-call fast path of a library loaded after others filled glibc's static TLS reserve",
        needs: &[CC],
        commands: &[
            "CALLGATE_TEST_DYNAMIC_TLS=1 CALLGATE_FIXTURE_PROFILE=release cargo test -p callgate-dev --test hosts -- {hosts:dlopen}",
        ],
    },
    Row {
        name: "edition-2021",
        build: "the fixture's sources as an edition 2021 crate, release",
        guards: "the attributes' code in the edition most users compile it in (temporaries drop at other points)",
        needs: &[CC],
        commands: &[
            "scripts/edition-2021.sh target/fixture-edition-2021",
            "CALLGATE_TEST_FIXTURE=$PWD/target/fixture-edition-2021/target/release/libcallgate_fixture.so CALLGATE_FIXTURE_PROFILE=release cargo test -p callgate-dev --test hosts -- {hosts:edition}",
        ],
    },
    Row {
        name: "fat-lto",
        build: "the fixture with fat LTO and one codegen unit",
        guards: "the runtime optimised together with the callbacks, across crates",
        needs: &[CC, CXX],
        commands: &[
            "CARGO_PROFILE_RELEASE_LTO=fat CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1 cargo build --quiet -p callgate-fixture --release --target-dir target/variants",
            "CALLGATE_TEST_FIXTURE=$PWD/target/variants/release/libcallgate_fixture.so CALLGATE_FIXTURE_PROFILE=release cargo test -p callgate-dev --test hosts -- {hosts:builds}",
        ],
    },
    Row {
        name: "staticlib",
        build: "the fixture as a staticlib, linked into the C programs",
        guards: "callbacks in the executable: its TLS, its init",
        needs: &[CC],
        commands: &[
            "cargo rustc --quiet -p callgate-fixture --release --target-dir target/variants --crate-type staticlib",
            "CALLGATE_TEST_STATICLIB=$PWD/target/variants/release/libcallgate_fixture.a CALLGATE_FIXTURE_PROFILE=release cargo test -p callgate-dev --test hosts -- {hosts:linked}",
        ],
    },
    Row {
        name: "opt-s",
        build: "the fixture at opt-level \"s\"",
        guards: "a size-optimised profile, which inlines less (unwinds out of `extern \"C\"` functions may abort there)",
        needs: &[CC, CXX],
        commands: &[
            "CARGO_PROFILE_RELEASE_OPT_LEVEL=s cargo build --quiet -p callgate-fixture --release --target-dir target/variants",
            "CALLGATE_TEST_FIXTURE=$PWD/target/variants/release/libcallgate_fixture.so CALLGATE_FIXTURE_OPT_LEVEL=s CALLGATE_FIXTURE_PROFILE=release cargo test -p callgate-dev --test hosts -- {hosts:builds}",
        ],
    },
    Row {
        name: "opt-z",
        build: "the fixture at opt-level \"z\"",
        guards: "the smallest profile, as opt-s",
        needs: &[CC, CXX],
        commands: &[
            "CARGO_PROFILE_RELEASE_OPT_LEVEL=z cargo build --quiet -p callgate-fixture --release --target-dir target/variants",
            "CALLGATE_TEST_FIXTURE=$PWD/target/variants/release/libcallgate_fixture.so CALLGATE_FIXTURE_OPT_LEVEL=z CALLGATE_FIXTURE_PROFILE=release cargo test -p callgate-dev --test hosts -- {hosts:builds}",
        ],
    },
    Row {
        name: "mixed-profile",
        build: "the fixture in a dev build with callgate optimised (`[profile.dev.package.\"*\"] opt-level = 3`)",
        guards: "the call path is compiled at the user's level: not forced inline into unoptimised code",
        needs: &[CC, CXX],
        commands: &[
            "cargo build --quiet -p callgate-fixture --config 'profile.dev.package.callgate.opt-level=3' --target-dir target/fixture-mixed",
            "CALLGATE_TEST_FIXTURE=$PWD/target/fixture-mixed/debug/libcallgate_fixture.so cargo test -p callgate-dev --test hosts -- depth::",
        ],
    },
    Row {
        name: "panic-abort",
        build: "the fixture with `panic = \"abort\"` and no unwind tables",
        guards: "the runtime's `asm!` assembles without unwind tables; a panic aborts",
        needs: &[CC],
        commands: &[
            "RUSTFLAGS='-C force-unwind-tables=no -C panic=abort' cargo build --quiet -p callgate-fixture --release --target x86_64-unknown-linux-gnu --target-dir target/variants",
            "CALLGATE_TEST_FIXTURE=$PWD/target/variants/x86_64-unknown-linux-gnu/release/libcallgate_fixture.so CALLGATE_FIXTURE_PROFILE=release cargo test -p callgate-dev --test hosts -- a_panic_returns_the_fallback_or_with_the_abort_strategy_aborts",
        ],
    },
    Row {
        name: "portable-tls",
        build: "the workspace with the portable `thread_local!` slot; the fixture in release",
        guards: "the slot of targets other than x86-64 glibc Linux and mingw-w64 Windows",
        needs: &[CC],
        commands: &[
            "RUSTFLAGS='--cfg callgate_portable_tls' cargo test -p callgate --lib --target-dir target/portable-tls",
            "RUSTFLAGS='--cfg callgate_portable_tls' CALLGATE_FIXTURE_PROFILE=release cargo test -p callgate-dev --target-dir target/portable-tls --test hosts -- {hosts:portable}",
            "RUSTFLAGS='--cfg callgate_portable_tls' CALLGATE_FIXTURE_PROFILE=release cargo test -p callgate-dev --target-dir target/portable-tls --test runtime -- fork_",
            "RUSTFLAGS='--cfg callgate_portable_tls' CALLGATE_FIXTURE_PROFILE=release cargo test -p callgate-dev --target-dir target/portable-tls --test gate -- fork_contended::",
        ],
    },
    Row {
        name: "loom",
        build: "the runtime's lock-free core under loom",
        guards: "the orderings of the gate, the free list, the turns and the hazard words",
        needs: &[],
        commands: &[
            "RUSTFLAGS='--cfg callgate_loom' LOOM_MAX_PREEMPTIONS=3 cargo test -p callgate --lib --release --target-dir target/loom",
        ],
    },
    Row {
        name: "musl",
        build: "the fixture and the C hosts for x86_64-unknown-linux-musl",
        guards: "musl's loader, its pthread keys, its exit without unwinding",
        needs: &[
            Need::Target("x86_64-unknown-linux-musl"),
            Need::Tool("musl-gcc", "apt-get install musl-tools"),
        ],
        commands: &["scripts/musl.sh"],
    },
    Row {
        name: "aarch64",
        build: "the runtime (debug), the release fixture and the C hosts for aarch64-unknown-linux-gnu, run under qemu-user",
        guards: "the slot at its static TLS offset and in dynamic TLS, the fast paths' machine code (tests/codegen) and the hosts on another architecture",
        needs: &[
            Need::Target("aarch64-unknown-linux-gnu"),
            Need::Tool(
                "aarch64-linux-gnu-gcc",
                "apt-get install gcc-aarch64-linux-gnu",
            ),
            Need::Tool(
                "aarch64-linux-gnu-g++",
                "apt-get install g++-aarch64-linux-gnu",
            ),
            Need::Tool(
                "aarch64-linux-gnu-objdump",
                "apt-get install binutils-aarch64-linux-gnu",
            ),
            Need::Tool("qemu-aarch64", "apt-get install qemu-user"),
            Need::File(
                "/usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1",
                "apt-get install libc6-dev-arm64-cross",
            ),
        ],
        commands: &["scripts/aarch64.sh"],
    },
    Row {
        name: "windows",
        build: "the runtime and the fixture DLL for x86_64-pc-windows-gnu, run under wine",
        guards: "FLS exit callbacks, fibers, deferred init, LoadLibrary/FreeLibrary",
        needs: &[
            Need::Target("x86_64-pc-windows-gnu"),
            Need::Target("x86_64-pc-windows-msvc"),
            Need::Target("aarch64-pc-windows-msvc"),
            Need::Tool(
                "x86_64-w64-mingw32-gcc",
                "apt-get install gcc-mingw-w64-x86-64-win32",
            ),
            Need::Tool("wine", "apt-get install wine64"),
        ],
        commands: &["scripts/windows.sh"],
    },
    Row {
        name: "msrv",
        build: "the published crates with the declared rust-version",
        guards: "that they build with the declared rust-version (Linux, the portable slot, Windows)",
        needs: &[Need::Toolchain(
            RUST_VERSION,
            &["rust-std-x86_64-pc-windows-gnu"],
        )],
        commands: &["scripts/msrv.sh"],
    },
    Row {
        name: "miri",
        build: "the runtime's unit tests and generated trampolines under Miri",
        guards: "the unsafe code's aliasing (Stacked and Tree Borrows), data races, leaks",
        needs: &[Need::Toolchain("nightly", &["rust-src", "miri"])],
        commands: &["scripts/miri.sh"],
    },
    Row {
        name: "sanitizers",
        build: "the fixture and hosts with ThreadSanitizer and AddressSanitizer",
        guards: "data races and memory errors the C hosts can provoke",
        needs: &[NIGHTLY_SRC, CC],
        commands: &["scripts/sanitizers.sh"],
    },
    Row {
        name: "valgrind",
        build: "the debug fixture and test programs under memcheck and helgrind",
        guards: "no leak, no invalid access, no race the annotations do not explain",
        needs: &[Need::Tool("valgrind", "apt-get install valgrind"), CC],
        commands: &["scripts/valgrind.sh"],
    },
    Row {
        name: "bench",
        build: "the benchmark and its fixtures, one round",
        guards: "the benchmark still runs and writes its four tables and its JSON",
        needs: &[CC],
        commands: &["scripts/bench-smoke.sh"],
    },
    Row {
        name: "package",
        build: "the published crates from their packaged sources",
        guards: "that what `cargo publish` would upload builds",
        needs: &[],
        commands: &[
            // Cargo reuses a registry crate's build whatever its sources:
            // this version's extracted sources and builds go first.
            "rm -rf \"${CARGO_HOME:-$HOME/.cargo}\"/registry/src/*/callgate-{macros-,header-,}0.1.0 target/package-verify/debug/.fingerprint/callgate-* target/package-verify/debug/deps/*callgate*",
            "cargo package -p callgate-macros -p callgate -p callgate-header --target-dir target/package-verify --quiet",
        ],
    },
];

/// `command` with each `{hosts:SET}` replaced by the set's test filters.
pub fn expand(command: &str) -> String {
    let mut expanded = command.to_owned();
    for (set, tests) in HOST_SETS {
        let filters: Vec<String> = tests
            .split_whitespace()
            .map(|test| format!("{test}::"))
            .collect();
        expanded = expanded.replace(&format!("{{hosts:{set}}}"), &filters.join(" "));
    }
    assert!(
        !expanded.contains("{hosts:"),
        "an unknown set of host tests in `{command}`"
    );
    expanded
}
