"""`python -m modelport.process.serving`: one serving process of `serve --workers N`, started by the supervisor
(`modelport.process.supervisor`).

It loads the settings itself, from the environment the CLI left (with what its options overrode: the
interface, the bound ports, `--no-workers`), and serves both hosts on the listening sockets it inherited,
whose descriptors are on its command line.
"""

from __future__ import annotations

import argparse

from modelport.process import server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m modelport.process.serving")
    parser.add_argument("--media-fd", type=int, required=True)
    parser.add_argument("--text-fd", type=int, required=True)
    args = parser.parse_args(argv)
    server.serve_inherited(args.media_fd, args.text_fd)


if __name__ == "__main__":
    main()
