"""Random-initialised copies of all-MiniLM-L6-v2 and all-mpnet-base-v2 from their real configs and tokenizers
(carried without weights, which do not fit a transfer): same layers, widths and token counts, so the same cost per
text; what they rank means nothing. Their normalisation layers are moved off their initial values
(as testkit.tinymodels.as_trained does; this script runs alone on the device machine), or the tool would
refuse them as untrained checkpoints.

    python mkmodels.py OUT      # reads .devcarry/models/{minilm,mpnet}, writes OUT/{minilm,mpnet}
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import torch

try:  # this project's CPU machines need it before transformers imports torchvision; the GPU image does not
    from embedselect._util.compat import ensure_torchvision_importable

    ensure_torchvision_importable()
except ImportError:
    pass
from transformers import AutoConfig, AutoModel  # noqa: E402


def as_trained(model: torch.nn.Module) -> torch.nn.Module:
    """Every normalisation layer's weight 1 + 0.1·N(0, 1) and bias 0.1·N(0, 1), seeded; in place."""
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for module in model.modules():
            if "Norm" in type(module).__name__ and getattr(module, "weight", None) is not None:
                module.weight.copy_(1 + 0.1 * torch.randn(module.weight.shape, generator=gen))
                if getattr(module, "bias", None) is not None:
                    module.bias.copy_(0.1 * torch.randn(module.bias.shape, generator=gen))
    return model


def main(out: Path) -> None:
    for name in ("minilm", "mpnet"):
        dst = out / name
        if (dst / "model.safetensors").exists():
            continue
        shutil.copytree(Path(".devcarry/models") / name, dst, dirs_exist_ok=True)
        (dst / "2_Normalize").mkdir(exist_ok=True)
        torch.manual_seed(0)
        model = as_trained(AutoModel.from_config(AutoConfig.from_pretrained(dst)))
        model.save_pretrained(dst)
        print(name, sum(p.numel() for p in model.parameters()), "parameters ->", dst)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
