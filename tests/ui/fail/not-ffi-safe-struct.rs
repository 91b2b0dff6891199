use callgate::c_callback;

pub struct Config {
    pub verbose: bool,
    pub level: u8,
}

#[c_callback]
pub fn configure(config: Config) {
    let _ = config.verbose;
}

fn main() {}
