"""A loopback OTLP/HTTP trace receiver: decodes each export with the official OpenTelemetry
protobuf types (`opentelemetry-proto`) and appends its spans to a file, one JSON line each.

Usage: otlp_receiver.py OUT_FILE

Prints `listening on http://127.0.0.1:PORT` once bound, then serves until killed. Each span
line: {"name", "trace_id", "span_id", "parent_span_id" (hex, "" for a root), "kind" (the
SpanKind name), "service" (the resource's service.name), "attributes": {key: value}}. Only
`POST /v1/traces` with `Content-Type: application/x-protobuf` is accepted; a body that does not
decode is answered 400 and recorded as {"error": ...}.
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span

OUT = sys.argv[1]


def value(v):
    """An AnyValue as plain JSON."""
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: value(kv.value) for kv in v.kvlist_value.values}
    if kind == "bytes_value":
        return v.bytes_value.hex()
    return getattr(v, kind)


def record(line):
    with open(OUT, "a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\n")


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path != "/v1/traces" or not self.headers.get("Content-Type", "").startswith(
            "application/x-protobuf"
        ):
            record({"error": f"unexpected {self.path} {self.headers.get('Content-Type')}"})
            self.send_response(404)
            self.end_headers()
            return
        request = ExportTraceServiceRequest()
        try:
            request.ParseFromString(body)
        except DecodeError as e:
            record({"error": f"undecodable export: {e}"})
            self.send_response(400)
            self.end_headers()
            return
        for resource_spans in request.resource_spans:
            service = ""
            for kv in resource_spans.resource.attributes:
                if kv.key == "service.name":
                    service = value(kv.value)
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    record(
                        {
                            "name": span.name,
                            "trace_id": span.trace_id.hex(),
                            "span_id": span.span_id.hex(),
                            "parent_span_id": span.parent_span_id.hex(),
                            "kind": Span.SpanKind.Name(span.kind),
                            "service": service,
                            "attributes": {kv.key: value(kv.value) for kv in span.attributes},
                        }
                    )
        answer = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    print(f"listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
