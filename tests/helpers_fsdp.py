"""`cogwm train` under FSDP on CPU processes (gloo), for tests.

Run by ``accelerate launch --config_file examples/accelerate/fsdp.yaml --num_processes 2
tests/helpers_fsdp.py ...``: the launcher sets every FSDP option of the file in the processes'
environment as it does on GPUs, and accelerate builds its FSDP plugin from it. accelerate only
selects FSDP on accelerators (on CPUs it falls back to plain data parallel), so this script
selects it after the ``Accelerator`` is made; FSDP itself (torch's, with gloo) then shards and
gathers the model exactly as on GPUs. Two things differ: accelerate refuses the file's
``sync_module_states`` on CPUs, and it is not needed here (every process loads the same base and
seeds the same LoRA); and accelerate names the CPU ``cpu:0`` where FSDP expects ``cpu``. Without
``--fsdp`` the same launch trains data parallel. Run ``cogwm train`` with ``--cpu``.

Arguments: ``--fsdp``, ``--die-after-checkpoint`` (every process exits with 3 once the first
checkpoint is written), then ``train`` and ``cogwm train``'s options.
"""

from __future__ import annotations

import sys
from typing import Any


def _select_fsdp() -> None:
    """Make every ``Accelerator`` the launch creates an FSDP one, with the launch's plugin."""
    import os

    import accelerate
    import torch
    from accelerate import PartialState
    from accelerate.utils import DistributedType, FullyShardedDataParallelPlugin

    os.environ["FSDP_SYNC_MODULE_STATES"] = "false"

    class CpuFsdpAccelerator(accelerate.Accelerator):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.state.fsdp_plugin = FullyShardedDataParallelPlugin()  # from the environment
            # Every AcceleratorState() copies the process state anew: set it in both.
            for state in (self.state, PartialState()):
                state.distributed_type = DistributedType.FSDP
                state.device = torch.device("cpu")

    accelerate.Accelerator = CpuFsdpAccelerator  # type: ignore[misc]


def _die_after_checkpoint() -> None:
    """Stand for a kill right after the first checkpoint is written."""
    from cogwm.simulator.train import loop

    real = loop._checkpoint

    def checkpoint_then_die(*args: Any, **kwargs: Any) -> None:
        real(*args, **kwargs)
        args[0].accelerator.wait_for_everyone()
        raise SystemExit(3)

    loop._checkpoint = checkpoint_then_die


def main(argv: list[str]) -> None:
    """Train as ``cogwm train`` would, under the options above."""
    if "--fsdp" in argv:
        argv.remove("--fsdp")
        _select_fsdp()
    if "--die-after-checkpoint" in argv:
        argv.remove("--die-after-checkpoint")
        _die_after_checkpoint()
    from cogwm.cli.main import main as cogwm_main

    sys.argv = ["cogwm", *argv]
    cogwm_main()


if __name__ == "__main__":
    main(sys.argv[1:])
