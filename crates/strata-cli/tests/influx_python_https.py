"""Talks to a running `strata serve` over HTTPS with InfluxDB's own 1.x
Python client (the `influxdb` package on PyPI) as its users do:
`InfluxDBClient(..., ssl=True, verify_ssl=False)` for a self-signed
certificate. Run by influx_python_https.rs as
`python3 influx_python_https.py PORT`: waits for the server, writes two
points, queries them back, plainly and chunked (one row per chunk), and
prints both lists of points as JSON."""

import json
import sys
import time
import warnings

from influxdb import InfluxDBClient

warnings.filterwarnings("ignore")  # urllib3's InsecureRequestWarning


def main():
    port = int(sys.argv[1])
    client = InfluxDBClient(host="127.0.0.1", port=port, database="strata", ssl=True, verify_ssl=False)
    deadline = time.time() + 60
    while True:
        try:
            client.ping()
            break
        except Exception:
            if time.time() > deadline:
                raise
            time.sleep(0.05)
    client.write_points(
        [
            {"measurement": "cpu", "tags": {"host": "a"}, "time": 1_000_000_000, "fields": {"v": 1.5}},
            {"measurement": "cpu", "tags": {"host": "b"}, "time": 2_000_000_000, "fields": {"v": 2.5}},
        ],
        time_precision="n",
    )
    result = client.query("SELECT v, host FROM cpu", epoch="ns")
    # The same, as chunked JSON lines of one row each: the client yields a
    # result set per line.
    chunks = client.query("SELECT v, host FROM cpu", epoch="ns", chunked=True, chunk_size=1)
    chunked = [point for chunk in chunks for point in chunk.get_points()]
    print(json.dumps({"points": list(result.get_points()), "chunked": chunked}))


if __name__ == "__main__":
    main()
