use callgate::c_callback;

pub struct Counter(u64);

impl Counter {
    #[c_callback]
    pub fn bump(&mut self) {
        self.0 += 1;
    }
}

fn main() {}
