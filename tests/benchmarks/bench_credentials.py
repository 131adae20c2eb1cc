"""The credential filter's speed (memoryhub/credentials.py), which every write runs on its
content: adversarial inputs built to make a backtracking pattern slow, and ordinary notes.

    make bench-credentials
    make bench-credentials BENCH_ARGS="--repeat 10"

tests/domain/test_credentials.py checks the patterns' shapes (no catastrophic backtracking);
this prints the time: the best of ``--repeat`` scans of each input, and its MB/s.
"""

from __future__ import annotations

import argparse
import time

from memoryhub.credentials import DETECTORS, find_credential

NOTE = ("Alice prefers metric units; her sister's birthday is 1990-04-12. The risk-assessment "
        "checklist lives at https://intranet.example.com:8080/wiki?page=a@b, ask bob@example.com. "
        "Keys look like sk-... or mh_abcd1234_..., never paste them.\n")
INPUTS = {
    # Runs of a detector's prefix: each one a candidate start.
    "eyJ x 200k": "eyJ" * 200_000,
    "sk- x 200k": "sk-" * 200_000,
    "xoxb-1 x 100k": "xoxb-1" * 100_000,
    "AIza x 150k": "AIza" * 150_000,
    # A scheme and a user that never reach their @, or never end.
    "a:// + 600k b": "a://" + "b" * 600_000,
    "x://u: x 100k": "x://u:" * 100_000,
    "-----BEGIN A x 100k": "-----BEGIN " + "A " * 100_000,
    # Password fields whose values never end well (a call after each one).
    "password=abc( x 50k": "password=abc(" * 50_000,
    "xapp-1 x 100k": "xapp-1" * 100_000,
    # Long tokens: the body quantifiers run to the end each time.
    "50 A + space x 12k": ("A" * 50 + " ") * 12_000,
    "ordinary note, 16 KiB": (NOTE * (16_384 // len(NOTE) + 1))[:16_384],
    "ordinary note, 1 MiB": (NOTE * (1_048_576 // len(NOTE) + 1))[:1_048_576],
}


def best_of(text: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        find_credential(text)
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    loop = time.perf_counter()
    total = 0
    for i in range(2_000_000):
        total += i
    print(f"machine: 2M-step Python loop {(time.perf_counter() - loop) * 1000:.0f} ms")
    print(f"{len(DETECTORS)} detectors, best of {options.repeat} scans per input")
    slowest = 0.0
    for name, text in INPUTS.items():
        seconds = best_of(text, options.repeat)
        slowest = max(slowest, seconds)
        megabytes = len(text.encode()) / 1_000_000
        print(f"  {name:<24} {megabytes:6.2f} MB {seconds * 1000:9.1f} ms "
              f"{megabytes / seconds:8.1f} MB/s")
    print(f"slowest: {slowest * 1000:.1f} ms (a 1 MiB document is the largest body the API reads)")


if __name__ == "__main__":
    main()
