pub mod bench;
pub mod check;
#[cfg(madsim)]
pub mod sim;
