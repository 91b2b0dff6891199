use callgate::c_callback;

#[c_callback]
pub fn ingest(samples: Vec<f32>) {
    let _ = samples;
}

fn main() {}
