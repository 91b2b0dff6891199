use super::callback_name;

#[test]
fn a_closure_in_a_callback_is_named_after_the_callback() {
    assert_eq!(
        callback_name("ext::ext_init::__callgate_body::{{closure}}"),
        "ext::ext_init::{{closure}}"
    );
    assert_eq!(callback_name("parse_number"), "parse_number");
}
