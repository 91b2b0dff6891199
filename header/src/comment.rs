//! Text inside the header's C comments.

/// Writes `docs` as a `/** */` comment, each line indented by `indent`;
/// nothing for empty docs.
pub(crate) fn doc_comment(out: &mut String, docs: &str, indent: &str) {
    if docs.trim().is_empty() {
        return;
    }
    out.push_str(indent);
    out.push_str("/**\n");
    for line in docs.lines() {
        let line = comment_text(line);
        if line.is_empty() {
            out.push_str(&format!("{indent} *\n"));
        } else {
            out.push_str(&format!("{indent} * {line}\n"));
        }
    }
    out.push_str(indent);
    out.push_str(" */\n");
}

/// Writes a member's `docs` (a field's, a constant's) indented, on one
/// line when they are one line.
pub(crate) fn member_comment(out: &mut String, docs: &str) {
    match docs.trim() {
        "" => {}
        line if !line.contains('\n') => {
            out.push_str(&format!("    /** {} */\n", comment_text(line)));
        }
        _ => doc_comment(out, docs, "    "),
    }
}

/// `text` made safe inside a `/* */` comment: it cannot close the comment
/// or open a nested one (which `-Wcomment` reports).
pub(crate) fn comment_text(text: &str) -> String {
    text.replace("*/", "* /").replace("/*", "/ *")
}
