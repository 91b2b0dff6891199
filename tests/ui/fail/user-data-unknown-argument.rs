use callgate::c_callback;

pub struct Counter {
    pub calls: u64,
}

#[c_callback(local)]
pub fn count(#[user_data(of = context)] counter: &mut Counter) {
    counter.calls += 1;
}

fn main() {}
