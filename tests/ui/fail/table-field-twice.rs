use callgate::c_callback;

mod first {
    #[callgate::c_callback(local)]
    pub fn tick() {}
}

#[c_callback(local)]
pub fn tick() {}

callgate::export_table! {
    pub static ui_callbacks: UiCallbacks {
        tick,
        first::tick,
    }
}

fn main() {}
