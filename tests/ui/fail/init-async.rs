#[callgate::init]
async fn setup() {}

fn main() {}
