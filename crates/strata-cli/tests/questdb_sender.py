"""Sends rows to a running `strata serve` with QuestDB's own Python client
(the `questdb` package on PyPI), over ILP/HTTP as its users do: the sender
posts line protocol to /write and names no database, so the rows go to
Strata's default database. Run by questdb_sender.rs as
`python3 questdb_sender.py PORT ROWS`; exits non-zero if the sender fails."""

import sys

try:
    from questdb import Sender, TimestampNanos  # questdb >= 6
except ImportError:
    from questdb.ingress import Sender, TimestampNanos

BASE_NS = 1_700_000_000_000_000_000


def main():
    port, rows = int(sys.argv[1]), int(sys.argv[2])
    with Sender.from_conf(f"http::addr=127.0.0.1:{port};") as sender:
        for i in range(rows):
            sender.row(
                "trades",
                symbols={"symbol": "ETH-USD" if i % 2 == 0 else "BTC-USD", "side": "sell"},
                columns={"price": 2615.5 + i, "n": i, "ok": i % 3 == 0, "note": f"row {i}"},
                at=TimestampNanos(BASE_NS + i * 1_000_000_000),
            )
        sender.flush()


if __name__ == "__main__":
    main()
