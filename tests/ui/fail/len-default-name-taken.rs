use callgate::c_callback;

// `data` gets a `data_len` parameter after it; this one was meant to be it.
#[c_callback(on_panic = 0)]
pub fn checksum(data: &[u8], data_len: u32) -> u32 {
    data.iter().map(|&byte| u32::from(byte)).sum::<u32>() + data_len
}

fn main() {}
