//! What the two commands share: the header options, reading libraries,
//! and writing or checking a header. `callgate-header` and
//! `cargo-callgate` both include this file.

use std::path::{Path, PathBuf};

use callgate_header::{HeaderOptions, extract, render};

/// The header options' lines of a usage text.
pub const HEADER_OPTIONS: &str =
    "  --guard NAME        include guard (default: from the header's or library's name, e.g. FOO_H)
  --prelude FILE      C text to put before the declarations (includes, type definitions)
  --defined TYPE      a Rust type the prelude defines: no forward declaration, no definition
  --cxx-owners        C++ owners of the owned results (`std::unique_ptr`), in a namespace
                      named after the guard (FOO_H: `foo`)
  --cxx-namespace NS  the C++ owners, in namespace NS";

/// The options that shape the header.
#[derive(Debug, Default)]
pub struct HeaderArgs {
    pub guard: Option<String>,
    pub prelude: Option<PathBuf>,
    pub defined: Vec<String>,
    pub cxx_owners: bool,
    pub cxx_namespace: Option<String>,
}

impl HeaderArgs {
    /// Takes `arg`, with its value from `rest`, if it is a header option.
    pub fn take(
        &mut self,
        arg: &str,
        rest: &mut impl Iterator<Item = String>,
    ) -> Result<bool, String> {
        let mut value = || rest.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg {
            "--guard" => self.guard = Some(value()?),
            "--prelude" => self.prelude = Some(value()?.into()),
            "--defined" => self.defined.push(value()?),
            "--cxx-owners" => self.cxx_owners = true,
            "--cxx-namespace" => self.cxx_namespace = Some(value()?),
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// The render options, the guard made from `name_from` (a header's or
    /// a library's path) unless `--guard` gave one.
    pub fn options(&self, name_from: &Path) -> Result<HeaderOptions, String> {
        let guard = self
            .guard
            .clone()
            .unwrap_or_else(|| default_guard(name_from));
        let mut options = HeaderOptions::new(guard.clone());
        if let Some(prelude) = &self.prelude {
            let text = std::fs::read_to_string(prelude)
                .map_err(|error| format!("cannot read {}: {error}", prelude.display()))?;
            options = options.with_prelude(text);
        }
        for name in &self.defined {
            options = options.with_defined_type(name.clone());
        }
        match (&self.cxx_namespace, self.cxx_owners) {
            (Some(namespace), _) => options = options.with_cxx_owners(namespace.clone()),
            (None, true) => {
                let stem = guard.strip_suffix("_H").unwrap_or(&guard);
                options = options.with_cxx_owners(stem.to_ascii_lowercase());
            }
            (None, false) => {}
        }
        Ok(options)
    }
}

/// The header of the callbacks and types recorded in `libraries`.
pub fn header(libraries: &[PathBuf], options: &HeaderOptions) -> Result<String, String> {
    let mut bytes = Vec::new();
    for library in libraries {
        let content = std::fs::read(library)
            .map_err(|error| format!("cannot read {}: {error}", library.display()))?;
        bytes.extend(content);
    }
    let declarations = extract(&bytes).map_err(|error| error.to_string())?;
    if declarations.is_empty() {
        let names: Vec<String> = libraries.iter().map(|p| p.display().to_string()).collect();
        return Err(format!(
            "no callback declarations in {}: is it built from a crate that uses #[c_callback] \
             or callgate::export_error_api!?",
            names.join(", ")
        ));
    }
    render(&declarations, options).map_err(|error| error.to_string())
}

/// Compares `header` with the file `path`: `Ok(true)` when they are the
/// same, else a message on standard error and `Ok(false)`.
pub fn check(header: &str, path: &Path, regenerate: &str) -> bool {
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    if committed == header {
        return true;
    }
    let line = committed
        .lines()
        .zip(header.lines())
        .position(|(old, new)| old != new)
        .unwrap_or_else(|| committed.lines().count().min(header.lines().count()));
    eprintln!(
        "{} is out of date (from line {}): {regenerate}",
        path.display(),
        line + 1
    );
    false
}

/// `include/plugin.h` → `PLUGIN_H`; `target/debug/libfoo.so` → `FOO_H`.
pub fn default_guard(path: &Path) -> String {
    let stem = path
        .file_name()
        .and_then(|name| name.to_str())
        .and_then(|name| name.split('.').next())
        .unwrap_or("callgate");
    let stem = if path.extension().is_some_and(|ext| ext != "h") {
        stem.strip_prefix("lib").unwrap_or(stem)
    } else {
        stem
    };
    format!("{}_H", stem.to_ascii_uppercase())
}

/// `NAME VERSION`, for `--version`.
pub fn version(name: &str) -> String {
    format!("{name} {}", env!("CARGO_PKG_VERSION"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guards_come_from_file_names() {
        assert_eq!(default_guard(Path::new("include/plugin.h")), "PLUGIN_H");
        assert_eq!(default_guard(Path::new("target/debug/libfoo.so")), "FOO_H");
        assert_eq!(default_guard(Path::new("foo.dll")), "FOO_H");
        assert_eq!(default_guard(Path::new("lib/libbar.so.1")), "BAR_H");
    }

    #[test]
    fn header_options_take_their_values() {
        let mut args = HeaderArgs::default();
        let mut rest = ["T".to_owned(), "x.so".to_owned()].into_iter();
        assert_eq!(args.take("--defined", &mut rest), Ok(true));
        assert_eq!(args.take("--cxx-owners", &mut rest), Ok(true));
        assert_eq!(args.take("x.so", &mut rest), Ok(false));
        assert_eq!(
            args.take("--guard", &mut std::iter::empty()),
            Err("--guard needs a value".to_owned())
        );
        assert_eq!(args.defined, ["T"]);
        let options = args.options(Path::new("include/my_lib.h")).unwrap();
        assert_eq!(options.guard, "MY_LIB_H");
        assert_eq!(options.cxx_owners.as_deref(), Some("my_lib"));
    }
}
