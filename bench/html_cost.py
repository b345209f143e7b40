"""Cost of HTML → text on hostile HTML: html2text as imap-mcp used it (baseline) against `html_to_text`.

Since issue #29 `html_to_text` is the Lexbor conversion (`selectolax`) and html2text is no dependency
any more: install it for this comparison (`.venv/bin/pip install html2text`).

Each shape is converted at two sizes, so the growth shows: doubling the input doubles a linear
cost and quadruples a quadratic one. Time is wall-clock (one run each, the baseline first),
memory the peak of Python allocations (tracemalloc, in a second run), output the converted characters.

    .venv/bin/python bench/html_cost.py [--size 10000]
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from collections.abc import Callable

import html2text

from imap_mcp.server.reading.html_text import html_to_text

SHAPES: dict[str, Callable[[int], str]] = {
    "nested <ul><li>": lambda size: "<ul><li>item " * (size // 13),
    "nested <blockquote> + text": lambda size: "<blockquote>quoted " * (size // 19),
    "unfinished <a": lambda size: "<a" * (size // 2),
    "unfinished <!--": lambda size: "<!--" * (size // 4),
    "bare &": lambda size: "&" * size,
    "newsletter": lambda size: (
        "<p>Weekly <b>deals</b>: <a href='https://shop.example/x'>rakes</a> 50% off</p>\n" * (size // 76)
    ),
}


def baseline(html: str) -> str:
    """html2text configured as `server/reading/reader.py` did before the bounded conversion."""
    converter = html2text.HTML2Text()
    converter.body_width = 0
    converter.ignore_images = True
    text: str = converter.handle(html)
    return text.strip() + "\n"


def measure(convert: Callable[[str], str], html: str) -> tuple[float, float, int]:
    """(seconds, peak MiB, output characters) of `convert`: timed once, then run again under tracemalloc."""
    started = time.perf_counter()
    out = convert(html)
    seconds = time.perf_counter() - started
    tracemalloc.start()
    convert(html)
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return seconds, peak, len(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000, help="input characters of the smaller size")
    size = parser.parse_args().size
    print("| shape | input chars | baseline s | bounded s | baseline MiB | bounded MiB | baseline out | bounded out |")
    print("|---|---|---|---|---|---|---|---|")
    for name, make in SHAPES.items():
        for chars in (size, 2 * size):
            html = make(chars)
            old, new = measure(baseline, html), measure(html_to_text, html)
            print(
                f"| {name} | {len(html):,} | {old[0]:.2f} | {new[0]:.2f} | {old[1]:.1f} | {new[1]:.1f} "
                f"| {old[2]:,} | {new[2]:,} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
