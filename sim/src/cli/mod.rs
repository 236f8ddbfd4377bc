pub mod bench;
pub mod check;
