#![doc = include_str!("../README.md")]

pub mod convert;
pub mod gateway;
pub mod http;
pub mod jsonrpc;
pub mod passthrough;
pub mod secrets;
pub mod server;
pub mod stdio;
pub mod upstream;

pub use gateway::{Gateway, GatewayError};
pub use server::GatewayServer;
