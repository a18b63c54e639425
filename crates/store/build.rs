//! The migrations are embedded by `sqlx::migrate!`, which cargo does not know to watch:
//! a new or changed migration must rebuild the store, or a cached build would run
//! without it.

fn main() {
    println!("cargo:rerun-if-changed=../../migrations");
}
