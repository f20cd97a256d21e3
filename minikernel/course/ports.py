"""Finding a free TCP port on 127.0.0.1 (JupyterLab's and visdom's launchers). Standard library only."""
from __future__ import annotations

import argparse
import socket


def tcp_port(text: str) -> int:
    """argparse type of a ``--port`` option: a TCP port number, 1 to 65535."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number; use 1 to 65535") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port number; use 1 to 65535")
    return port


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a server could listen on ``host:port`` now (same socket options as tornado)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def find_free_port(start: int, tries: int = 100, host: str = "127.0.0.1") -> int:
    """The first free port in ``start, start+1, ...``; OSError when all ``tries`` are taken."""
    for port in range(start, start + tries):
        if port_is_free(port, host):
            return port
    raise OSError(f"no free port in {start}..{start + tries - 1} on {host}")
