callgate::export_free!(pub string_free: String);

fn main() {}
