"""``cogwm serve``: the local web app (browse runs, watch a run live, play the agent)."""

from __future__ import annotations

import errno
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cogwm.cli.common import DataDirOption, err_console, preflight_models
from cogwm.limits import MAX_ROUNDS

if TYPE_CHECKING:
    from cogwm.arena.scenarios import Scenario

StoresOption = Annotated[
    list[Path] | None,
    typer.Option("--db", help="Run store to show (repeat for several); nothing else is."),
]
PlayModelOption = Annotated[
    list[str] | None,
    typer.Option("--model", help="Simulator model the play page may use (repeatable)."),
]
PlayDbOption = Annotated[
    Path, typer.Option("--play-db", help="Run store the played dialogues are saved to.")
]
HostOption = Annotated[str, typer.Option(help="Address to bind (loopback unless told).")]
PortOption = Annotated[int, typer.Option(min=1, max=65535, help="Port.")]
PlayRoundsOption = Annotated[
    int, typer.Option(min=3, max=MAX_ROUNDS, help="Rounds of a played dialogue.")
]


def serve(
    db: StoresOption = None,
    model: PlayModelOption = None,
    play_db: PlayDbOption = Path("cogwm-play.sqlite"),
    host: HostOption = "127.0.0.1",
    port: PortOption = 8765,
    max_rounds: PlayRoundsOption = 20,
    data_dir: DataDirOption = None,
) -> None:
    """Serve the runs given with --db and the play page on http://HOST:PORT/."""
    import uvicorn

    from cogwm.web.server import LOOPBACK, ServerConfig, create_app

    models = list(model or ["llamacpp:smollm2"])
    # Before anything is created or served: a model that cannot be found is one line now, not
    # an error on the play page.
    preflight_models(
        [("--model", address) for address in models], network=False, base_url_option=False
    )
    stores = _checked_stores(list(db or []), play_db)
    config = ServerConfig(
        stores=[*stores, play_db],
        models=models,
        play_store=play_db,
        host=host,
        port=port,
        scenarios=_play_scenarios(data_dir),
        max_rounds=max_rounds,
    )
    listening = listen(host, port)  # before the URL: a busy port must not look served
    if host not in LOOPBACK:
        err_console.print(f"[yellow]serving on {host}: anyone who can reach it can play[/yellow]")
    err_console.print(f"cogwm serve: http://{host}:{port}/ (Ctrl-C stops)")
    server = uvicorn.Server(
        uvicorn.Config(create_app(config), host=host, port=port, log_level="warning")
    )
    with listening:
        server.run(sockets=[listening])


def _checked_stores(stores: list[Path], play_db: Path) -> list[Path]:
    """The run stores to show, each an existing arena store; the play store made if absent.

    Checked before serving, not at the first page: another tool's file is refused untouched.
    """
    from cogwm.errors import InputError
    from cogwm.store.ownership import StoreKind, check_store

    for path in stores:
        if not path.is_file():
            raise InputError(f"run store {path} does not exist")
        check_store(path, StoreKind.ARENA, create=False)
    check_store(play_db, StoreKind.ARENA, create=True)
    return stores


def _play_scenarios(data_dir: Path | None) -> dict[str, list[Scenario]]:
    """The play page's corpus scenarios per task (none without --data-dir)."""
    from cogwm.arena.scenarios import corpus_scenarios
    from cogwm.cli.common import resolve_data_dir
    from cogwm.tasks import get
    from cogwm.web.server import PLAY_TASKS

    if data_dir is None:
        return {}
    folder = resolve_data_dir(data_dir)
    return {t: corpus_scenarios(get(t), folder) for t in PLAY_TASKS}


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port``, as uvicorn binds one (``SO_REUSEADDR``, IPv6 for an
    address with ':'); bound here so that a port in use is one error line, not uvicorn's log.

    Raises:
        InputError: The port is in use, or the address cannot be bound.
    """
    from cogwm.errors import InputError

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise InputError(
                f"port {port} is in use on {host} (another program is listening there); "
                "stop it or choose another --port"
            ) from None
        reason = (exc.strerror or str(exc)).lower()
        raise InputError(f"cannot listen on {host}:{port}: {reason}") from None
    sock.set_inheritable(True)
    return sock
