//! Rewriting the process environment while keeping callgate's settings in sync.
