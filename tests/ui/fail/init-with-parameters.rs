#[callgate::init]
fn setup(verbose: bool) {
    let _ = verbose;
}

fn main() {}
