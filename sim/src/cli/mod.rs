pub mod bench;
pub mod check;
pub mod real;
#[cfg(madsim)]
pub mod report;
#[cfg(madsim)]
pub mod sim;
