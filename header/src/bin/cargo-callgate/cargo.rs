//! Driving cargo: which package and library to build (`cargo metadata`),
//! and the build itself (`cargo rustc`), whose JSON messages name the
//! files it made.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::json::Json;

/// The cargo options `cargo callgate` passes on.
#[derive(Debug, Default)]
pub struct CargoArgs {
    /// `-p`, `--package`.
    pub package: Option<String>,
    /// `--manifest-path`.
    pub manifest_path: Option<PathBuf>,
    /// `--target`.
    pub target: Option<String>,
    /// `--release`.
    pub release: bool,
    /// `--profile`.
    pub profile: Option<String>,
    /// Everything else, as given: `--features`, `--target-dir`, `--locked` …
    pub forwarded: Vec<String>,
}

impl CargoArgs {
    /// Options that take a value, and flags, cargo understands as
    /// `cargo rustc` does.
    const WITH_VALUE: [&'static str; 5] = ["--features", "-F", "--target-dir", "--jobs", "-j"];
    const FLAGS: [&'static str; 8] = [
        "--all-features",
        "--no-default-features",
        "--locked",
        "--offline",
        "--frozen",
        "--quiet",
        "-q",
        "--verbose",
    ];

    /// Takes `arg`, with its value from `rest`, if it is a cargo option.
    pub fn take(
        &mut self,
        arg: &str,
        rest: &mut impl Iterator<Item = String>,
    ) -> Result<bool, String> {
        let mut value = || rest.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg {
            "-p" | "--package" => self.package = Some(value()?),
            "--manifest-path" => self.manifest_path = Some(value()?.into()),
            "--target" => self.target = Some(value()?),
            "--release" | "-r" => self.release = true,
            "--profile" => self.profile = Some(value()?),
            arg if Self::WITH_VALUE.contains(&arg) => {
                let value = value()?;
                self.forwarded.extend([arg.to_owned(), value]);
            }
            arg if Self::FLAGS.contains(&arg) || arg.starts_with("--features=") => {
                self.forwarded.push(arg.to_owned());
            }
            _ => return Ok(false),
        }
        Ok(true)
    }
}

/// The package whose library is built, from `cargo metadata`.
#[derive(Debug)]
pub struct Package {
    pub name: String,
    pub version: String,
    pub description: String,
    /// The library target's name: `libNAME.so`, `-lNAME`.
    pub lib_name: String,
    pub crate_types: Vec<String>,
}

impl Package {
    /// The version in the shared library's soname, as cargo-c names it:
    /// `1` for 1.2.3, `0.2` for 0.2.3, `0.0.3` for 0.0.3.
    pub fn soname_version(&self) -> String {
        let [major, minor, patch] = self.version_numbers();
        match (major, minor) {
            ("0", "0") => format!("0.0.{patch}"),
            ("0", minor) => format!("0.{minor}"),
            (major, _) => major.to_owned(),
        }
    }

    /// `MAJOR.MINOR.PATCH`, without pre-release or build metadata.
    pub fn full_version(&self) -> String {
        self.version_numbers().join(".")
    }

    fn version_numbers(&self) -> [&str; 3] {
        let core = self.version.split(['-', '+']).next().unwrap_or_default();
        let mut numbers = core.split('.');
        [(); 3].map(|()| numbers.next().unwrap_or("0"))
    }
}

/// What a build made.
#[derive(Debug)]
pub struct Built {
    pub package: Package,
    pub cdylib: Option<PathBuf>,
    pub staticlib: Option<PathBuf>,
    /// What a program linking the staticlib links too (`-lgcc_s -lc` …).
    pub native_static_libs: String,
}

impl Built {
    /// The directory of the built library.
    pub fn out_dir(&self) -> &Path {
        self.cdylib
            .as_deref()
            .or(self.staticlib.as_deref())
            .and_then(Path::parent)
            .unwrap_or(Path::new("."))
    }

    /// The library to read declarations from: the cdylib, else the
    /// staticlib.
    pub fn library(&self) -> &Path {
        self.cdylib
            .as_deref()
            .or(self.staticlib.as_deref())
            .unwrap_or(Path::new(""))
    }
}

fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// The package `args` select, and its library.
pub fn package(args: &CargoArgs) -> Result<Package, String> {
    let mut command = cargo();
    command.args(["metadata", "--format-version", "1", "--no-deps"]);
    if let Some(manifest) = &args.manifest_path {
        command.arg("--manifest-path").arg(manifest);
    }
    let output = command
        .stderr(Stdio::inherit())
        .output()
        .map_err(|error| format!("cannot run cargo: {error}"))?;
    if !output.status.success() {
        return Err("`cargo metadata` failed".to_owned());
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let metadata = Json::parse(&text)?;
    let packages = metadata
        .get("packages")
        .map(Json::items)
        .unwrap_or_default();
    let field = |package: &Json, key: &str| {
        package
            .get(key)
            .and_then(Json::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let chosen = match (&args.package, &args.manifest_path) {
        (Some(name), _) => packages.iter().find(|p| field(p, "name") == *name),
        (None, Some(manifest)) => {
            let manifest = std::fs::canonicalize(manifest).unwrap_or(manifest.clone());
            packages
                .iter()
                .find(|p| Path::new(&field(p, "manifest_path")) == manifest)
        }
        (None, None) => {
            let cwd = std::env::current_dir().map_err(|error| error.to_string())?;
            packages
                .iter()
                .filter(|p| {
                    Path::new(&field(p, "manifest_path"))
                        .parent()
                        .is_some_and(|dir| cwd.starts_with(dir))
                })
                .max_by_key(|p| field(p, "manifest_path").len())
                .or(match packages {
                    [only] => Some(only),
                    _ => None,
                })
        }
    };
    let package = chosen.ok_or_else(|| match &args.package {
        Some(name) => format!("no package `{name}` in the workspace"),
        None => "cannot tell which package to build: name it with `-p NAME`".to_owned(),
    })?;
    let name = field(package, "name");
    let library = package
        .get("targets")
        .map(Json::items)
        .unwrap_or_default()
        .iter()
        .find(|target| {
            target
                .get("kind")
                .is_some_and(|kind| kind.strings().iter().any(|k| LIBRARY_KINDS.contains(k)))
        })
        .ok_or_else(|| {
            format!(
                "the package `{name}` builds no C library: add `crate-type = [\"cdylib\"]` (or \
                 \"staticlib\") to its `[lib]`"
            )
        })?;
    Ok(Package {
        version: field(package, "version"),
        description: field(package, "description"),
        lib_name: field(library, "name").replace('-', "_"),
        crate_types: library
            .get("crate_types")
            .map(Json::strings)
            .unwrap_or_default()
            .into_iter()
            .map(str::to_owned)
            .collect(),
        name,
    })
}

const LIBRARY_KINDS: [&str; 2] = ["cdylib", "staticlib"];

/// Builds the library of `package` with `cargo rustc`, the shared library
/// with its soname, and reads what it made from cargo's JSON messages.
pub fn build(args: &CargoArgs, package: Package) -> Result<Built, String> {
    let mut command = cargo();
    command
        .args(["rustc", "--lib", "--message-format=json", "-p"])
        .arg(&package.name);
    if let Some(manifest) = &args.manifest_path {
        command.arg("--manifest-path").arg(manifest);
    }
    if let Some(target) = &args.target {
        command.args(["--target", target]);
    }
    if args.release {
        command.arg("--release");
    }
    if let Some(profile) = &args.profile {
        command.args(["--profile", profile]);
    }
    command.args(&args.forwarded);
    command.arg("--");
    let target = args.target.as_deref().unwrap_or(HOST);
    let has = |kind: &str| package.crate_types.iter().any(|k| k == kind);
    if has("cdylib") {
        let name = &package.lib_name;
        let version = package.soname_version();
        if target.contains("apple") {
            command.arg(format!(
                "-Clink-arg=-Wl,-install_name,@rpath/lib{name}.{version}.dylib"
            ));
        } else if !target.contains("windows") {
            command.arg(format!("-Clink-arg=-Wl,-soname,lib{name}.so.{version}"));
        }
    }
    if has("staticlib") {
        command.arg("--print=native-static-libs");
    }
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|error| format!("cannot run cargo: {error}"))?;
    let stdout = child.stdout.take().expect("piped");
    let mut built = Built {
        package,
        cdylib: None,
        staticlib: None,
        native_static_libs: String::new(),
    };
    for line in BufReader::new(stdout).lines() {
        let line = line.map_err(|error| format!("cannot read cargo's output: {error}"))?;
        let Ok(message) = Json::parse(&line) else {
            continue;
        };
        read_message(&message, &mut built);
    }
    let status = child.wait().map_err(|error| error.to_string())?;
    if !status.success() {
        return Err(format!("building `{}` failed", built.package.name));
    }
    if built.cdylib.is_none() && built.staticlib.is_none() {
        return Err(format!(
            "cargo built no cdylib or staticlib of `{}`",
            built.package.name
        ));
    }
    Ok(built)
}

/// Takes what one of cargo's messages says about the build.
fn read_message(message: &Json, built: &mut Built) {
    let reason = message.get("reason").and_then(Json::as_str);
    match reason {
        Some("compiler-artifact") => {
            let target = message.get("target");
            let name = target
                .and_then(|target| target.get("name"))
                .and_then(Json::as_str)
                .map(|name| name.replace('-', "_"));
            if name.as_deref() != Some(built.package.lib_name.as_str()) {
                return;
            }
            for file in message
                .get("filenames")
                .map(Json::strings)
                .unwrap_or_default()
            {
                let path = PathBuf::from(file);
                let file = path
                    .file_name()
                    .and_then(|f| f.to_str())
                    .unwrap_or_default();
                if [".so", ".dylib", ".dll"]
                    .iter()
                    .any(|ext| file.ends_with(ext))
                {
                    built.cdylib = Some(path);
                } else if file.ends_with(".a")
                    || (file.ends_with(".lib") && !file.ends_with(".dll.lib"))
                {
                    built.staticlib = Some(path);
                }
            }
        }
        Some("compiler-message") => {
            let rendered = message
                .get("message")
                .and_then(|m| m.get("rendered"))
                .and_then(Json::as_str)
                .unwrap_or_default();
            match rendered
                .lines()
                .find_map(|line| line.split_once("native-static-libs: "))
            {
                Some((_, libs)) => built.native_static_libs = libs.trim().to_owned(),
                None => eprint!("{rendered}"),
            }
        }
        _ => {}
    }
}

/// The target this program was built for, which cargo builds for by
/// default (as `cargo callgate` is installed for the host).
const HOST: &str = if cfg!(target_vendor = "apple") {
    "apple"
} else if cfg!(windows) {
    "windows"
} else {
    "unix"
};

#[cfg(test)]
mod tests {
    use super::*;

    fn package(version: &str) -> Package {
        Package {
            name: "shapes".to_owned(),
            version: version.to_owned(),
            description: String::new(),
            lib_name: "shapes".to_owned(),
            crate_types: vec!["cdylib".to_owned()],
        }
    }

    #[test]
    fn soname_versions_follow_semver_compatibility() {
        assert_eq!(package("1.2.3").soname_version(), "1");
        assert_eq!(package("0.2.3").soname_version(), "0.2");
        assert_eq!(package("0.0.3").soname_version(), "0.0.3");
        assert_eq!(package("2.0.0-rc.1").full_version(), "2.0.0");
    }

    #[test]
    fn artifacts_are_read_from_messages() {
        let mut built = Built {
            package: package("0.1.0"),
            cdylib: None,
            staticlib: None,
            native_static_libs: String::new(),
        };
        for line in [
            r#"{"reason":"compiler-artifact","target":{"name":"callgate"},"filenames":["/t/libcallgate.rlib"]}"#,
            r#"{"reason":"compiler-artifact","target":{"name":"shapes"},"filenames":["/t/libshapes.so","/t/libshapes.a"]}"#,
            r#"{"reason":"compiler-message","message":{"rendered":"note: native-static-libs: -lgcc_s -lc\n"}}"#,
        ] {
            read_message(&Json::parse(line).unwrap(), &mut built);
        }
        assert_eq!(built.cdylib, Some(PathBuf::from("/t/libshapes.so")));
        assert_eq!(built.staticlib, Some(PathBuf::from("/t/libshapes.a")));
        assert_eq!(built.native_static_libs, "-lgcc_s -lc");
        assert_eq!(built.out_dir(), Path::new("/t"));
    }
}
