"""The command line's shared options (cogwm.cli.options) mean and read the same everywhere."""

from __future__ import annotations

import inspect
from typing import Any

import typer

from cogwm.cli import options

# Options that share a name with a shared one but mean something else here, and why.
OWN_MEANING = {
    # The config's data_dir, overridden; no $COGWM_DATA_DIR fallback.
    ("arena run", "--data-dir"),
    # validate samples N items per item set (seeded) and counts the checks otherwise.
    ("validate", "--limit"),
}


def _shared_helps() -> dict[str, str]:
    """Each shared option's first name and its one help text."""
    helps = {}
    for name, alias in vars(options).items():
        if name.endswith("Option"):
            info = alias.__metadata__[0]
            helps[str(info.default).split("/")[0]] = info.help
    return helps


def _commands() -> dict[str, Any]:
    from cogwm.cli.main import _register, app

    _register()
    found: dict[str, Any] = {}

    def walk(command: Any, path: tuple[str, ...]) -> None:
        subcommands = getattr(command, "commands", None)
        if path and (not subcommands or command.params):
            found[" ".join(path)] = command
        for name, sub in (subcommands or {}).items():
            walk(sub, (*path, name))

    walk(typer.main.get_command(app), ())
    return found


def test_every_command_declares_a_shared_option_with_its_one_help() -> None:
    # Catches: a command declaring --seed, --json, --limit, ... again with help of its own
    # (the copies drift apart), instead of naming the alias from cogwm.cli.options.
    shared = _shared_helps()
    assert {"--json", "--seed", "--limit", "--resume", "--concurrency"} <= set(shared)
    drifted = [
        (path, opt, param.help)
        for path, command in _commands().items()
        for param in command.params
        for opt in param.opts
        if opt in shared and param.help != shared[opt] and (path, opt) not in OWN_MEANING
    ]
    assert drifted == []
    used = {opt for c in _commands().values() for p in c.params for opt in p.opts}
    assert set(shared) <= used  # no alias is left unused


def test_every_train_option_named_as_a_config_field_reaches_the_config() -> None:
    # `cogwm train` builds its TrainConfig from its options by field name: an option renamed
    # away from its field would silently train with the field's default.
    from cogwm.cli.train import train
    from cogwm.simulator.train.config import TrainConfig

    params = set(inspect.signature(train).parameters)
    without_option = {"weight_decay", "max_grad_norm"}  # config-only settings
    assert set(TrainConfig.model_fields) - params == without_option
