"""`python -m modelport.serving`: one serving process of `serve --workers N`, started by `modelport.supervisor`.

It loads the settings itself, from the environment the CLI left (with what its options overrode: the
interface, the bound ports, `--no-workers`), and serves both hosts on the listening sockets it inherited,
whose descriptors are on its command line.
"""

from __future__ import annotations

import argparse
import socket

from modelport import launch, server
from modelport.settings import load_settings


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m modelport.serving")
    parser.add_argument("--media-fd", type=int, required=True)
    parser.add_argument("--text-fd", type=int, required=True)
    args = parser.parse_args(argv)
    settings = load_settings()
    media_sock = socket.socket(fileno=args.media_fd)
    text_sock = socket.socket(fileno=args.text_fd)
    for sock in (media_sock, text_sock):
        sock.set_inheritable(False)  # not passed on to what this process starts (media task children)
    launch.raise_open_file_limit()
    server.serving_main(settings, media_sock, text_sock)


if __name__ == "__main__":
    main()
