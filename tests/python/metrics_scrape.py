"""Scrape a `/metrics` URL and parse it with the official Prometheus Python client's parsers.

Usage: metrics_scrape.py URL FORMAT [TOKEN]

FORMAT is `prometheus` (no Accept header: the text format 0.0.4, parsed by
`prometheus_client.parser`) or `openmetrics` (asks for OpenMetrics as Prometheus does, parsed
by `prometheus_client.openmetrics.parser`, which also checks the `# EOF` end and the
`_total`/`_bucket` naming). TOKEN, when given, is sent as `Authorization: Bearer TOKEN`.

Prints one JSON object: {"status", "content_type", "families": {name: type},
"samples": [{"name", "labels", "value"}]}. A status other than 200 prints the status and the
body as `text` without parsing. A body the parser refuses makes the script fail (exit 1).
"""

import json
import sys
import urllib.error
import urllib.request

from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as openmetrics_families,
)
from prometheus_client.parser import text_string_to_metric_families as prometheus_families

OPENMETRICS_ACCEPT = (
    "application/openmetrics-text;version=1.0.0,"
    "text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
)


def main():
    url, fmt = sys.argv[1], sys.argv[2]
    token = sys.argv[3] if len(sys.argv) > 3 else None
    request = urllib.request.Request(url)
    if fmt == "openmetrics":
        request.add_header("Accept", OPENMETRICS_ACCEPT)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            status = response.status
            content_type = response.headers.get("Content-Type", "")
            body = response.read().decode("utf-8")
    except urllib.error.HTTPError as e:
        print(json.dumps({"status": e.code, "text": e.read().decode("utf-8", "replace")}))
        return
    parse = openmetrics_families if fmt == "openmetrics" else prometheus_families
    families = {}
    samples = []
    for family in parse(body):
        families[family.name] = family.type
        for s in family.samples:
            samples.append({"name": s.name, "labels": dict(s.labels), "value": s.value})
    print(
        json.dumps(
            {
                "status": status,
                "content_type": content_type,
                "families": families,
                "samples": samples,
            }
        )
    )


if __name__ == "__main__":
    main()
