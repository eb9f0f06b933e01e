"""Weights that were never trained. A model whose checkpoint lacks some of its weights gets them initialised at
random by transformers, with a report and nothing else, and its vectors are then partly random: it fails to load
instead. A checkpoint saved before any training (a model built from its config and saved) holds random weights
throughout: it is ranked, as a user may put an untrained network in the pool as a reference on purpose, with a
warning. Label-free signals read random models as agreeing with each other (docs/validity.md, "Known limits"), so
either could be ranked first (:func:`check_checkpoint_weights`)."""

from __future__ import annotations

import logging
from typing import Any, Iterator

from embedselect.errors import ModelLoadError

log = logging.getLogger(__name__)

LOADED_FLAG = "_is_hf_initialized"
"""The attribute transformers (5.x) sets to True on every parameter it filled from the checkpoint or tied to one; a
parameter it initialised because the checkpoint lacked it is left without it."""
UNUSED_HEADS = ("pooler.",)
"""Parameter name prefixes (inside a ``PreTrainedModel``) of heads the backends do not read unless asked
(``pooling='pooler'`` of the transformers backend): many sentence-transformers checkpoints leave the pooler out."""
SHOWN = 3
"""How many of the missing parameters' names the error shows."""
UNTRAINED_SETTING = "untrained_norms"
"""The key, in an embedding run's recorded settings (the cache's ``embedding_runs.settings``), of how many
normalisation layers its model held at their initial values (:func:`untrained_norms`; absent: none, or a run stored
before it was recorded): a run read from the cache knows its model looked untrained without loading it."""


def missing_weights(model: Any, *, used_heads: tuple[str, ...] = ()) -> list[str]:
    """The names of the parameters of every transformers ``PreTrainedModel`` inside ``model`` (a torch module: a
    ``PreTrainedModel`` itself, or a ``SentenceTransformer`` holding one) that were initialised at random because
    the checkpoint lacked them, read from :data:`LOADED_FLAG`; heads in :data:`UNUSED_HEADS` are left out unless
    named in ``used_heads``. Empty when no parameter of a ``PreTrainedModel`` carries the flag (a model not loaded by
    ``from_pretrained``, or a transformers that no longer sets it): the check then finds nothing rather than
    everything; empty too when transformers is not installed (a timm model), as no module can then be one."""
    try:
        from transformers import PreTrainedModel
    except ImportError:
        return []

    ignored = tuple(h for h in UNUSED_HEADS if h not in used_heads)
    missing: list[str] = []
    flagged = False
    seen: set[int] = set()
    for prefix, module in model.named_modules():
        if not isinstance(module, PreTrainedModel) or id(module) in seen:
            continue
        for name, sub in module.named_modules():
            seen.add(id(sub))
        for name, param in module.named_parameters():
            if getattr(param, LOADED_FLAG, False):
                flagged = True
            elif not name.startswith(ignored):
                missing.append(f"{prefix}.{name}" if prefix else name)
    return missing if flagged else []


def norm_layers(model: Any) -> Iterator[tuple[Any, Any]]:
    """``(weight, bias)`` of each normalisation layer of ``model`` (a torch module), ``bias`` None where it has none.
    A normalisation layer is a module whose class name contains ``Norm`` (``LayerNorm``, ``BatchNorm2d``,
    ``GroupNorm``, ``RMSNorm``, a model's own ``T5LayerNorm``) and which owns a non-empty 1-d ``weight`` parameter."""
    for module in model.modules():
        if "Norm" not in type(module).__name__:
            continue
        weight = module._parameters.get("weight")
        if weight is not None and weight.ndim == 1 and weight.numel() > 0:
            yield weight, module._parameters.get("bias")


def untrained_norms(model: Any) -> int:
    """How many normalisation layers (:func:`norm_layers`) ``model`` holds when every one of them still holds what
    initialisation gives it, else 0: initialisation leaves a layer's weight constant (every element equal: ones, or
    zeros where a library zero-initialises a residual branch's last norm) and its bias, if any, zero. Training moves
    them, so a trained model has at least one that differs; a model without such layers (a static embedding table)
    gives 0."""
    count = 0
    for weight, bias in norm_layers(model):
        if bool((weight != weight.reshape(-1)[0]).any()) or (bias is not None and bool(bias.any())):
            return 0
        count += 1
    return count


def untrained_message(ref: str, norms: int) -> str:
    """What is said of a model (``ref``: its folder, or the candidate's name in a ranking's note) whose ``norms``
    normalisation layers all hold their initial values: the load's warning and the ranking's note."""
    return (f"{ref}: every one of its {norms} normalisation layer(s) holds the values initialisation gives it (a "
            "constant weight and a zero bias): the checkpoint looks untrained, and its vectors random. It is ranked "
            "as it is; random models can agree with each other well enough to be ranked first, so check a pick it "
            "leads with a few labels (validate) or answers (ask)")


def check_checkpoint_weights(model: Any, ref: str, *, used_heads: tuple[str, ...] = ()) -> int:
    """Raise :class:`~embedselect.errors.ModelLoadError` when :func:`missing_weights` finds any (the message names
    the model, ``ref``, how many parameters were not in its checkpoint and the first few of them); log a warning when
    :func:`untrained_norms` says every normalisation layer holds its initial values (the checkpoint looks saved
    before training). Returns :func:`untrained_norms` (0: trained), which a backend keeps as its
    ``untrained_norms`` for the run's record (:data:`UNTRAINED_SETTING`)."""
    missing = missing_weights(model, used_heads=used_heads)
    if not missing:
        norms = untrained_norms(model)
        if norms:
            log.warning("%s", untrained_message(ref, norms))
        return norms
    shown = ", ".join(missing[:SHOWN]) + (f", and {len(missing) - SHOWN} more" if len(missing) > SHOWN else "")
    raise ModelLoadError(
        f"{ref}: {len(missing)} weight tensor(s) of the model are not in its checkpoint, and transformers filled them "
        f"with random values ({shown}); its vectors would be partly random, and random models can agree with each "
        f"other well enough to be ranked first. Check that the checkpoint belongs to the model's config.json "
        f"(model_type, architecture, parameter names), or re-save the model with its weights.")
