//! Finding and parsing the records in a library's bytes.

use std::fmt;

use crate::declaration::{Declaration, Kind, RustType, sorted};
use crate::format;

/// Longest version field looked at: a candidate whose bytes after the start
/// marker are not a short decimal number is not a record.
const MAX_VERSION_DIGITS: usize = 9;

/// Why a library's declarations could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A record is in another format version than this reader understands.
    UnsupportedVersion {
        /// Byte offset of the record in the scanned bytes.
        offset: usize,
        /// The record's format version.
        version: u32,
    },
    /// A record starts but does not follow the format.
    Malformed {
        /// Byte offset of the record in the scanned bytes.
        offset: usize,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// Two different declarations of one C name.
    Conflict {
        /// The C name declared twice.
        name: String,
        /// One declaration.
        first: String,
        /// The other.
        second: String,
    },
    /// A table's field names no `local` callback among the declarations, so
    /// the header has no type for it.
    MissingCallback {
        /// The table's symbol.
        table: String,
        /// The field without a callback.
        field: String,
    },
    /// Two items of the header would have one C name: a `local` callback
    /// `x` (whose pointer type is `x_fn`) and an exported function `x_fn`,
    /// or a type defined in Rust and a function of that name. The header
    /// would not compile as C or C++.
    NameClash {
        /// The C name the header would declare twice.
        name: String,
        /// The first item that declares it, and how.
        first: String,
        /// The second.
        second: String,
    },
    /// Types defined in Rust name each other in a way no order of C
    /// declarations can express: typedefs of pointers to each other.
    TypeCycle {
        /// The types of the cycle.
        names: Vec<String>,
    },
    /// [`HeaderOptions::cxx_owners`](crate::HeaderOptions::cxx_owners)
    /// names no namespace C++ accepts.
    CxxNamespace {
        /// The namespace asked for.
        namespace: String,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::UnsupportedVersion { offset, version } => write!(
                f,
                "the declaration record at byte {offset} has format version {version}, but this \
                 reader understands version {}: use the callgate-header of the callgate \
                 release the library was built with",
                format::VERSION
            ),
            Error::Malformed { offset, problem } => write!(
                f,
                "the declaration record at byte {offset} is malformed: {problem}"
            ),
            Error::Conflict {
                name,
                first,
                second,
            } => write!(
                f,
                "`{name}` is declared twice, differently:\n    {first}\n    {second}\nrename one \
                 of the callbacks (`export = \"...\"`), or read one library at a time"
            ),
            Error::MissingCallback { table, field } => write!(
                f,
                "the table `{table}` has a field `{field}`, but no `local` callback `{field}` is \
                 declared: read the library that defines it too"
            ),
            Error::NameClash {
                name,
                first,
                second,
            } => write!(
                f,
                "the header would declare `{name}` twice:\n    {first}\n    {second}\nrename one \
                 of them (`export = \"...\"` renames an exported callback)"
            ),
            Error::TypeCycle { names } => write!(
                f,
                "the types {} point to each other through typedefs, which C cannot declare: \
                 make one of them a `#[repr(C)]` struct",
                names.join(", ")
            ),
            Error::CxxNamespace { namespace } => write!(
                f,
                "`{namespace}` cannot be the namespace of the C++ owners: choose an identifier \
                 that is not a C or C++ keyword"
            ),
        }
    }
}

impl std::error::Error for Error {}

/// Reads the declarations recorded in a compiled library: the bytes of a
/// `cdylib`, `staticlib`, rlib, object file or executable, in any object
/// format (it is a byte scan).
///
/// Returns them sorted by name, identical records once (a callback scanned
/// in two artifacts, or in an rlib's code and metadata, is one callback);
/// the bytes of several files may be concatenated and read at once.
///
/// # Errors
///
/// [`Error::UnsupportedVersion`] when the library was built by a callgate
/// release with another record format, [`Error::Malformed`] for a damaged
/// record, [`Error::Conflict`] when two callbacks declare the same C name
/// differently.
pub fn extract(library: &[u8]) -> Result<Vec<Declaration>, Error> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(position) = find(&library[from..], format::START) {
        let offset = from + position;
        match record(library, offset)? {
            Some((declaration, end)) => {
                found.push(declaration);
                from = end;
            }
            None => from = offset + 1,
        }
    }
    let declarations = sorted(found);
    if let Some(pair) = declarations
        .windows(2)
        .find(|pair| pair[0].name == pair[1].name)
    {
        return Err(Error::Conflict {
            name: pair[0].name.clone(),
            first: pair[0].describe(),
            second: pair[1].describe(),
        });
    }
    Ok(declarations)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// Parses the record whose start marker is at `offset`: `Ok(None)` if the
/// marker is not followed by a version field (the marker bytes occur by
/// themselves, e.g. in this reader's own code), else the declaration and
/// the offset just past the record.
fn record(bytes: &[u8], offset: usize) -> Result<Option<(Declaration, usize)>, Error> {
    let mut cursor = offset + format::START.len();
    let digits = bytes[cursor..]
        .iter()
        .take(MAX_VERSION_DIGITS + 1)
        .take_while(|byte| byte.is_ascii_digit())
        .count();
    if digits == 0
        || digits > MAX_VERSION_DIGITS
        || bytes.get(cursor + digits) != Some(&format::FIELD_END)
    {
        return Ok(None);
    }
    let version: u32 = std::str::from_utf8(&bytes[cursor..cursor + digits])
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(u32::MAX);
    if version != format::VERSION {
        return Err(Error::UnsupportedVersion { offset, version });
    }
    cursor += digits + 1;
    let malformed = |problem| Error::Malformed { offset, problem };
    let mut fields = [""; 6];
    for field in &mut fields {
        let length = bytes[cursor..]
            .iter()
            .position(|&byte| byte == format::FIELD_END)
            .ok_or(malformed("it is cut off"))?;
        *field = std::str::from_utf8(&bytes[cursor..cursor + length])
            .map_err(|_| malformed("a field is not UTF-8"))?;
        cursor += length + 1;
    }
    if !bytes[cursor..].starts_with(format::END) {
        return Err(malformed("the end marker is missing"));
    }
    let [kind, name, signature, types, docs, free] = fields;
    let kind = Kind::from_field(kind).ok_or(malformed("unknown kind"))?;
    if name.is_empty() {
        return Err(malformed("the name is empty"));
    }
    if let Some(problem) = signature_problem(kind, signature) {
        return Err(malformed(problem));
    }
    let mut types: Vec<RustType> = types
        .split(format::TYPE_SEPARATOR)
        .filter(|word| !word.is_empty())
        .map(|word| match word.strip_prefix(format::BEHIND_POINTER) {
            Some(name) => RustType {
                name: name.to_owned(),
                by_value: false,
            },
            None => RustType {
                name: word.to_owned(),
                by_value: true,
            },
        })
        .collect();
    types.sort();
    let declaration = Declaration {
        kind,
        name: name.to_owned(),
        signature: signature.to_owned(),
        types,
        docs: docs.to_owned(),
        free: free.to_owned(),
    };
    Ok(Some((declaration, cursor + format::END.len())))
}

/// What is wrong with the `SIGNATURE` of a record of kind `kind`, if
/// anything.
fn signature_problem(kind: Kind, signature: &str) -> Option<&'static str> {
    let members: Vec<&str> = signature.split(format::MEMBER_SEPARATOR).collect();
    match kind {
        Kind::Table => {
            let words: Vec<&str> = signature.split(format::TYPE_SEPARATOR).collect();
            (words.len() < 2 || words.contains(&""))
                .then_some("a table needs a type name and at least one field")
        }
        Kind::Enum => {
            let constant = |member: &&str| {
                member.split_once('=').is_some_and(|(name, value)| {
                    let digits = value.strip_prefix('-').unwrap_or(value);
                    !name.is_empty()
                        && !digits.is_empty()
                        && digits.bytes().all(|byte| byte.is_ascii_digit())
                })
            };
            (members.len() < 2 || members[0].is_empty() || !members[1..].iter().all(constant))
                .then_some("an enum needs its integer type and `NAME=VALUE` constants")
        }
        Kind::Struct => members
            .contains(&"")
            .then_some("a struct needs at least one field, each declared"),
        Kind::Export | Kind::LocalCallback | Kind::Typedef => {
            (signature.matches(format::NAME_SLOT).count() != 1)
                .then_some("the signature has no single name slot")
        }
    }
}
