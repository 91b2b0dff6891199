use callgate::c_callback;

#[c_callback(on_panic = 0)]
pub fn exported_twice(value: i32) -> i32 {
    value * 2
}

callgate::export_table! {
    pub static ui_callbacks: UiCallbacks {
        exported_twice,
    }
}

fn main() {}
