use callgate::c_callback;

#[c_callback]
pub fn for_each(visit: impl Fn(i32)) {
    visit(1);
}

fn main() {}
