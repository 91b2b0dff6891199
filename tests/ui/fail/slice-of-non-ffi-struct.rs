use callgate::c_callback;

// No `#[repr(C)]`: C cannot know its layout.
pub struct Sample {
    pub value: f64,
}

#[c_callback(on_panic = 0.0)]
pub fn mean(samples: &[Sample]) -> f64 {
    samples.iter().map(|sample| sample.value).sum::<f64>() / samples.len() as f64
}

fn main() {}
