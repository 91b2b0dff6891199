use super::*;

#[test]
fn parses_every_setting() {
    let (settings, problems) = Settings::parse("attach=per_call, panic=abort");
    assert_eq!(settings.attach, AttachMode::PerCall);
    assert_eq!(settings.panic, PanicMode::Abort);
    assert!(problems.is_empty());
    assert_eq!(Settings::decode(settings.encode()), settings);
    let (settings, problems) = Settings::parse("panic=quiet");
    assert_eq!(settings.panic, PanicMode::Quiet);
    assert!(problems.is_empty());
    for panic in [PanicMode::Catch, PanicMode::Quiet, PanicMode::Abort] {
        let settings = Settings {
            attach: AttachMode::PerCall,
            panic,
        };
        assert_eq!(Settings::decode(settings.encode()), settings);
    }
}

#[test]
fn malformed_parts_are_reported_and_ignored() {
    let (settings, problems) = Settings::parse("attach=sometimes,panic=abort,colour=blue,junk");
    assert_eq!(settings.attach, AttachMode::Bound);
    assert_eq!(settings.panic, PanicMode::Abort);
    assert_eq!(problems.len(), 3, "{problems:?}");
    assert!(problems[0].contains("attach=sometimes"));
}

#[test]
fn empty_value_means_defaults() {
    assert_eq!(Settings::parse(""), (Settings::default(), Vec::new()));
}
