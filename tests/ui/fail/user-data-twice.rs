use callgate::c_callback;
use std::ffi::c_int;

pub struct Pool {
    pub jobs: u64,
}

pub struct Job {
    pub id: u64,
}

#[c_callback(local)]
pub fn run_job(#[user_data] job: &mut Job, #[user_data] pool: &Pool, flags: c_int) {
    let _ = (job.id, pool.jobs, flags);
}

fn main() {}
