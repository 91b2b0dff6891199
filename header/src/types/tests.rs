//! The types section and the C++ owners, from hand-made records of the
//! kinds the derives and owned results write.

use crate::declaration::Kind;
use crate::{Error, HeaderOptions, extract, format, render};

const US: char = format::MEMBER_SEPARATOR;

/// A record of the current version; the fields left out are empty.
fn record(fields: &[&str]) -> Vec<u8> {
    let mut bytes = format::START.to_vec();
    let version = format::VERSION.to_string();
    let fields = fields.iter().copied().chain(std::iter::repeat(""));
    for field in std::iter::once(version.as_str()).chain(fields.take(6)) {
        bytes.extend_from_slice(field.as_bytes());
        bytes.push(format::FIELD_END);
    }
    bytes.extend_from_slice(format::END);
    bytes
}

fn header(records: &[Vec<u8>], options: &HeaderOptions) -> Result<String, Error> {
    let declarations = extract(&records.concat())?;
    for declaration in &declarations {
        let bytes = declaration.to_record();
        assert!(
            records.contains(&bytes),
            "{} does not round-trip",
            declaration.name()
        );
    }
    render(&declarations, options)
}

fn mode() -> Vec<u8> {
    record(&[
        "enum",
        "Mode",
        &format!("uint8_t{US}MODE_FAST=0{US}MODE_SLOW=7"),
        "",
        &format!("How to draw.{US}Quickly.{US}"),
    ])
}

#[test]
fn an_enum_is_its_integer_and_named_constants() {
    let declarations = extract(&mode()).unwrap();
    let declaration = &declarations[0];
    assert_eq!(declaration.kind(), Kind::Enum);
    assert_eq!(declaration.enum_repr(), Some("uint8_t"));
    assert_eq!(declaration.docs(), "How to draw.");
    let members: Vec<(&str, &str, &str)> = declaration
        .members()
        .iter()
        .map(|m| (m.declaration, m.value, m.docs))
        .collect();
    assert_eq!(
        members,
        [("MODE_FAST", "0", "Quickly."), ("MODE_SLOW", "7", "")]
    );
    let text = header(
        &[mode_record_with_use(), mode()],
        &HeaderOptions::new("M_H"),
    )
    .unwrap();
    let expected = "
/* Types defined in Rust. */

/**
 * How to draw.
 */
typedef uint8_t Mode;
enum {
    /** Quickly. */
    MODE_FAST = 0,
    MODE_SLOW = 7
};
";
    assert!(text.contains(expected), "{text}");
    assert!(!text.contains("typedef struct Mode"), "{text}");
}

fn mode_record_with_use() -> Vec<u8> {
    record(&["export", "draw", "void @(Mode mode)", "Mode"])
}

#[test]
fn values_beyond_int_are_macros() {
    let big = record(&[
        "enum",
        "Big",
        &format!("uint64_t{US}BIG_HUGE=18446744073709551615{US}BIG_ONE=1"),
    ]);
    let low = record(&[
        "enum",
        "Low",
        &format!("int64_t{US}LOW_MIN=-9223372036854775808{US}LOW_FAR=-3000000000"),
    ]);
    let text = header(&[big, low], &HeaderOptions::new("B_H")).unwrap();
    for line in [
        "typedef uint64_t Big;",
        "#define BIG_HUGE ((Big)UINT64_C(18446744073709551615))",
        "#define BIG_ONE ((Big)UINT64_C(1))",
        "#define LOW_MIN ((Low)(-INT64_C(9223372036854775807) - 1))",
        "#define LOW_FAR ((Low)INT64_C(-3000000000))",
    ] {
        assert!(text.lines().any(|l| l == line), "no `{line}` in\n{text}");
    }
}

#[test]
fn definitions_come_before_their_use_and_cycles_get_forward_declarations() {
    // `Shape` holds a `Point` by value and a `Style *`; `Node` and `Tree`
    // point to each other; `Meters` is a transparent `double`; `Session`
    // is only named.
    let records = [
        record(&[
            "struct",
            "Shape",
            &format!("Point origin{US}Meters size{US}const Style *style{US}Session *owner"),
            "Meters Point *Session *Style",
            &format!("A shape.{US}Where it is.{US}{US}{US}"),
        ]),
        record(&["struct", "Point", &format!("double x{US}double y")]),
        record(&["struct", "Style", "uint32_t color"]),
        record(&["typedef", "Meters", "double @", "", "A length."]),
        record(&[
            "struct",
            "Node",
            &format!("Tree *tree{US}void (*visit)(Node)"),
            // A function pointer's types are behind a pointer.
            "*Node *Tree",
        ]),
        record(&["struct", "Tree", "Node *root", "*Node"]),
    ];
    let text = header(&records, &HeaderOptions::new("S_H")).unwrap();
    let start = text.find("/* Types defined in Rust. */").unwrap();
    let end = text.find("#ifdef __cplusplus\n}").unwrap();
    let expected = "/* Types defined in Rust. */
typedef struct Session Session;
typedef struct Node Node;
typedef struct Tree Tree;

/**
 * A length.
 */
typedef double Meters;

struct Node {
    Tree *tree;
    void (*visit)(Node);
};

struct Tree {
    Node *root;
};

typedef struct Point {
    double x;
    double y;
} Point;

typedef struct Style {
    uint32_t color;
} Style;

/**
 * A shape.
 */
typedef struct Shape {
    /** Where it is. */
    Point origin;
    Meters size;
    const Style *style;
    Session *owner;
} Shape;

";
    assert_eq!(&text[start..end], expected);
}

#[test]
fn typedefs_that_point_to_each_other_are_refused() {
    let records = [
        record(&["typedef", "A", "B *@", "*B"]),
        record(&["typedef", "B", "A *@", "*A"]),
    ];
    assert_eq!(
        header(&records, &HeaderOptions::new("C_H")),
        Err(Error::TypeCycle {
            names: vec!["A".to_owned(), "B".to_owned()]
        })
    );
}

#[test]
fn the_prelude_may_define_a_type_instead() {
    let options = HeaderOptions::new("M_H")
        .with_prelude("typedef int Mode;")
        .with_defined_type("Mode");
    let text = header(&[mode_record_with_use(), mode()], &options).unwrap();
    assert!(!text.contains("MODE_FAST"), "{text}");
    assert!(!text.contains("typedef uint8_t Mode"), "{text}");
}

#[test]
fn constants_and_types_share_the_names_of_the_header() {
    let clash = record(&["export", "MODE_SLOW", "void @(void)"]);
    assert_eq!(
        header(&[mode(), clash], &HeaderOptions::new("M_H")),
        Err(Error::NameClash {
            name: "MODE_SLOW".to_owned(),
            first: "the constant `MODE_SLOW` of the enum `Mode`".to_owned(),
            second: "the exported function `MODE_SLOW`: void MODE_SLOW(void)".to_owned(),
        })
    );
}

#[test]
fn malformed_type_records_are_reported() {
    for (fields, problem) in [
        (
            ["enum", "E", "int32_t"],
            "an enum needs its integer type and `NAME=VALUE` constants",
        ),
        (
            ["enum", "E", &format!("int32_t{US}E_A=x")],
            "an enum needs its integer type and `NAME=VALUE` constants",
        ),
        (
            ["struct", "S", ""],
            "a struct needs at least one field, each declared",
        ),
        (
            ["typedef", "T", "double"],
            "the signature has no single name slot",
        ),
    ] {
        assert_eq!(
            extract(&record(&fields)),
            Err(Error::Malformed { offset: 0, problem }),
            "{fields:?}"
        );
    }
}

/// A library whose functions return owned results: a string, a boxed
/// struct and an array.
fn owning_library() -> Vec<Vec<u8>> {
    vec![
        record(&["struct", "Point", &format!("double x{US}double y")]),
        record(&[
            "export",
            "describe",
            "char *@(const Point *at, int32_t (*format)(double value))",
            "*Point",
            "Describes `at`.",
            "text_free",
        ]),
        record(&["export", "text_free", "void @(char *value)"]),
        record(&[
            "export",
            "make_point",
            "Point *@(double x, double y)",
            "*Point",
            "",
            "point_free",
        ]),
        record(&["export", "point_free", "void @(Point *value)", "*Point"]),
        record(&[
            "export",
            "grid",
            "Point *@(size_t rows, size_t *result_len)",
            "*Point",
            "",
            "points_free",
        ]),
        record(&[
            "export",
            "points_free",
            "void @(Point *ptr, size_t len)",
            "*Point",
        ]),
        record(&["export", "unnamed", "char *@(int32_t)", "", "", "text_free"]),
    ]
}

#[test]
fn cxx_owners_wrap_owned_results_in_unique_ptrs() {
    let declarations = extract(&owning_library().concat()).unwrap();
    let describe = declarations
        .iter()
        .find(|d| d.name() == "describe")
        .unwrap();
    assert_eq!(describe.free_function(), Some("text_free"));
    let plain = render(&declarations, &HeaderOptions::new("O_H")).unwrap();
    assert!(!plain.contains("unique_ptr"), "{plain}");

    let options = HeaderOptions::new("O_H").with_cxx_owners("owned");
    let text = render(&declarations, &options).unwrap();
    let start = text.find("#ifdef __cplusplus\n#include <memory>").unwrap();
    let expected = "namespace owned {

/** Frees with `point_free`. */
struct point_free {
    void operator()(Point *value) const noexcept { ::point_free(value); }
};

/** Frees with `points_free`. */
struct points_free {
    size_t len;
    void operator()(Point *ptr) const noexcept { ::points_free(ptr, len); }
};

/** Frees with `text_free`. */
struct text_free {
    void operator()(char *value) const noexcept { ::text_free(value); }
};

/**
 * Describes `at`.
 */
inline std::unique_ptr<char, text_free> describe(const Point *at, int32_t (*format)(double value)) {
    return std::unique_ptr<char, text_free>(::describe(at, format));
}

inline std::unique_ptr<Point[], points_free> grid(size_t rows) {
    size_t len = 0;
    Point *ptr = ::grid(rows, &len);
    return std::unique_ptr<Point[], points_free>(ptr, points_free{len});
}

inline std::unique_ptr<Point, point_free> make_point(double x, double y) {
    return std::unique_ptr<Point, point_free>(::make_point(x, y));
}

/* No owner for `unnamed`: its C declaration has an unnamed parameter or a result that is not a plain pointer. */

} /* namespace owned */
#endif
";
    assert!(text[start..].contains(expected), "{}", &text[start..]);
    assert_eq!(
        render(
            &declarations,
            &HeaderOptions::new("O_H").with_cxx_owners("class")
        ),
        Err(Error::CxxNamespace {
            namespace: "class".to_owned()
        })
    );
}
