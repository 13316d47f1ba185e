#!/usr/bin/env python3
"""kvblob-engine --metrics-listen with an address it cannot bind: a clear
error naming the address, exit 2, before any work starts (no banner, no
driver opened).

    engine_port_taken.py KVBLOB_ENGINE CONFIG.toml
"""
import socket
import subprocess
import sys


def run(engine, config, listen):
    return subprocess.run([engine, "--config", config, "--metrics-listen", listen], capture_output=True, text=True,
                          timeout=120)


def main():
    engine, config = sys.argv[1], sys.argv[2]
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        cases = [
            (f"127.0.0.1:{port}", f"127.0.0.1:{port}: Address already in use"),
            ("127.0.0.1:70000", "the port must be a number from 0 to 65535"),
            ("9464", "is not HOST:PORT"),
            ("::1:9464", "write an IPv6 address in brackets"),
            ("no-such-host.invalid:9464", "cannot be resolved"),
            ("192.0.2.1:9464", "192.0.2.1:9464: Cannot assign requested address"),
        ]
        for listen, said in cases:
            r = run(engine, config, listen)
            if r.returncode != 2 or said not in r.stderr or "--metrics-listen" not in r.stderr or r.stdout:
                print(f"FAIL: --metrics-listen {listen}: exit {r.returncode}, stdout {r.stdout!r}, stderr {r.stderr!r}"
                      f" (wanted exit 2 and {said!r}, nothing on stdout)")
                return 1
            print(f"--metrics-listen {listen}: exit 2: {r.stderr.strip()}")
    print("PASS: every address that cannot be served is refused before any work, exit 2")
    return 0


if __name__ == "__main__":
    sys.exit(main())
