"""Weights a checkpoint did not hold: a model whose checkpoint lacks some of its weights gets them initialised at
random by transformers, with a warning and nothing else, and its vectors are then partly random. Label-free signals
read random models as agreeing with each other (docs/validity.md, "Known limits"), so such a model could be ranked
first; it fails to load instead (:func:`check_checkpoint_weights`)."""

from __future__ import annotations

from typing import Any

from embedselect.errors import ModelLoadError

LOADED_FLAG = "_is_hf_initialized"
"""The attribute transformers (5.x) sets to True on every parameter it filled from the checkpoint or tied to one; a
parameter it initialised because the checkpoint lacked it is left without it."""
UNUSED_HEADS = ("pooler.",)
"""Parameter name prefixes (inside a ``PreTrainedModel``) of heads the backends do not read unless asked
(``pooling='pooler'`` of the transformers backend): many sentence-transformers checkpoints leave the pooler out."""
SHOWN = 3
"""How many of the missing parameters' names the error shows."""


def missing_weights(model: Any, *, used_heads: tuple[str, ...] = ()) -> list[str]:
    """The names of the parameters of every transformers ``PreTrainedModel`` inside ``model`` (a torch module: a
    ``PreTrainedModel`` itself, or a ``SentenceTransformer`` holding one) that were initialised at random because
    the checkpoint lacked them, read from :data:`LOADED_FLAG`; heads in :data:`UNUSED_HEADS` are left out unless
    named in ``used_heads``. Empty when no parameter of a ``PreTrainedModel`` carries the flag (a model not loaded by
    ``from_pretrained``, or a transformers that no longer sets it): the check then finds nothing rather than
    everything."""
    from transformers import PreTrainedModel

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


def check_checkpoint_weights(model: Any, ref: str, *, used_heads: tuple[str, ...] = ()) -> None:
    """Raise :class:`~embedselect.errors.ModelLoadError` when :func:`missing_weights` finds any: the message names
    the model (``ref``), how many parameters were not in its checkpoint and the first few of them."""
    missing = missing_weights(model, used_heads=used_heads)
    if not missing:
        return
    shown = ", ".join(missing[:SHOWN]) + (f", and {len(missing) - SHOWN} more" if len(missing) > SHOWN else "")
    raise ModelLoadError(
        f"{ref}: {len(missing)} weight tensor(s) of the model are not in its checkpoint, and transformers filled them "
        f"with random values ({shown}); its vectors would be partly random, and random models can agree with each "
        f"other well enough to be ranked first. Check that the checkpoint belongs to the model's config.json "
        f"(model_type, architecture, parameter names), or re-save the model with its weights.")
