//! The guide (`guide/src`) and the README stay true: every relative link
//! and include resolves, every page is in `SUMMARY.md`, and the
//! Getting-started tutorial runs as written. (The pages' Rust examples run
//! as the dev package's doctests: see `build.rs`.)

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn guide() -> PathBuf {
    workspace().join("guide/src")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// The Markdown files under `dir`, recursively.
fn markdown_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read a guide directory") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            files.extend(markdown_files(&path));
        } else if path.extension().is_some_and(|ext| ext == "md") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// The text outside fenced code blocks, line by line.
fn prose(text: &str) -> impl Iterator<Item = &str> {
    let mut fenced = false;
    text.lines().filter(move |line| {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            return false;
        }
        !fenced
    })
}

/// The targets of the Markdown links `[text](target)` of `text`, outside
/// code blocks and inline code.
fn links(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    for line in prose(text) {
        // Inline code may hold `](`: drop it first.
        let line: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        for rest in line.split("](").skip(1) {
            if let Some((target, _)) = rest.split_once(')') {
                targets.push(target.trim().to_owned());
            }
        }
    }
    targets
}

/// The anchors mdBook gives the headings of `text`: lowercase, spaces as
/// `-`, punctuation other than `-` and `_` dropped.
fn anchors(text: &str) -> BTreeSet<String> {
    prose(text)
        .filter_map(|line| line.strip_prefix('#'))
        .map(|heading| {
            heading
                .trim_start_matches('#')
                .trim()
                .to_lowercase()
                .chars()
                .filter_map(|c| match c {
                    ' ' => Some('-'),
                    c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                    _ => None,
                })
                .collect()
        })
        .collect()
}

/// Every relative link of `file` (a page or the README) that names no
/// existing file, or no heading of it.
fn broken_links(file: &Path) -> Vec<String> {
    let dir = file.parent().expect("a file's directory");
    let mut broken = Vec::new();
    for target in links(&read(file)) {
        if target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
        let linked = if path.is_empty() {
            file.to_path_buf()
        } else {
            dir.join(path)
        };
        if !linked.exists() {
            broken.push(format!("{target}: no such file"));
        } else if !anchor.is_empty()
            && linked.extension().is_some_and(|ext| ext == "md")
            && !anchors(&read(&linked)).contains(anchor)
        {
            broken.push(format!("{target}: no such heading"));
        }
    }
    broken
}

#[test]
fn every_link_of_the_guide_and_the_readme_resolves() {
    let mut files = markdown_files(&guide());
    files.extend(
        [
            "README.md",
            "CHANGELOG.md",
            "bench/README.md",
            "tests/README.md",
        ]
        .map(|f| workspace().join(f)),
    );
    let broken: Vec<String> = files
        .iter()
        .filter(|file| file.exists())
        .flat_map(|file| {
            broken_links(file)
                .into_iter()
                .map(move |link| format!("{}: {link}", file.display()))
        })
        .collect();
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn every_page_is_in_the_summary_or_included() {
    let summary = read(&guide().join("SUMMARY.md"));
    let mut reached: BTreeSet<PathBuf> = links(&summary)
        .iter()
        .map(|page| guide().join(page))
        .collect();
    reached.insert(guide().join("SUMMARY.md"));
    for page in markdown_files(&guide()) {
        for line in read(&page).lines() {
            if let Some(rest) = line.trim().strip_prefix("{{#include ") {
                let included = rest.trim_end_matches("}}").trim();
                let path = page.parent().expect("a page's directory").join(included);
                assert!(
                    path.exists(),
                    "{} includes {included}, which does not exist",
                    page.display()
                );
                reached.insert(path);
            }
        }
    }
    let orphans: Vec<_> = markdown_files(&guide())
        .into_iter()
        .filter(|page| !reached.contains(page))
        .collect();
    assert!(
        orphans.is_empty(),
        "pages neither in SUMMARY.md nor included: {orphans:?}"
    );
}

/// One step of the tutorial: what an HTML comment `<!-- tutorial: … -->`
/// says of the code block that follows it.
enum Step {
    /// Run the block's lines in the shell.
    Run(String),
    /// Write the block to this file.
    Write(String, String),
    /// The standard output of everything run so far, exactly.
    Output(String),
}

fn tutorial_steps(text: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let Some(marker) = line.trim().strip_prefix("<!-- tutorial:") else {
            continue;
        };
        let marker = marker.trim_end_matches("-->").trim();
        let fence = lines.next().expect("a code block after a tutorial marker");
        assert!(fence.starts_with("```"), "no code block after `{line}`");
        let block: String = lines
            .by_ref()
            .take_while(|line| !line.starts_with("```"))
            .map(|line| format!("{line}\n"))
            .collect();
        steps.push(match marker.split_once(' ') {
            None if marker == "run" => Step::Run(block),
            None if marker == "output" => Step::Output(block),
            Some(("write", file)) => Step::Write(file.to_owned(), block),
            _ => panic!("unknown tutorial marker `{line}`"),
        });
    }
    steps
}

/// The tutorial's steps as one shell script.
fn tutorial_script(steps: &[Step]) -> (String, String) {
    let mut script = String::from("set -euo pipefail\n");
    let mut output = None;
    for step in steps {
        match step {
            Step::Run(commands) => script.push_str(commands),
            Step::Write(file, text) => {
                script.push_str(&format!(
                    "cat > {file} <<'CALLGATE_TUTORIAL_EOF'\n{text}CALLGATE_TUTORIAL_EOF\n"
                ));
            }
            Step::Output(text) => output = Some(text.clone()),
        }
    }
    (
        script,
        output.expect("the tutorial shows the program's output"),
    )
}

/// Follows the Getting-started page literally, in a new directory outside
/// the workspace, where `callgate` stands for the clone the page makes (a
/// link to this checkout). `cargo install` installs into that directory,
/// and cargo resolves the crate's dependencies offline, from the ones the
/// workspace's build fetched.
#[test]
fn the_getting_started_tutorial_runs_as_written() {
    let steps = tutorial_steps(&read(&guide().join("getting-started.md")));
    let (script, expected) = tutorial_script(&steps);
    let dir = std::env::temp_dir().join(format!("callgate-tutorial-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create the tutorial's directory");
    std::os::unix::fs::symlink(workspace(), dir.join("callgate")).expect("link the checkout");
    let bin = dir.join("installed");
    let path = format!(
        "{}:{}",
        bin.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = Command::new("bash");
    command
        .arg("-c")
        .arg(&script)
        .current_dir(&dir)
        .env("PATH", path)
        .env("CARGO_INSTALL_ROOT", &bin)
        .env("CARGO_NET_OFFLINE", "true");
    // The tutorial's crate is a new project: nothing of this build's
    // configuration reaches it.
    for (key, _) in std::env::vars_os() {
        if key.to_str().is_some_and(|key| {
            key.starts_with("CARGO_") && key != "CARGO_HOME"
                || key == "RUSTFLAGS"
                || key == "RUSTC_WRAPPER"
        }) {
            command.env_remove(key);
        }
    }
    command
        .env("CARGO_INSTALL_ROOT", &bin)
        .env("CARGO_NET_OFFLINE", "true");
    let output = command.output().expect("run bash");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the tutorial failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        stdout, expected,
        "the program's output differs from the page's"
    );
    std::fs::remove_dir_all(&dir).expect("remove the tutorial's directory");
}
