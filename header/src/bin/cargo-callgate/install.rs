//! The files of a C library: its pkg-config file, and the layout of an
//! installed one, as cargo-c lays it out:
//!
//! ```text
//! PREFIX/lib/libNAME.so.1.2.3          the shared library, soname libNAME.so.1
//! PREFIX/lib/libNAME.so.1 -> libNAME.so.1.2.3
//! PREFIX/lib/libNAME.so   -> libNAME.so.1
//! PREFIX/lib/libNAME.a                 the static library, if built
//! PREFIX/include/NAME/NAME.h
//! PREFIX/lib/pkgconfig/NAME.pc
//! ```
//!
//! (`libNAME.1.2.3.dylib` and its links on macOS; on Windows the DLL goes
//! in `bin/`, unversioned.)

use std::path::{Component, Path, PathBuf};

use crate::cargo::Built;

/// Where to install.
#[derive(Debug)]
pub struct Layout {
    /// Where the library will live: what the pkg-config file says.
    pub prefix: PathBuf,
    /// Where the files are written for now (a staging directory), the
    /// prefix under it; none writes them under the prefix itself.
    pub destdir: Option<PathBuf>,
}

impl Layout {
    /// `path` (under the prefix) where it is written now.
    fn staged(&self, path: &Path) -> PathBuf {
        match &self.destdir {
            None => path.to_path_buf(),
            Some(destdir) => {
                let mut staged = destdir.clone();
                staged.extend(
                    path.components()
                        .filter(|c| !matches!(c, Component::RootDir | Component::Prefix(_))),
                );
                staged
            }
        }
    }
}

/// The pkg-config file of `built`, its files under `libdir` and
/// `includedir` (pkg-config text, may use `${prefix}`) below `prefix`.
pub fn pkg_config(built: &Built, prefix: &Path, libdir: &str, includedir: &str) -> String {
    let package = &built.package;
    let name = &package.lib_name;
    let description = if package.description.is_empty() {
        format!("The {} library", package.name)
    } else {
        package.description.replace('\n', " ")
    };
    let mut text = format!(
        "prefix={}\nlibdir={libdir}\nincludedir={includedir}\n\n\
         Name: {name}\nDescription: {description}\nVersion: {}\n\
         Libs: -L${{libdir}} -l{name}\nCflags: -I${{includedir}}\n",
        prefix.display(),
        package.version,
    );
    if !built.native_static_libs.is_empty() {
        text.push_str(&format!("Libs.private: {}\n", built.native_static_libs));
    }
    text
}

/// Installs `built` and its `header` under `layout`, returning the files
/// and links made.
pub fn install(built: &Built, header: &str, layout: &Layout) -> Result<Vec<PathBuf>, String> {
    let package = &built.package;
    let name = &package.lib_name;
    let prefix = std::path::absolute(&layout.prefix).map_err(|error| error.to_string())?;
    let libdir = layout.staged(&prefix.join("lib"));
    let includedir = layout.staged(&prefix.join("include").join(name));
    let pkgconfigdir = libdir.join("pkgconfig");
    for dir in [&libdir, &includedir, &pkgconfigdir] {
        std::fs::create_dir_all(dir)
            .map_err(|error| format!("cannot create {}: {error}", dir.display()))?;
    }
    let mut made = Vec::new();
    if let Some(cdylib) = &built.cdylib {
        let file = cdylib
            .file_name()
            .and_then(|f| f.to_str())
            .unwrap_or_default();
        let (soname, full, plain) = if file.ends_with(".so") {
            (
                format!("lib{name}.so.{}", package.soname_version()),
                format!("lib{name}.so.{}", package.full_version()),
                format!("lib{name}.so"),
            )
        } else if file.ends_with(".dylib") {
            (
                format!("lib{name}.{}.dylib", package.soname_version()),
                format!("lib{name}.{}.dylib", package.full_version()),
                format!("lib{name}.dylib"),
            )
        } else {
            let bindir = layout.staged(&prefix.join("bin"));
            std::fs::create_dir_all(&bindir).map_err(|error| error.to_string())?;
            made.push(copy(cdylib, &bindir.join(file))?);
            let import = cdylib.with_file_name(format!("{file}.lib"));
            if import.exists() {
                made.push(copy(&import, &libdir.join(format!("{file}.lib")))?);
            }
            (String::new(), String::new(), String::new())
        };
        if !full.is_empty() {
            made.push(copy(cdylib, &libdir.join(&full))?);
            if soname != full {
                made.push(link(&full, &libdir.join(&soname))?);
            }
            made.push(link(&soname, &libdir.join(&plain))?);
        }
    }
    if let Some(staticlib) = &built.staticlib {
        let file = staticlib.file_name().unwrap_or_default();
        made.push(copy(staticlib, &libdir.join(file))?);
    }
    let header_path = includedir.join(format!("{name}.h"));
    made.push(write(&header_path, header)?);
    let pc = pkg_config(
        built,
        &prefix,
        "${prefix}/lib",
        &format!("${{prefix}}/include/{name}"),
    );
    made.push(write(&pkgconfigdir.join(format!("{name}.pc")), &pc)?);
    Ok(made)
}

/// Beside a built shared library, the link its soname names
/// (`libNAME.so.0.1 -> libNAME.so`), so that a program linked against the
/// build directory finds the library there at run time; `None` where the
/// library has no soname.
pub fn soname_link(built: &Built) -> Result<Option<PathBuf>, String> {
    let Some(cdylib) = &built.cdylib else {
        return Ok(None);
    };
    let file = cdylib
        .file_name()
        .and_then(|f| f.to_str())
        .unwrap_or_default();
    let (name, version) = (&built.package.lib_name, built.package.soname_version());
    let soname = if file.ends_with(".so") {
        format!("lib{name}.so.{version}")
    } else if file.ends_with(".dylib") {
        format!("lib{name}.{version}.dylib")
    } else {
        return Ok(None);
    };
    link(file, &cdylib.with_file_name(soname)).map(Some)
}

pub fn write(path: &Path, text: &str) -> Result<PathBuf, String> {
    std::fs::write(path, text)
        .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
    Ok(path.to_path_buf())
}

fn copy(from: &Path, to: &Path) -> Result<PathBuf, String> {
    // A file in place may be a link to an earlier install's library.
    let _ = std::fs::remove_file(to);
    std::fs::copy(from, to).map_err(|error| {
        format!(
            "cannot copy {} to {}: {error}",
            from.display(),
            to.display()
        )
    })?;
    Ok(to.to_path_buf())
}

/// The link `at` to `target`, a name in the same directory.
fn link(target: &str, at: &Path) -> Result<PathBuf, String> {
    let _ = std::fs::remove_file(at);
    #[cfg(unix)]
    let made = std::os::unix::fs::symlink(target, at);
    #[cfg(not(unix))]
    let made = std::fs::copy(at.with_file_name(target), at).map(drop);
    made.map_err(|error| format!("cannot link {} to {target}: {error}", at.display()))?;
    Ok(at.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cargo::Package;

    #[test]
    fn pkg_config_names_the_library_and_its_header() {
        let built = Built {
            package: Package {
                name: "shapes".to_owned(),
                version: "0.2.1".to_owned(),
                description: "Shapes\nfor C.".to_owned(),
                lib_name: "shapes".to_owned(),
                crate_types: vec!["cdylib".to_owned(), "staticlib".to_owned()],
            },
            cdylib: None,
            staticlib: None,
            native_static_libs: "-lgcc_s -lc".to_owned(),
        };
        assert_eq!(
            pkg_config(
                &built,
                Path::new("/opt/shapes"),
                "${prefix}/lib",
                "${prefix}/include/shapes"
            ),
            "prefix=/opt/shapes\nlibdir=${prefix}/lib\nincludedir=${prefix}/include/shapes\n\n\
             Name: shapes\nDescription: Shapes for C.\nVersion: 0.2.1\n\
             Libs: -L${libdir} -lshapes\nCflags: -I${includedir}\n\
             Libs.private: -lgcc_s -lc\n"
        );
        let layout = Layout {
            prefix: PathBuf::from("/usr/local"),
            destdir: Some(PathBuf::from("/tmp/stage")),
        };
        assert_eq!(
            layout.staged(Path::new("/usr/local/lib")),
            Path::new("/tmp/stage/usr/local/lib")
        );
    }
}
