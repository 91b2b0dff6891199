use callgate::c_callback;

#[c_callback]
pub async fn notify(code: i32) {
    let _ = code;
}

fn main() {}
