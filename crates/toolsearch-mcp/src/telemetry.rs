//! OpenTelemetry traces over OTLP/HTTP (`[telemetry] otlp_endpoint`): the SDK's tracer
//! provider with a batch exporter posting protobuf to `<endpoint>/v1/traces`, and the layer
//! that turns the `tracing` spans of the gateway into OpenTelemetry spans — `tools/call` (one
//! per MCP request, continuing the caller's trace, see [`crate::trace_context`]), the engine's
//! `tool_call` (every control call) and `dispatch` (every tool run), and the upstream call.
//!
//! Build it before the async runtime starts and [`shutdown`](Telemetry::shutdown) it after the
//! runtime has stopped: the exporter's HTTP client is blocking and runs on the batch
//! processor's own thread, so that exporting never waits on a gateway task.

#[cfg(feature = "otel")]
use std::time::Duration;

use crate::config::TelemetryConfig;
#[cfg(feature = "otel")]
use opentelemetry::trace::TracerProvider as _;
#[cfg(feature = "otel")]
use opentelemetry_otlp::{Protocol, WithExportConfig};
#[cfg(feature = "otel")]
use opentelemetry_sdk::Resource;
#[cfg(feature = "otel")]
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::Layer;
use tracing_subscriber::registry::LookupSpan;

/// How long one export may take before it is given up.
#[cfg(feature = "otel")]
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// Why traces cannot be set up.
#[derive(Debug, thiserror::Error)]
#[error("telemetry.otlp_endpoint {endpoint}: {message}")]
pub struct TelemetryError {
    endpoint: String,
    message: String,
}

/// The running tracer provider; dropping it without [`shutdown`](Self::shutdown) loses the
/// spans not yet exported.
#[derive(Debug)]
pub struct Telemetry {
    #[cfg(feature = "otel")]
    provider: SdkTracerProvider,
}

#[cfg(not(feature = "otel"))]
impl Telemetry {
    /// This build records no traces (the `otel` cargo feature is off): `[telemetry]` is refused.
    pub fn start(config: &TelemetryConfig) -> Result<Self, TelemetryError> {
        Err(TelemetryError {
            endpoint: config.traces_url(),
            message: "this toolsearch was built without traces (cargo feature otel): remove \
                      [telemetry], or rebuild with the feature"
                .into(),
        })
    }

    /// Records nothing.
    pub fn layer<S>(&self) -> impl Layer<S> + use<S>
    where
        S: tracing::Subscriber + for<'span> LookupSpan<'span>,
    {
        tracing_subscriber::layer::Identity::new()
    }

    /// Nothing to export.
    pub fn shutdown(self) {}
}

#[cfg(feature = "otel")]
impl Telemetry {
    /// Starts the exporter for `config`, and sets the W3C trace-context propagator.
    pub fn start(config: &TelemetryConfig) -> Result<Self, TelemetryError> {
        crate::upstream::install_crypto_provider();
        let endpoint = config.traces_url();
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(endpoint.clone())
            .with_timeout(EXPORT_TIMEOUT)
            .build()
            .map_err(|e| TelemetryError {
                endpoint,
                message: e.to_string(),
            })?;
        let resource = Resource::builder()
            .with_service_name(config.service_name.clone())
            .build();
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource)
            .build();
        crate::trace_context::install_propagator();
        Ok(Self { provider })
    }

    /// The layer that records the gateway's spans (level `info` and above, from toolsearch's
    /// own crates) into this provider.
    pub fn layer<S>(&self) -> impl Layer<S> + use<S>
    where
        S: tracing::Subscriber + for<'span> LookupSpan<'span>,
    {
        let tracer = self.provider.tracer("toolsearch");
        let spans = tracing_subscriber::filter::Targets::new()
            .with_target("toolsearch", tracing::Level::INFO)
            .with_target("toolsearch_mcp", tracing::Level::INFO);
        tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_filter(spans)
    }

    /// Exports what is left and stops. Blocking: call it outside the async runtime.
    pub fn shutdown(self) {
        if let Err(e) = self.provider.shutdown() {
            tracing::warn!(error = %e, "exporting the last spans failed");
        }
    }
}
