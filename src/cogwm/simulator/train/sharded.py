"""The LoRA and its optimizer state whole, whether or not accelerate shards the model (FSDP).

Under an FSDP launch every process holds only its shard of each parameter, so the adapter and
the checkpoints are written from the gathered (full) state: every process takes part in the
gather, the main process writes. A checkpoint has the same format under FSDP as without it (the
LoRA tensors by name, the optimizer state numbered as torch numbers it), so a run may resume
with or without sharding, on any number of processes. Without FSDP the functions here read the
model and the optimizer as they are.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cogwm.simulator.train.model import load_trainable_state, trainable_state

if TYPE_CHECKING:
    import torch

#: The name of the LoRA model inside the loss module accelerate prepares
#: (:func:`cogwm.simulator.train.model.target_loss_module`).
INNER = "inner."


def is_fsdp(accelerator: Any) -> bool:
    """Whether accelerate shards the model with FSDP in this launch."""
    return str(accelerator.distributed_type.value).upper() == "FSDP"


def use_lora_wrap_policy(accelerator: Any, peft_model: Any) -> None:
    """Under FSDP, shard each decoder layer as one unit and each LoRA layer as its own.

    FSDP flattens the parameters of a unit into one tensor of one dtype: a LoRA layer (fp32)
    inside a decoder layer of a bf16 or fp16 base would not flatten. peft's policy wraps the
    decoder layer classes the model names (``_no_split_modules``) and every leaf module whose
    weight trains. It replaces the launch's policy before ``accelerator.prepare``.
    """
    if not is_fsdp(accelerator):
        return
    from peft.utils.other import fsdp_auto_wrap_policy

    policy = fsdp_auto_wrap_policy(peft_model)  # type: ignore[no-untyped-call]
    accelerator.state.fsdp_plugin.auto_wrap_policy = policy


def gathered_lora(
    accelerator: Any, module: Any, names: list[str]
) -> dict[str, torch.Tensor] | None:
    """The full LoRA tensors by name on the main process (None on the others).

    Every process must call it: under FSDP the shards are gathered to the main process (as
    accelerate's ``get_state_dict`` gathers them, there to its CPU memory).
    """
    if is_fsdp(accelerator):
        _, context = _full_state_context(module, rank0_only=True)
        with context:
            state = module.state_dict()
    else:
        state = accelerator.get_state_dict(module)
    if not accelerator.is_main_process:
        return None
    missing = [name for name in names if INNER + name not in state]
    if missing:
        raise ValueError(f"the gathered state has no {missing[0]}")
    return {name: state[INNER + name].detach().cpu().clone() for name in names}


def adapter_writer(accelerator: Any, peft_model: Any) -> Any:
    """The peft model whose ``save_pretrained(out, state_dict=...)`` writes the adapter.

    Under FSDP the model's decoder layers sit inside FSDP's wrappers, so peft would look for
    the LoRA under wrapped names the gathered tensors do not have and write an empty adapter;
    the same LoRA on an empty (meta-device) copy of the base has the plain names, and takes
    no memory.
    """
    if not is_fsdp(accelerator):
        return peft_model
    import copy

    from accelerate import init_empty_weights
    from peft import get_peft_model
    from transformers import AutoModelForCausalLM

    base = peft_model.get_base_model()
    with init_empty_weights():
        empty = AutoModelForCausalLM.from_config(base.config)  # type: ignore[no-untyped-call]
    config = copy.deepcopy(peft_model.peft_config["default"])
    writer = get_peft_model(empty, config)
    writer.peft_config["default"].base_model_name_or_path = peft_model.peft_config[
        "default"
    ].base_model_name_or_path
    return writer


def lora_state(
    accelerator: Any, module: Any, peft_model: Any, names: list[str]
) -> dict[str, torch.Tensor] | None:
    """The LoRA tensors for a checkpoint (main process; None on the others under FSDP)."""
    if is_fsdp(accelerator):
        return gathered_lora(accelerator, module, names)
    return trainable_state(peft_model)


def optimizer_state(accelerator: Any, module: Any, optimizer: Any) -> dict[str, Any] | None:
    """The optimizer state for a checkpoint, numbered as torch numbers it without sharding.

    Under FSDP every process must call it: the shards' moments are gathered by parameter name
    to the main process (None on the others), then numbered in the optimizer's order.
    """
    if not is_fsdp(accelerator):
        return dict(optimizer.state_dict())
    FSDP, context = _full_state_context(module, rank0_only=True)
    with context:
        by_name = FSDP.optim_state_dict(module, _torch_optimizer(optimizer))
    if not accelerator.is_main_process:
        return None
    return _numbered(by_name)


def load_lora(
    accelerator: Any, module: Any, peft_model: Any, lora: dict[str, Any], names: list[str]
) -> None:
    """Put a checkpoint's LoRA tensors back; under FSDP every process loads the full tensors
    and keeps its shard.

    Raises:
        ValueError: The checkpoint's LoRA names are not the model's.
    """
    if not is_fsdp(accelerator):
        load_trainable_state(peft_model, lora)
        return
    if set(names) != set(lora):
        raise ValueError("checkpoint and model have different trainable parameters")
    _, context = _full_state_context(module, rank0_only=False)
    with context:
        result = module.load_state_dict({INNER + k: v for k, v in lora.items()}, strict=False)
    if result.unexpected_keys:
        raise ValueError(f"checkpoint tensor {result.unexpected_keys[0]} is not in the model")


def load_optimizer(
    accelerator: Any, module: Any, optimizer: Any, state: dict[str, Any], names: list[str]
) -> None:
    """Put a checkpoint's optimizer state back; under FSDP each process keeps its shard of it."""
    if not is_fsdp(accelerator):
        optimizer.load_state_dict(state)
        return
    FSDP, context = _full_state_context(module, rank0_only=False)
    by_name = _named(state, [INNER + name for name in names])
    with context:
        sharded = FSDP.optim_state_dict_to_load(module, _torch_optimizer(optimizer), by_name)
    optimizer.load_state_dict(sharded)


def _full_state_context(module: Any, *, rank0_only: bool) -> tuple[Any, Any]:
    """FSDP's class and the context in which its state dicts are whole, moved to the CPU from
    an accelerator (on CPU processes FSDP's offloading would free what it returns)."""
    from torch.distributed.fsdp import (
        FullOptimStateDictConfig,
        FullStateDictConfig,
        StateDictType,
    )
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

    offload = next(module.parameters()).device.type != "cpu"
    context = FSDP.state_dict_type(
        module,
        StateDictType.FULL_STATE_DICT,
        FullStateDictConfig(offload_to_cpu=offload, rank0_only=rank0_only),
        FullOptimStateDictConfig(offload_to_cpu=offload, rank0_only=rank0_only),
    )
    return FSDP, context


def _torch_optimizer(optimizer: Any) -> Any:
    """The torch optimizer inside accelerate's wrapper."""
    return getattr(optimizer, "optimizer", optimizer)


def _numbered(by_name: dict[str, Any]) -> dict[str, Any]:
    """An optimizer state keyed by parameter name, keyed as torch's ``state_dict`` keys it:
    parameters numbered in the order of the groups."""
    number: dict[str, int] = {}
    groups = []
    for group in by_name["param_groups"]:
        params = []
        for name in group["params"]:
            number[name] = len(number)
            params.append(number[name])
        groups.append({**group, "params": params})
    state = {number[name]: values for name, values in by_name["state"].items()}
    return {"state": state, "param_groups": groups}


def _named(numbered: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """The inverse of :func:`_numbered` for an optimizer over ``names`` in that order."""
    groups = [
        {**group, "params": [names[i] for i in group["params"]]}
        for group in numbered["param_groups"]
    ]
    state = {names[int(i)]: values for i, values in numbered["state"].items()}
    return {"state": state, "param_groups": groups}
